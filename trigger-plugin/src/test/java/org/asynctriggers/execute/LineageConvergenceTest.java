package org.asynctriggers.execute;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Lineage flows converge to what last-write-wins says, whatever the order in which racing tasks of one source row run
 * their statements, and whichever statement fails (its task then runs again, from its last recorded fan-out page).
 * The flow is the Twitter shape with lineage on the author: the author's own timeline row, the followers' rows (a
 * fan-out), and, for three targets, an index of tweets by author. Followers of different authors overlap.
 */
class LineageConvergenceTest
{
    static final long TWEET = 1;
    /** author to followers: 100 and 200 share 12 and 13; 300 shares 13 with both */
    static final Map<Long, List<Long>> FOLLOWERS = Map.of(100L, List.of(11L, 12L, 13L),
                                                          200L, List.of(12L, 13L, 21L, 22L),
                                                          300L, List.of(13L, 31L));

    private static String target(String table, String user, String fanout)
    {
        return "{\"keyspace\": \"tw\", \"table\": \"" + table + "\", \"partition_key\": [\"user_id\"], \"clustering\": [\"tweet_id\"],"
               + " \"columns\": {\"user_id\": \"" + user + "\", \"tweet_id\": \"source.tweet_id\", \"author_id\": \"source.author_id\","
               + " \"body\": \"source.body\"}, \"fanout\": " + fanout + ", \"mode\": \"lineage\", \"lineage_columns\": [\"author_id\"]}";
    }

    static final String FANOUT = "{\"keyspace\": \"tw\", \"table\": \"followers\", \"match\": {\"user_id\": \"source.author_id\"},"
                                 + " \"columns\": [\"follower_id\"]}";

    /** @param targets 2: own row and fan-out; 3: also tweets by author */
    static FlowSpec spec(int targets)
    {
        List<String> all = new ArrayList<>(List.of(target("timeline", "source.author_id", "null"),
                                                   target("timeline", "row.follower_id", FANOUT)));
        if (targets == 3)
            all.add(target("by_author", "source.author_id", "null"));
        String json = "{\"name\": \"tl\", \"source\": {\"keyspace\": \"tw\", \"table\": \"tweets\", \"partition_key\": [\"tweet_id\"],"
                      + " \"clustering\": [], \"columns\": {\"tweet_id\": \"bigint\", \"author_id\": \"bigint\", \"body\": \"text\"}},"
                      + " \"page_size\": 2, \"targets\": [" + String.join(", ", all) + "]}";
        return FlowSpecParser.parse(json, null, 1);
    }

    static FakeGateway gateway()
    {
        FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace()
                                               .table("tw", "tweets", List.of("tweet_id"), List.of())
                                               .table("tw", "timeline", List.of("user_id"), List.of("tweet_id"))
                                               .table("tw", "by_author", List.of("user_id"), List.of("tweet_id"))
                                               .table("tw", "followers", List.of("user_id"), List.of("follower_id"));
        FOLLOWERS.forEach((author, followers) -> followers.forEach(
            f -> gateway.insert("tw", "followers", row("user_id", author, "follower_id", f), 1)));
        return gateway;
    }

    /** One client write of the tweet: by an author, or (author null) a delete. */
    static final class Write
    {
        final long ts;
        final Long author;

        Write(long ts, Long author)
        {
            this.ts = ts;
            this.author = author;
        }

