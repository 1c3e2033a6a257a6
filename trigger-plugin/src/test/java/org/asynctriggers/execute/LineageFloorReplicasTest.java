package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;

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
import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The floor (docs/design.md, "Lineage") against tasks run late or again on a replica that missed later writes, a
 * lineage column outside the target's key, and images that expired: histories where a first version of cells at
 * their own timestamps gave a derived row the source does not have (found in review).
 */
class LineageFloorReplicasTest
{
    static final String SPEC = "{\"name\": \"by_a\","
        + "\"source\": {\"keyspace\": \"fuzz\", \"table\": \"kv\", \"partition_key\": [\"k\"], \"clustering\": [],"
        + "  \"columns\": {\"k\": \"bigint\", \"a\": \"text\", \"b\": \"text\", \"c\": \"text\"}},"
        + "\"targets\": [{\"keyspace\": \"fuzz\", \"table\": \"kv_by_a\", \"partition_key\": [\"a\"], \"clustering\": [\"k\"],"
        + "  \"columns\": {\"a\": \"source.a\", \"k\": \"source.k\", \"b\": \"source.b\"}, \"mode\": \"lineage\"%s}]}";

    private FlowSpec spec = FlowSpecParser.parse(String.format(SPEC, ""), null, 1);
    private final FakeGateway cluster = KvByA.cluster();
    private final FakeGateway full = KvByA.replica();
    private final FakeGateway stale = KvByA.replica();

    private FlowExecutor on(FakeGateway replica) { return new FlowExecutor(spec, new OnReplica(cluster, replica), null, c -> null, null, () -> cluster.nowSeconds * 1000 + 250); }

    private Task write(Operation op, long ts, Map<String, ByteBuffer> values, Map<String, Long> expirations, FakeGateway... replicas)
    {
        return KvByA.applied(cluster, new Task(spec.name, spec.version, List.of(bigint(1)), op, ts, values, expirations, 0, 0), replicas);
    }

    private Task write(Operation op, long ts, Map<String, ByteBuffer> values, FakeGateway... replicas)
    {
        return write(op, ts, values, Map.of(), replicas);
    }

    private Set<String> byA()
    {
        return KvByA.byA(cluster);
    }

    @Test
    void shouldIndexTheExpiringValueOfTwoWrittenAtOneTimestampAsCassandraKeepsIt()
    {
        long expires = cluster.nowSeconds + 3600;
        // one timestamp, two values: Cassandra keeps the expiring one (Cells.reconcile), whatever the values
        Task lasting = write(Operation.UPDATE, 1000, row("k", 1L, "a", "a9"), full, stale);
        Task expiring = write(Operation.UPDATE, 1000, row("k", 1L, "a", "a1"), Map.of("a", expires), full);
        assertSuccess(runAll(on(full), expiring));
        assertSuccess(runAll(on(stale), lasting)); // a replica that missed a1: its task's image is a9, its entry a1's
        assertEquals(Set.of("a1/1 b=null"), byA(), "the source holds a" + Fixtures.string(cluster.rows("fuzz", "kv").get(0).get("a")).substring(1));
        assertSuccess(runAll(on(stale), lasting)); // and again, after the other order
        assertSuccess(runAll(on(full), expiring));
        assertEquals(Set.of("a1/1 b=null"), byA(), "the source holds a" + Fixtures.string(cluster.rows("fuzz", "kv").get(0).get("a")).substring(1));
    }

