package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiFunction;

import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecException;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Totals per group (docs/design.md, "Aggregates") of a source fuzz.orders (k, g, amt): members fuzz.orders_members
 * ((g0), k0, v0), totals fuzz.totals ((g), n, s, lo, hi), against random histories of three orders moving between
 * groups, changing amounts, losing them and being deleted, with timestamps out of order and tasks run late and twice;
 * and against members that expire.
 */
class AggregateTotalsTest
{
    static final String SPEC = "{\"name\": \"totals\","
        + "\"source\": {\"keyspace\": \"fuzz\", \"table\": \"orders\", \"partition_key\": [\"k\"], \"clustering\": [],"
        + "  \"columns\": {\"k\": \"bigint\", \"g\": \"text\", \"amt\": \"int\"}},"
        + "\"targets\": [{\"keyspace\": \"fuzz\", \"table\": \"orders_members\", \"partition_key\": [\"g0\"], \"clustering\": [\"k0\"],"
        + "  \"columns\": {\"g0\": \"source.g\", \"k0\": \"source.k\", \"v0\": \"source.amt\"}, \"mode\": \"lineage\","
        + "  \"lineage_columns\": [\"g\"],"
        + "  \"aggregate\": {\"keyspace\": \"fuzz\", \"table\": \"totals\", \"partition_key\": [\"g\"], \"group\": {\"g\": \"g0\"},"
        + "    \"count\": \"n\", \"sum\": {\"s\": \"v0\"}, \"min\": {\"lo\": \"v0\"}, \"max\": {\"hi\": \"v0\"}}}]}";
    private static final FlowSpec FLOW = FlowSpecParser.parse(SPEC, null, 1);
    private static final String[] GROUPS = { "a", "b", "" };

    static final BiFunction<String, String, ColumnTypes> TYPES = (keyspace, table) -> column -> {
        Map<String, AbstractType<?>> types = Map.of("g0", UTF8Type.instance, "k0", LongType.instance, "v0", Int32Type.instance,
                                                    "g", UTF8Type.instance, "n", LongType.instance, "s", LongType.instance,
                                                    "lo", Int32Type.instance, "hi", Int32Type.instance);
        return types.get(column);
    };

    static FakeGateway cluster()
    {
        return new FakeGateway().withAsyncTriggersKeyspace()
                                .table("fuzz", "orders", List.of("k"), List.of())
                                .table("fuzz", "orders_members", List.of("g0"), List.of("k0"))
                                .table("fuzz", "totals", List.of("g"), List.of());
    }

    static final Histories.Shape ORDERS = new Histories.Shape()
    {
        public FlowSpec spec() { return FLOW; }

        public FakeGateway cluster() { return AggregateTotalsTest.cluster(); }

        public Task draw(Random random, long ts)
        {
            long k = 1 + random.nextInt(3);
            switch (random.nextInt(6))
            {
                case 0: return order(Operation.INSERT, ts, k, row("g", pick(random), "amt", i(random.nextInt(5) - 1)));
                case 1: return order(Operation.UPDATE, ts, k, row("g", pick(random)));
                case 2: return order(Operation.UPDATE, ts, k, row("amt", i(random.nextInt(5) - 1)));
                case 3: return order(Operation.UPDATE, ts, k, row("amt", null));
                case 4: return order(Operation.UPDATE, ts, k, row("g", null));
                default: return order(Operation.DELETE, ts, k, Map.of());
            }
        }

        public Set<String> expected(FakeGateway cluster) { return expectedTotals(cluster); }

        public Set<String> actual(FakeGateway cluster) { return totals(cluster); }

        public String describe(Task task)
        {
            StringBuilder out = new StringBuilder(task.operation() + "@" + task.timestamp() + " k=" + longOf(task.key().get(0)));
            for (String column : List.of("g", "amt"))
                if (task.values().containsKey(column))
                    out.append(' ').append(column).append('=').append(value(column, task.values().get(column)));
            return out.toString();
        }

        public String sourceKeyspace() { return "fuzz"; }

        public String sourceTable() { return "orders"; }

        public BiFunction<String, String, ColumnTypes> tableTypes() { return TYPES; }
    };

    @Test
    void shouldKeepEveryGroupsTotalWhateverTheOrderAndRepetitionOfTheTasks()
    {
        Histories.assertNoneDiffer(ORDERS, LineageHistoryTest.SWEEP);
    }

    @Test
    void shouldRecomputeAGroupWhenAMemberExpires()
    {
        FakeGateway cluster = cluster();
        FlowExecutor executor = new FlowExecutor(FLOW, cluster, null, c -> null, null, () -> cluster.nowSeconds * 1000, TYPES);
        cluster.insert("fuzz", "orders", row("k", 1L, "g", "a", "amt", i(5)), 10);
        cluster.insert("fuzz", "orders", row("k", 2L, "g", "a", "amt", i(7)), 10, 60);
        assertSuccess(runAll(executor, order(Operation.INSERT, 10, 1, row("g", "a", "amt", i(5)))));
        assertSuccess(runAll(executor, order(Operation.INSERT, 10, 2, row("g", "a", "amt", i(7)))));
        assertEquals(Set.of("a n=2 s=12 lo=5 hi=7"), totals(cluster));

        AggregateTimers timers = new AggregateTimers(cluster, () -> List.of(FLOW), (flow, hour) -> true,
                                                     () -> cluster.nowSeconds * 1000, TYPES);
        assertEquals(0, timers.fire(), "nothing is due before the member expires");
        cluster.nowSeconds += 61;
        assertEquals(Set.of("a n=1 s=5 lo=5 hi=5"), expectedTotals(cluster));
        assertEquals(1, timers.fire());
        assertEquals(Set.of("a n=1 s=5 lo=5 hi=5"), totals(cluster));
        assertEquals(0, timers.fire(), "a fired timer is gone");
    }