        Task task(FlowSpec spec)
        {
            if (author == null)
                return Fixtures.task(spec, Operation.DELETE, ts, List.of(bigint(TWEET)), row("tweet_id", TWEET));
            return Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(TWEET)),
                                 row("tweet_id", TWEET, "author_id", author, "body", "b" + ts));
        }

        @Override
        public String toString()
        {
            return (author == null ? "delete" : "author " + author) + " @" + ts;
        }
    }

    /** What last-write-wins leaves: the newest write's rows, or none after a delete. */
    static Set<String> expected(List<Write> writes, String table)
    {
        Write last = writes.stream().max(Comparator.comparingLong(w -> w.ts)).orElseThrow();
        Set<String> rows = new TreeSet<>();
        if (last.author == null)
            return rows;
        rows.add(last.author + "/" + TWEET + " by " + last.author + ": b" + last.ts);
        if (table.equals("timeline"))
            for (long f : FOLLOWERS.get(last.author))
                rows.add(f + "/" + TWEET + " by " + last.author + ": b" + last.ts);
        return rows;
    }

    static Set<String> actual(FakeGateway gateway, String table)
    {
        return gateway.rows("tw", table).stream()
                      .map(r -> longOf(r.get("user_id")) + "/" + longOf(r.get("tweet_id")) + " by " + longOf(r.get("author_id"))
                                + ": " + string(r.get("body")))
                      .collect(Collectors.toCollection(TreeSet::new));
    }

    /** A task runs until it succeeds, page by page, from the page it got to when a statement failed (at-least-once). */
    static void runToCompletion(FlowExecutor executor, Task task)
    {
        Task current = task;
        while (true)
        {
            ExecutionResult result = executor.execute(current);
            if (!result.isSuccess())
                continue;
            if (!result.hasMore())
                return;
            current = current.resumeAt(result.resumeTarget(), result.resumePaging());
        }
    }

    @Test
    void shouldKeepTheFollowersRowsWhenTheNewerTaskFailsMidWayAndAnOlderOneRunsMeanwhile()
    {
        // the issue's case: one tweet, written at 1000 and again at 2000 by the same author; the newer task fails
        // after its own row and before the fan-out's lineage entry, the older one runs whole (its fan-out entry is then
        // the fan-out's only one, older than the own row's entry), then the newer one is retried
        FlowSpec spec = spec(2);
        FakeGateway gateway = gateway();
        FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);
        List<Write> writes = List.of(new Write(1000, 100L), new Write(2000, 100L));
        Task older = gateway.applied("tw", "tweets", writes.get(0).task(spec)), newer = gateway.applied("tw", "tweets", writes.get(1).task(spec));

        int[] statements = new int[1];
        gateway.beforeEach = cql -> {
            if (++statements[0] == 3) // the lineage entry and the row of target 0, then it fails
                throw new RuntimeException("injected failure");
        };
        assertEquals(false, executor.execute(newer).isSuccess());
        gateway.beforeEach = cql -> {};
        runToCompletion(executor, older);
        runToCompletion(executor, newer);

        assertEquals(expected(writes, "timeline"), actual(gateway, "timeline"));
    }

    @Test
    void shouldKeepTheRowsFollowersOfBothAuthorsShareWhenTheAuthorChanges()
    {
        FlowSpec spec = spec(2);
        FakeGateway gateway = gateway();
        FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);
        List<Write> writes = List.of(new Write(1000, 100L), new Write(2000, 200L));
        Task older = gateway.applied("tw", "tweets", writes.get(0).task(spec)), newer = gateway.applied("tw", "tweets", writes.get(1).task(spec));
        runToCompletion(executor, newer);
        runToCompletion(executor, older); // the older author's task runs last
        assertEquals(expected(writes, "timeline"), actual(gateway, "timeline"));
    }

    @Provide
    Arbitrary<List<Write>> writes()
    {
        Arbitrary<Long> author = Arbitraries.of(100L, 200L, 300L).injectNull(0.25);
        return author.list().ofMinSize(2).ofMaxSize(4).map(authors -> {
            List<Write> out = new ArrayList<>();
            for (int i = 0; i < authors.size(); i++)
                out.add(new Write(1000L * (i + 1), authors.get(i)));
            return out;
        });
    }

    @Provide
    Arbitrary<Schedule> schedules()
    {
        return Combinators.combine(Arbitraries.longs(), Arbitraries.integers().between(0, 3), Arbitraries.integers().between(0, 2))
                          .as(Schedule::new);
    }

    /** How a run goes: the seed of its interleaving and failures, how many statements fail, how many tasks run twice. */
    static final class Schedule
    {
        final long seed;
        final int failures;
        final int duplicates;

        Schedule(long seed, int failures, int duplicates)
        {
            this.seed = seed;
            this.failures = failures;
            this.duplicates = duplicates;
        }

        @Override
        public String toString()
        {
            return "seed " + seed + ", " + failures + " failed statements, " + duplicates + " duplicate tasks";
        }
    }

    @Property(tries = 400)
    void shouldConvergeToTheLastWriteWithTwoLineageTargets(@ForAll("writes") List<Write> writes, @ForAll("schedules") Schedule schedule)
    {
        check(2, writes, schedule);
    }

    @Property(tries = 300)
    void shouldConvergeToTheLastWriteWithThreeLineageTargets(@ForAll("writes") List<Write> writes, @ForAll("schedules") Schedule schedule)
    {
        check(3, writes, schedule);
    }

    private static void check(int targets, List<Write> writes, Schedule schedule)
    {
        FlowSpec spec = spec(targets);
        FakeGateway gateway = gateway();
        FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);
        Random random = new Random(schedule.seed);
        List<Task> tasks = new ArrayList<>();
        for (Write write : writes)
            tasks.add(gateway.applied("tw", "tweets", write.task(spec)));
        for (int i = 0; i < schedule.duplicates; i++) // a takeover or a late copy of the write runs a task again
            tasks.add(tasks.get(random.nextInt(writes.size())));
        new Interleaving(gateway, random, schedule.failures).run(executor, tasks);

        assertEquals(expected(writes, "timeline"), actual(gateway, "timeline"), writes + " / " + schedule);
        if (targets == 3)
            assertEquals(expected(writes, "by_author"), actual(gateway, "by_author"), writes + " / " + schedule);
    }

    /**
     * Runs each task on its own thread, one statement at a time: before each statement a thread waits until the
     * seeded random scheduler picks it, so statements of different tasks interleave in any order, reproducibly; a
     * picked statement may be failed instead (its task runs again).
     */
    static final class Interleaving
    {
        private final FakeGateway gateway;
        private final Random random;
        private int failuresLeft;
        private final Map<Thread, Integer> index = new HashMap<>();
        private final TreeSet<Integer> waiting = new TreeSet<>();
        private Thread chosen;
        private boolean failChosen;
        private int finished;

        Interleaving(FakeGateway gateway, Random random, int failures)
        {
            this.gateway = gateway;
            this.random = random;
            this.failuresLeft = failures;
        }

        void run(FlowExecutor executor, List<Task> tasks)
        {
            run(task -> executor, tasks);
        }

        /** @param executorOf the executor of each task's flow (racing tasks of several flows) */
        void run(java.util.function.Function<Task, FlowExecutor> executorOf, List<Task> tasks)
        {
            List<Thread> threads = new ArrayList<>();
            for (Task task : tasks)
            {
                Thread thread = new Thread(() -> {
                    try
                    {
                        runToCompletion(executorOf.apply(task), task);
                    }
                    finally
                    {
                        synchronized (Interleaving.this)
                        {
                            finished++;
                            if (chosen == Thread.currentThread())
                                chosen = null;
                            Interleaving.this.notifyAll();
                        }
                    }
                });
                synchronized (this)
                {
                    index.put(thread, threads.size());
                }
                threads.add(thread);
            }
            gateway.beforeEach = this::turn;
            threads.forEach(Thread::start);
            try
            {
                schedule(threads);
                for (Thread thread : threads)
                    thread.join(10_000);
            }
            catch (InterruptedException e)
            {
                throw new AssertionError(e);
            }
            finally
            {
                gateway.beforeEach = cql -> {};
            }
        }

        private synchronized void schedule(List<Thread> threads) throws InterruptedException
        {
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (true)
            {
                while (chosen != null || waiting.size() + finished < threads.size())
                {
                    wait(100);
                    if (System.nanoTime() > deadline)
                        throw new AssertionError("the tasks did not finish within 30 s");
                }
                if (finished == threads.size())
                    return;
                List<Integer> ready = new ArrayList<>(waiting);
                int pick = ready.get(random.nextInt(ready.size()));
                waiting.remove(pick);
                chosen = threads.get(pick);
                failChosen = failuresLeft > 0 && random.nextInt(4) == 0;
                if (failChosen)
                    failuresLeft--;
                notifyAll();
            }
        }

        /** Before each statement of a task thread: wait for the scheduler's pick. */
        private synchronized void turn(String cql)
        {
            Integer me = index.get(Thread.currentThread());
            if (me == null)
                return; // not a task thread
            if (chosen == Thread.currentThread())
                chosen = null;
            waiting.add(me);
            notifyAll();
            try
            {
                while (chosen != Thread.currentThread())
                    wait();
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            if (failChosen)
            {
                failChosen = false;
                throw new RuntimeException("injected failure before [" + cql + "]");
            }
        }
    }
}
