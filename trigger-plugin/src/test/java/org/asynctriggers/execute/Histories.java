package org.asynctriggers.execute;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Random histories of one source row against a lineage flow (the oracle is the source row itself): writes drawn by
 * a {@link Shape}, each applied to the source at once and its task run at a random later moment (some twice),
 * reading what it misses back from the source as it is then.
 */
final class Histories
{
    private Histories()
    {
    }

    /** What a history is made of: the flow, its tables, how a write is drawn, and what source and targets hold. */
    interface Shape
    {
        FlowSpec spec();

        /** the cluster, with the source table and the flow's tables (and any fan-out table filled) */
        FakeGateway cluster();

        /** one client write of the row at {@code ts}, applied to the source by the caller */
        Task draw(Random random, long ts);

        /** the target rows the source row derives, as strings */
        Set<String> expected(FakeGateway cluster);

        /** the target rows there are, as the same strings */
        Set<String> actual(FakeGateway cluster);

        String describe(Task task);

        String sourceKeyspace();

        String sourceTable();

        /** the column types of a table the flow writes (an aggregate's members and its table); none by default */
        default java.util.function.BiFunction<String, String, org.asynctriggers.cql.ColumnTypes> tableTypes()
        {
            return (keyspace, table) -> column -> null;
        }
    }

    /**
     * Runs one seeded history of {@code writes} writes; "" when the targets say what the source says, else the history
     * and both sides. With {@code oneClock} every write is newer than the one before (one client clock per row), else
     * timestamps are drawn from eight values (ties, writes older than ones applied before them).
     */
    static String run(Shape shape, long seed, int writes, boolean oneClock)
    {
        Random random = new Random(seed);
        FakeGateway cluster = shape.cluster();
        FlowExecutor executor = new FlowExecutor(shape.spec(), cluster, null, c -> null, null, System::currentTimeMillis, shape.tableTypes());
        List<Task> pending = new ArrayList<>();
        List<String> history = new ArrayList<>();
        long newest = 0;
        for (int i = 0; i < writes; i++)
        {
            long ts = oneClock ? newest + 1000 : 1000L * (1 + random.nextInt(8));
            newest = Math.max(newest, ts);
            Task task = shape.draw(random, ts);
            cluster.applied(shape.sourceKeyspace(), shape.sourceTable(), task);
            history.add("write #" + i + " " + shape.describe(task));
            pending.add(task);
            while (!pending.isEmpty() && random.nextInt(3) == 0)
                runOne(shape, executor, pending, random, history);
        }
        while (!pending.isEmpty())
            runOne(shape, executor, pending, random, history);
        Set<String> expected = shape.expected(cluster), actual = shape.actual(cluster);
        return expected.equals(actual) ? "" : String.join("\n", history) + "\nsource says " + expected + ", targets hold " + actual;
    }

    /**
     * Runs {@code sweep} seeded histories with timestamps drawn out of order (ties, writes older than ones applied
     * before them) and fails on the first whose targets differ from the source, with its history.
     */
    static void assertNoneDiffer(Shape shape, int sweep)
    {
        for (long seed = 0; seed < sweep; seed++)
        {
            String differs = run(shape, seed, 2 + (int) (seed % 11), false);
            assertEquals("", differs, "seed " + seed + ":\n" + differs);
        }
    }

    /** Runs a pending task (each fan-out page, to its end); one time in five it stays pending, to run again. */
    private static void runOne(Shape shape, FlowExecutor executor, List<Task> pending, Random random, List<String> history)
    {
        int i = random.nextInt(pending.size());
        Task task = random.nextInt(5) == 0 ? pending.get(i) : pending.remove(i);
        history.add("run " + shape.describe(task));
        assertSuccess(runAll(executor, task));
    }
}
