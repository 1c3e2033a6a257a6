package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The fuzzer's {@code fuzz_feed} shape (a lineage fan-out alone in its table, lineage on the fan-out's match column
 * {@code n}) under two writes of one source row with one timestamp, the first one's task run before the second write
 * lands on its replica: it reads the older value of {@code a}, at its older write time. The derived rows must say what
 * the source says, the second write's value, whichever value is the greater (docs/design.md, "Lineage").
 */
class LineageFanoutTieTest
{
    static final String FEED = feed(100);

    /** the flow, its fan-out read {@code pageSize} rows a page */
    static String feed(int pageSize)
    {
        return "{\"name\": \"feed\", \"page_size\": " + pageSize + ","
        + "\"source\": {\"keyspace\": \"fz\", \"table\": \"kv\", \"partition_key\": [\"k\"], \"clustering\": [],"
        + "  \"columns\": {\"k\": \"bigint\", \"a\": \"text\", \"n\": \"bigint\"}},"
        + "\"targets\": [{\"keyspace\": \"fz\", \"table\": \"kv_feed\", \"partition_key\": [\"f\"], \"clustering\": [\"k\"],"
        + "  \"columns\": {\"f\": \"row.f\", \"k\": \"source.k\", \"a\": \"source.a\"},"
        + "  \"fanout\": {\"keyspace\": \"fz\", \"table\": \"fans\", \"match\": {\"n\": \"source.n\"}, \"columns\": [\"f\"]},"
        + "  \"mode\": \"lineage\", \"lineage_columns\": [\"n\"]}]}";
    }

    /** n to its fans: 101 is a fan of both 0 and 1 */
    static final Map<Long, List<Long>> FANS = Map.of(0L, List.of(100L, 101L), 1L, List.of(101L, 102L, 103L));

    private final FlowSpec spec = FlowSpecParser.parse(FEED, null, 1);
    private final FakeGateway gateway = gateway();
    private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

    static FakeGateway gateway()
    {
        FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace()
                                               .table("fz", "kv", List.of("k"), List.of())
                                               .table("fz", "fans", List.of("n"), List.of("f"))
                                               .table("fz", "kv_feed", List.of("f"), List.of("k"));
        FANS.forEach((n, fans) -> fans.forEach(f -> gateway.insert("fz", "fans", row("n", n, "f", f), 1)));
        return gateway;
    }

    private Task write(Operation op, long ts, Object... values)
    {
        Map<String, ByteBuffer> row = row(values);
        row.put("k", bigint(1));
        return WriteShapesTest.change(spec, op, List.of(bigint(1)), ts, row, null);
    }

    /** Applies the write to the source, then runs its task: the task reads the source as it is at that moment. */
    private void applyAndRun(Task task)
    {
        assertSuccess(runAll(executor, gateway.applied("fz", "kv", task)));
    }

    private Set<String> expected()
    {
        Set<String> rows = new TreeSet<>();
        for (Map<String, ByteBuffer> source : gateway.rows("fz", "kv"))
            if (source.get("n") != null)
                for (long f : FANS.getOrDefault(longOf(source.get("n")), List.of()))
                    rows.add(f + "/" + longOf(source.get("k")) + ": " + string(source.get("a")));
        return rows;
    }

    private Set<String> feed()
    {
        Set<String> rows = new TreeSet<>();
        for (Map<String, ByteBuffer> r : gateway.rows("fz", "kv_feed"))
            rows.add(longOf(r.get("f")) + "/" + longOf(r.get("k")) + ": " + string(r.get("a")));
        return rows;
    }

    @Test
    void shouldKeepTheLaterValueWhenARewriteOfTheSameImageRanBeforeItAtOneTimestamp()
    {
        applyAndRun(write(Operation.INSERT, 1000, "n", 0L, "a", "a3"));
        applyAndRun(write(Operation.UPDATE, 50000, "n", 0L));      // the image unchanged; its task reads a3 at 1000
        applyAndRun(write(Operation.UPDATE, 50000, "a", "a1"));    // a1 at 50000 outranks a3 at 1000 in the source
        assertEquals(Set.of("100/1: a1", "101/1: a1"), expected(), "the source");
        assertEquals(expected(), feed());
    }

    @Test
    void shouldKeepTheLaterValueWhenAnImageChangeRanBeforeItAtOneTimestamp()
    {
        applyAndRun(write(Operation.INSERT, 1000, "n", 0L, "a", "a3"));
        applyAndRun(write(Operation.UPDATE, 50000, "n", 1L));      // 101 is a fan of 0 and of 1: its row is shared
        applyAndRun(write(Operation.UPDATE, 50000, "a", "a1"));
        assertEquals(Set.of("101/1: a1", "102/1: a1", "103/1: a1"), expected(), "the source");
        assertEquals(expected(), feed());
    }

    @Test
    void shouldKeepTheLaterValueWhenTheImageChangeRanAfterTheOtherWritesTask()
    {
        applyAndRun(write(Operation.INSERT, 1000, "n", 0L, "a", "a3"));
        Task change = gateway.applied("fz", "kv", write(Operation.UPDATE, 50000, "n", 1L));
        applyAndRun(write(Operation.UPDATE, 50000, "a", "a1"));
        assertSuccess(runAll(executor, change));
        assertEquals(expected(), feed());
    }

    @Test
    void shouldWriteAReturnedImagesOlderCellsAboveTheDeletionOfItsRows()
    {
        applyAndRun(write(Operation.INSERT, 1000, "n", 0L, "a", "a3"));
        applyAndRun(write(Operation.UPDATE, 2000, "n", 1L));       // 100's row deleted at 1999
        applyAndRun(write(Operation.UPDATE, 3000, "n", 0L));       // back: a3 at 1000 must outlive that deletion
        assertEquals(Set.of("100/1: a3", "101/1: a3"), expected(), "the source");
        assertEquals(expected(), feed());
    }

}
