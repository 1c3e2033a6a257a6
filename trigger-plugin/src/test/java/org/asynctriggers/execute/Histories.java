package org.asynctriggers.execute;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

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
        FlowExecutor executor = new FlowExecutor(shape.spec(), cluster, null, c -> null);
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
     * Runs {@code sweep} seeded histories with timestamps drawn out of order, and fails unless the seeds whose targets
     * differ from the source are exactly those of the resource {@code knownFile} (one seed a line, '#' comments): a
     * change that makes another seed differ is a regression however many it fixes, and one that fixes a seed
     * shortens the list ({@code HISTORIES_PRINT_DIFFERING=1} in the environment prints the seeds that differ).
     */
    static void assertOnlyKnownDiffer(Shape shape, int sweep, String knownFile)
    {
        Set<Long> known = known(knownFile);
        Set<Long> differing = new TreeSet<>();
        String first = null;
        for (long seed = 0; seed < sweep; seed++)
        {
            String differs = run(shape, seed, 2 + (int) (seed % 11), false);
            if (differs.isEmpty())
                continue;
            differing.add(seed);
            if (first == null && !known.contains(seed))
                first = "seed " + seed + ":\n" + differs;
        }
        System.out.printf("%s: %d of %d histories with out-of-order timestamps differ (known: %d)%n", knownFile,
                          differing.size(), sweep, known.size());
        Set<Long> fixed = new TreeSet<>(known);
        fixed.removeAll(differing);
        if (System.getenv("HISTORIES_PRINT_DIFFERING") != null)
            differing.forEach(seed -> System.out.println("DIFFERING " + knownFile + " " + seed));
        assertEquals(null, first, "a history that did not differ does now; the first:\n" + first);
        assertEquals(Set.of(), fixed, "these seeds no longer differ: remove them from " + knownFile);
    }

    private static Set<Long> known(String file)
    {
        try (InputStream in = Histories.class.getResourceAsStream(file))
        {
            if (in == null)
                throw new IllegalStateException("no test resource " + file);
            Set<Long> seeds = new TreeSet<>();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n"))
                if (!line.isBlank() && !line.startsWith("#"))
                    seeds.add(Long.parseLong(line.trim()));
            return seeds;
        }
        catch (IOException e)
        {
            throw new IllegalStateException(e);
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
