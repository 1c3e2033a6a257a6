package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.OnReplica;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A lineage target whose source row goes a1 -> a2 -> a1 while one replica misses the middle write: the replica that
 * missed it runs a task of a later update of another column (b at 50000) with the old image (a1 at 7000), and the
 * change back to a1 has that same timestamp (50000). Found by the differential test (its seed 18): the stale task
 * deleted the a1 row at 50000, and the return to a1, at 50000 too, lost the tie to that deletion.
 */
class LineageStaleReplicaTest
{
    static final String SPEC = "{\"name\": \"by_a\","
        + "\"source\": {\"keyspace\": \"fuzz\", \"table\": \"kv\", \"partition_key\": [\"k\"], \"clustering\": [],"
        + "  \"columns\": {\"k\": \"bigint\", \"a\": \"text\", \"b\": \"text\"}},"
        + "\"targets\": [{\"keyspace\": \"fuzz\", \"table\": \"kv_by_a\", \"partition_key\": [\"a\"], \"clustering\": [\"k\"],"
        + "  \"columns\": {\"a\": \"source.a\", \"k\": \"source.k\", \"b\": \"source.b\"}, \"mode\": \"lineage\"}]}";

    private final FlowSpec spec = FlowSpecParser.parse(SPEC, null, 1);
    /** the cluster as quorum reads see it, and the source replica that saw every write (the executor while node2 was down) */
    private final FakeGateway cluster = KvByA.cluster();
    /** node2's replica of the source: it missed the writes made while it was down until their hints land */
    private final FakeGateway node2Source = KvByA.replica();
    private final List<String> log = new ArrayList<>();

    private final FlowExecutor onOther = new FlowExecutor(spec, cluster, null, c -> null);
    private final FlowExecutor onNode2 = new FlowExecutor(spec, new Node2(), null, c -> null);

    /** node2: every statement goes to the cluster, its local source read to its own replica */
    private final class Node2 extends OnReplica
    {
        Node2()
        {
            super(cluster, node2Source);
        }

        @Override
        public List<Map<String, ByteBuffer>> execute(Prepared s, ConsistencyLevel cl, List<ByteBuffer> values)
        {
            if (s.cql.startsWith("DELETE FROM \"fuzz\".\"kv_by_a\""))
                log.add("node2 deletes kv_by_a " + string(values.get(1)) + "/" + longOf(values.get(2)) + " at " + longOf(values.get(0)));
            return super.execute(s, cl, values);
        }
    }

    private Task write(Operation op, long ts, Map<String, ByteBuffer> values, boolean node2Has)
    {
        Task task = Fixtures.task(spec, op, ts, List.of(bigint(1)), values);
        return node2Has ? KvByA.applied(cluster, task, node2Source) : KvByA.applied(cluster, task);
    }

    private Set<String> byA()
    {
        return KvByA.byA(cluster);
    }

    @Test
    void shouldKeepTheRowOfTheImageThatCameBackAtTheTimestampOfAStaleTasksNewerCell()
    {
        Task w4 = write(Operation.UPDATE, 7000, row("k", 1L, "a", "a1"), true);
        assertSuccess(runAll(onNode2, w4));
        // node2 down: #17 and #19 land on the other replica only, which executes them
        Task w17 = write(Operation.UPDATE, 26000, row("k", 1L, "b", null), false);
        assertSuccess(runAll(onOther, w17));
        Task w19 = write(Operation.INSERT, 32000, row("k", 1L, "a", "a2", "b", "b2"), false);
        assertSuccess(runAll(onOther, w19));
        // node2 up again, executor again, before the hints of #17 and #19 reach it
        Task w35 = write(Operation.UPDATE, 50000, row("k", 1L, "b", "b2"), true);
        assertSuccess(runAll(onNode2, w35));
        Task w38 = write(Operation.UPDATE, 50000, row("k", 1L, "a", "a1"), true);
        assertSuccess(runAll(onNode2, w38));
        // the hints land: node2 captures and runs them late
        node2Source.applied("fuzz", "kv", w17);
        assertSuccess(runAll(onNode2, w17));
        node2Source.applied("fuzz", "kv", w19);
        assertSuccess(runAll(onNode2, w19));

        assertEquals(Set.of("a1/1 b=b2"), byA(), String.valueOf(log));
    }
}
