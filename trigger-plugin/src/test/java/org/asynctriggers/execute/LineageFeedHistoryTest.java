package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.LineageFanoutTieTest.FANS;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The fuzzer's {@code fuzz_feed} shape (a lineage fan-out alone in its table: its older images' deletions spare the
 * newest image's rows, and its cells keep their own timestamps above its floor) against random histories of one
 * source row: inserts, updates of n, of a, of both, either set to null, the row deleted, each task run at a random
 * later moment (some twice). n = 0 and n = 1 share a fan; n = 2 fans out to nobody. Once with the fan-out in one page,
 * once two rows a page (n = 1's fan-out is then two pages, whose cells are raised to their image's timestamp).
 */
class LineageFeedHistoryTest
{
    private static final String[] VALUES = { "a0", "a1", "a2", "a3" };

    static Histories.Shape feed(int pageSize)
    {
        FlowSpec spec = FlowSpecParser.parse(LineageFanoutTieTest.feed(pageSize), null, 1);
        return new Histories.Shape()
        {
            public FlowSpec spec() { return spec; }

            public FakeGateway cluster() { return LineageFanoutTieTest.gateway(); }

            public Task draw(Random random, long ts)
            {
                long n = random.nextInt(3);
                String a = VALUES[random.nextInt(VALUES.length)];
                switch (random.nextInt(7))
                {
                    case 0: return task(Operation.INSERT, ts, row("k", 1L, "n", n, "a", a));
                    case 1: return task(Operation.UPDATE, ts, row("k", 1L, "n", n));
                    case 2: return task(Operation.UPDATE, ts, row("k", 1L, "a", a));
                    case 3: return task(Operation.UPDATE, ts, row("k", 1L, "n", n, "a", a));
                    case 4: return task(Operation.UPDATE, ts, row("k", 1L, "a", null));
                    case 5: return task(Operation.UPDATE, ts, row("k", 1L, "n", null));
                    default: return task(Operation.DELETE, ts, row("k", 1L));
                }
            }

            private Task task(Operation op, long ts, Map<String, ByteBuffer> values)
            {
                return WriteShapesTest.change(spec, op, List.of(bigint(1)), ts, values, null);
            }

            public Set<String> expected(FakeGateway cluster)
            {
                Set<String> rows = new TreeSet<>();
                for (Map<String, ByteBuffer> source : cluster.rows("fz", "kv"))
                    if (source.get("n") != null)
                        for (long f : FANS.getOrDefault(longOf(source.get("n")), List.of()))
                            rows.add(f + "/" + longOf(source.get("k")) + ": " + string(source.get("a")));
                return rows;
            }

            public Set<String> actual(FakeGateway cluster)
            {
                Set<String> rows = new TreeSet<>();
                for (Map<String, ByteBuffer> r : cluster.rows("fz", "kv_feed"))
                    rows.add(longOf(r.get("f")) + "/" + longOf(r.get("k")) + ": " + string(r.get("a")));
                return rows;
            }

            public String describe(Task task)
            {
                StringBuilder out = new StringBuilder(task.operation() + "@" + task.timestamp());
                for (String column : List.of("n", "a"))
                    if (task.values().containsKey(column))
                    {
                        ByteBuffer value = task.values().get(column);
                        out.append(' ').append(column).append('=')
                           .append(value == null ? "null" : column.equals("n") ? String.valueOf(longOf(value)) : string(value));
                    }
                return out.toString();
            }

            public String sourceKeyspace() { return "fz"; }

            public String sourceTable() { return "kv"; }
        };
    }

    static final int SWEEP = 20_000;

    @Test
    void shouldDeriveWhatTheSourceSaysInEverySeededHistoryWithOneClock()
    {
        for (Histories.Shape shape : List.of(feed(100), feed(2)))
            for (long seed = 0; seed < SWEEP; seed++)
            {
                String differs = Histories.run(shape, seed, 2 + (int) (seed % 11), true);
                assertEquals("", differs, "seed " + seed + ":\n" + differs);
            }
    }

    @Test
    void shouldDeriveWhatTheSourceSaysInEverySeededHistoryWithOutOfOrderTimestamps()
    {
        Histories.assertNoneDiffer(feed(100), SWEEP);
        Histories.assertNoneDiffer(feed(2), SWEEP);
    }
}