    @Test
    void shouldRaiseTheCellsOfATargetWhoseImagesShareARowThroughALineageColumnOutsideItsKey()
    {
        spec = FlowSpecParser.parse(String.format(SPEC, ", \"lineage_columns\": [\"a\", \"c\"]"), null, 1);
        assertSuccess(runAll(on(full), write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "c", "c1", "b", "b1"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 2000, row("k", 1L, "c", "c2"), full)));
        assertEquals(Set.of("a1/1 b=b1"), byA(), "source: (k=1, a=a1, c=c2, b=b1)");
    }

    @Test
    void shouldNotLiftAnOlderValueAboveANewerOneWhenAStaleTaskOfTheSameImageRunsAgain()
    {
        Task w1 = write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "b", "b1"), full, stale);
        assertSuccess(runAll(on(full), w1));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 2000, row("k", 1L, "a", "a2"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 2500, row("k", 1L, "b", "b2"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 3000, row("k", 1L, "a", "a1"), full)));
        assertEquals(Set.of("a1/1 b=b2"), byA());
        assertSuccess(runAll(on(stale), w1)); // W1 run again on a replica that has W1 only (hints on their way)
        assertEquals(Set.of("a1/1 b=b2"), byA(), "source: (k=1, a=a1, b=b2)");
    }

    @Test
    void shouldNotLiftAnOlderValueIntoTheNewerImagesRowWhenAStaleTaskOfAnOlderImageRunsAgain()
    {
        Task w1 = write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "b", "b1"), full, stale);
        assertSuccess(runAll(on(full), w1));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 1800, row("k", 1L, "b", "b2"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 5000, row("k", 1L, "a", "a2"), full)));
        assertEquals(Set.of("a2/1 b=b2"), byA());
        assertSuccess(runAll(on(stale), w1)); // W1 run again on a replica that has W1 only
        assertEquals(Set.of("a2/1 b=b2"), byA(), "source: (k=1, a=a2, b=b2)");
    }

    @Test
    void shouldKeepTheFloorAfterAnExpiringImageIsGone()
    {
        long now = cluster.nowSeconds;
        full.nowSeconds = now;
        assertSuccess(runAll(on(full), write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "b", "b1"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 2000, row("k", 1L, "a", "a2"), Map.of("a", now + 60), full)));
        assertEquals(Set.of("a2/1 b=b1"), byA());
        cluster.nowSeconds = full.nowSeconds = now + 11L * 24 * 3600; // a2 expired long ago; its entry and the floor too
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 3000, row("k", 1L, "a", "a1"), full)));
        assertEquals(Set.of("a1/1 b=b1"), byA(), "source: (k=1, a=a1, b=b1)");
    }

    @Test
    void shouldWriteAboveItsExpiredCopiesWhenAnImageThatExpiredComesBack()
    {
        long now = cluster.nowSeconds;
        full.nowSeconds = now;
        assertSuccess(runAll(on(full), write(Operation.INSERT, 1000, row("k", 1L, "b", "b1"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 2000, row("k", 1L, "a", "a1"), Map.of("a", now + 20), full)));
        assertEquals(Set.of("a1/1 b=b1"), byA());
        cluster.nowSeconds = full.nowSeconds = now + 30; // a1 expired, and b1's copy with it (it lives no longer than its image)
        assertEquals(Set.of(), byA());
        // an expired cell is a tombstone at its own timestamp: b1 written again at 1000 would lose the tie
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 3000, row("k", 1L, "a", "a1"), full)));
        assertEquals(Set.of("a1/1 b=b1"), byA(), "source: (k=1, a=a1, b=b1)");
    }

    @Test
    void shouldWriteAboveItsExpiredCopiesWhenAnImageThatExpiredComesBackAfterAnother()
    {
        long now = cluster.nowSeconds;
        full.nowSeconds = now;
        assertSuccess(runAll(on(full), write(Operation.INSERT, 1000, row("k", 1L, "b", "b1"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 2000, row("k", 1L, "a", "a1"), Map.of("a", now + 20), full)));
        cluster.nowSeconds = full.nowSeconds = now + 30;
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 3000, row("k", 1L, "a", "a2"), full)));
        assertSuccess(runAll(on(full), write(Operation.UPDATE, 4000, row("k", 1L, "a", "a1"), full)));
        assertEquals(Set.of("a1/1 b=b1"), byA(), "source: (k=1, a=a1, b=b1)");
    }
}