    @Test
    void shouldDeleteAGroupsRowWhenItsLastMemberLeaves()
    {
        FakeGateway cluster = cluster();
        FlowExecutor executor = new FlowExecutor(FLOW, cluster, null, c -> null, null, System::currentTimeMillis, TYPES);
        Task insert = order(Operation.INSERT, 10, 1, row("g", "a", "amt", i(5)));
        cluster.applied("fuzz", "orders", insert);
        assertSuccess(runAll(executor, insert));
        Task move = order(Operation.UPDATE, 20, 1, row("g", "b"));
        cluster.applied("fuzz", "orders", move);
        assertSuccess(runAll(executor, move));
        assertSuccess(runAll(executor, insert)); // run again, late: counts once
        assertEquals(Set.of("b n=1 s=5 lo=5 hi=5"), totals(cluster));
    }

    @Test
    void shouldRefuseAnAggregateOfATargetThatIsNotTheMembersOfOne()
    {
        FlowSpecException direct = assertThrows(FlowSpecException.class,
                                                () -> FlowSpecParser.parse(SPEC.replace("\"mode\": \"lineage\"", "\"mode\": \"direct\""), null, 1));
        assertTrue(direct.getMessage().contains("needs a target in mode 'lineage'"), direct.getMessage());
        FlowSpecException group = assertThrows(FlowSpecException.class,
                                               () -> FlowSpecParser.parse(SPEC.replace("{\"g\": \"g0\"}", "{\"g\": \"k0\"}"), null, 1));
        assertTrue(group.getMessage().contains("onto the target's partition key"), group.getMessage());
        FlowSpecException nothing = assertThrows(FlowSpecException.class, () -> FlowSpecParser.parse(
            SPEC.replace("\"count\": \"n\", \"sum\": {\"s\": \"v0\"}, \"min\": {\"lo\": \"v0\"}, \"max\": {\"hi\": \"v0\"}", "\"count\": null"), null, 1));
        assertTrue(nothing.getMessage().contains("computes nothing"), nothing.getMessage());
    }

    private static Task order(Operation op, long ts, long k, Map<String, ByteBuffer> values)
    {
        Map<String, ByteBuffer> all = new java.util.LinkedHashMap<>(values);
        all.put("k", bigint(k));
        return Fixtures.task(FLOW, op, ts, List.of(bigint(k)), all);
    }

    private static ByteBuffer i(int value)
    {
        return ByteBuffer.allocate(4).putInt(0, value);
    }

    private static String pick(Random random)
    {
        return GROUPS[random.nextInt(GROUPS.length)];
    }

    private static String value(String column, ByteBuffer value)
    {
        if (value == null)
            return "null";
        return column.equals("g") ? "'" + string(value) + "'" : String.valueOf(value.getInt(value.position()));
    }

    /** What the source says, as "g n=.. s=.. lo=.. hi=..": its rows grouped by a non-empty g. */
    static Set<String> expectedTotals(FakeGateway cluster)
    {
        Map<String, List<Integer>> groups = new TreeMap<>();
        for (Map<String, ByteBuffer> r : cluster.rows("fuzz", "orders"))
        {
            ByteBuffer g = r.get("g");
            if (g == null || !g.hasRemaining())
                continue;
            ByteBuffer amt = r.get("amt");
            groups.computeIfAbsent(string(g), x -> new ArrayList<>()).add(amt == null ? null : amt.getInt(amt.position()));
        }
        Set<String> out = new TreeSet<>();
        groups.forEach((g, amounts) -> {
            List<Integer> present = new ArrayList<>();
            for (Integer a : amounts)
                if (a != null)
                    present.add(a);
            out.add(g + " n=" + amounts.size() + " s=" + (present.isEmpty() ? "null" : present.stream().mapToLong(x -> x).sum())
                    + " lo=" + (present.isEmpty() ? "null" : present.stream().mapToInt(x -> x).min().getAsInt())
                    + " hi=" + (present.isEmpty() ? "null" : present.stream().mapToInt(x -> x).max().getAsInt()));
        });
        return out;
    }

    static Set<String> totals(FakeGateway cluster)
    {
        Set<String> out = new TreeSet<>();
        for (Map<String, ByteBuffer> r : cluster.rows("fuzz", "totals"))
            out.add(string(r.get("g")) + " n=" + (r.get("n") == null ? "null" : longOf(r.get("n")))
                    + " s=" + (r.get("s") == null ? "null" : longOf(r.get("s")))
                    + " lo=" + (r.get("lo") == null ? "null" : r.get("lo").getInt(r.get("lo").position()))
                    + " hi=" + (r.get("hi") == null ? "null" : r.get("hi").getInt(r.get("hi").position())));
        return out;
    }
}
