package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
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
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Twitter flow with a fan-out that follows its table (docs/design.md, "A fan-out that follows its table"),
 * against random histories of two tweets and of the follows of their authors: tweets written, edited, moved to another
 * author, deleted; follows added and removed (one at a time, or all of an author's at once), an author following themself (their own timeline row is also the
 * flow's direct row); timestamps out of order; each task of either flow run at a random later moment, some twice.
 * The oracle is the join of the tables as they are: every tweet in its author's timeline and in the timeline of
 * each of the author's followers.
 */
class FollowHistoryTest
{
    private static final long[] TWEETS = { 1, 2 };
    private static final long[] AUTHORS = { 100, 200 };
    private static final long[] FOLLOWERS = { 11, 12, 100 };
    private static final String[] BODIES = { "b1", "b2", "b3" };
    static final int SWEEP = 20_000;

    private static String target(String user, String fanout)
    {
        return "{\"keyspace\": \"tw\", \"table\": \"timeline\", \"partition_key\": [\"user_id\"], \"clustering\": [\"tweet_id\"],"
               + " \"columns\": {\"user_id\": \"" + user + "\", \"tweet_id\": \"source.tweet_id\", \"author_id\": \"source.author_id\","
               + " \"body\": \"source.body\"}, \"fanout\": " + fanout + ", \"mode\": \"lineage\", \"lineage_columns\": [\"author_id\"]}";
    }

    private static final String INDEX = "{\"keyspace\": \"tw\", \"table\": \"async_join_tl\", \"partition_key\": [\"m0\"],"
                                        + " \"clustering\": [\"k0\"], \"columns\": {\"m0\": \"source.author_id\", \"k0\": \"source.tweet_id\","
                                        + " \"v0\": \"source.body\"}, \"fanout\": null, \"mode\": \"lineage\", \"lineage_columns\": [\"author_id\"],"
                                        + " \"join_index\": true}";
    private static final String FOLLOWING = target("row.follower_id",
        "{\"keyspace\": \"tw\", \"table\": \"followers\", \"match\": {\"user_id\": \"source.author_id\"}, \"columns\": [\"follower_id\"],"
        + " \"follow\": {\"index\": 1, \"keyspace\": \"tw\", \"table\": \"async_follows_tl\"}}");
    private static final String TWEETS_SOURCE = "{\"keyspace\": \"tw\", \"table\": \"tweets\", \"partition_key\": [\"tweet_id\"],"
                                                + " \"clustering\": [], \"columns\": {\"tweet_id\": \"bigint\", \"author_id\": \"bigint\", \"body\": \"text\"}}";
    static final FlowSpec MAIN = FlowSpecParser.parse(
        "{\"name\": \"tl\", \"source\": " + TWEETS_SOURCE + ", \"page_size\": 2, \"targets\": ["
        + target("source.author_id", "null") + ", " + INDEX + ", " + FOLLOWING + "]}", null, 1);
    static final FlowSpec COMPANION = FlowSpecParser.parse(
        "{\"name\": \"tl_follows\", \"source\": {\"keyspace\": \"tw\", \"table\": \"followers\", \"partition_key\": [\"user_id\"],"
        + " \"clustering\": [\"follower_id\"], \"columns\": {\"user_id\": \"bigint\", \"follower_id\": \"bigint\"}}, \"page_size\": 2,"
        + " \"targets\": [], \"follows\": {\"flow\": \"tl\", \"source\": " + TWEETS_SOURCE + ", \"index\": " + INDEX + ", \"target\": "
        + FOLLOWING + "}}", null, 1);

    static FakeGateway cluster()
    {
        return new FakeGateway().withAsyncTriggersKeyspace()
                                .table("tw", "tweets", List.of("tweet_id"), List.of())
                                .table("tw", "timeline", List.of("user_id"), List.of("tweet_id"))
                                .table("tw", "followers", List.of("user_id"), List.of("follower_id"))
                                .table("tw", "async_join_tl", List.of("m0"), List.of("k0"))
                                .table("tw", "async_follows_tl", List.of("user_id"), List.of("follower_id"));
    }

    /** A client's write of one tweet or one follow at {@code ts}. */
    private static Task draw(Random random, long ts)
    {
        if (random.nextInt(25) == 0) // every follow of an author removed at once: a partition deletion
        {
            long author = AUTHORS[random.nextInt(AUTHORS.length)];
            return Fixtures.task(COMPANION, Operation.DELETE, ts, List.of(bigint(author)), row("user_id", author));
        }
        if (random.nextInt(5) < 2)
        {
            long author = AUTHORS[random.nextInt(AUTHORS.length)];
            long follower = FOLLOWERS[random.nextInt(FOLLOWERS.length)];
            List<ByteBuffer> key = List.of(bigint(author), bigint(follower));
            Map<String, ByteBuffer> values = row("user_id", author, "follower_id", follower);
            return Fixtures.task(COMPANION, random.nextBoolean() ? Operation.INSERT : Operation.DELETE, ts, key, values);
        }
        long tweet = TWEETS[random.nextInt(TWEETS.length)];
        long author = AUTHORS[random.nextInt(AUTHORS.length)];
        String body = BODIES[random.nextInt(BODIES.length)];
        List<ByteBuffer> key = List.of(bigint(tweet));
        switch (random.nextInt(5))
        {
            case 0: return Fixtures.task(MAIN, Operation.INSERT, ts, key, row("tweet_id", tweet, "author_id", author, "body", body));
            case 1: return Fixtures.task(MAIN, Operation.UPDATE, ts, key, row("tweet_id", tweet, "author_id", author));
            case 2: return Fixtures.task(MAIN, Operation.UPDATE, ts, key, row("tweet_id", tweet, "body", body));
            case 3: return Fixtures.task(MAIN, Operation.UPDATE, ts, key, row("tweet_id", tweet, "author_id", null));
            default: return Fixtures.task(MAIN, Operation.DELETE, ts, key, row("tweet_id", tweet));
        }
    }

    private static Set<String> expected(FakeGateway cluster)
    {
        Set<Long> follows = new TreeSet<>();
        Set<String> rows = new TreeSet<>();
        for (Map<String, ByteBuffer> tweet : cluster.rows("tw", "tweets"))
        {
            if (tweet.get("author_id") == null)
                continue;
            long author = longOf(tweet.get("author_id"));
            Set<Long> users = new TreeSet<>(List.of(author));
            for (Map<String, ByteBuffer> f : cluster.rows("tw", "followers"))
                if (longOf(f.get("user_id")) == author)
                    users.add(longOf(f.get("follower_id")));
            for (long user : users)
                rows.add(user + "/" + longOf(tweet.get("tweet_id")) + " by " + author + ": " + string(tweet.get("body")));
        }
        return rows;
    }

    private static Set<String> actual(FakeGateway cluster)
    {
        Set<String> rows = new TreeSet<>();
        for (Map<String, ByteBuffer> r : cluster.rows("tw", "timeline"))
            rows.add(longOf(r.get("user_id")) + "/" + longOf(r.get("tweet_id")) + " by "
                     + (r.get("author_id") == null ? "null" : longOf(r.get("author_id"))) + ": " + string(r.get("body")));
        return rows;
    }

    private static String describe(Task task)
    {
        if (task.flow().equals(COMPANION.name) && task.key().size() == 1)
            return "unfollow every follower of " + longOf(task.key().get(0)) + " @" + task.timestamp();
        if (task.flow().equals(COMPANION.name))
            return (task.operation() == Operation.DELETE ? "unfollow " : "follow ") + longOf(task.key().get(0)) + " by "
                   + longOf(task.key().get(1)) + " @" + task.timestamp();
        StringBuilder out = new StringBuilder("tweet " + longOf(task.key().get(0)) + " " + task.operation() + "@" + task.timestamp());
        if (task.values().containsKey("author_id"))
            out.append(" author=").append(task.values().get("author_id") == null ? "null" : longOf(task.values().get("author_id")));
        if (task.values().containsKey("body"))
            out.append(" body=").append(string(task.values().get("body")));
        return out.toString();
    }

    /** One seeded history; "" when the timeline is the join of the tables, else the history and both sides. */
    static String run(long seed, int writes, boolean oneClock)
    {
        Random random = new Random(seed);
        FakeGateway cluster = cluster();
        FlowExecutor main = new FlowExecutor(MAIN, cluster, null, c -> null);
        FlowExecutor companion = new FlowExecutor(COMPANION, cluster, null, c -> null);
        List<Task> pending = new ArrayList<>();
        List<String> history = new ArrayList<>();
        long newest = 0;
        for (int i = 0; i < writes; i++)
        {
            long ts = oneClock ? newest + 1000 : 1000L * (1 + random.nextInt(8));
            newest = Math.max(newest, ts);
            Task task = draw(random, ts);
            FlowSpec spec = task.flow().equals(MAIN.name) ? MAIN : COMPANION;
            cluster.applied(spec.source.keyspace, spec.source.table, task);
            history.add("write #" + i + " " + describe(task));
            pending.add(task);
            while (!pending.isEmpty() && random.nextInt(3) == 0)
                runOne(main, companion, pending, random, history);
        }
        while (!pending.isEmpty())
            runOne(main, companion, pending, random, history);
        Set<String> expected = expected(cluster), actual = actual(cluster);
        return expected.equals(actual) ? "" : String.join("\n", history) + "\nthe tables say " + expected + ", the timeline holds " + actual;
    }

    private static void runOne(FlowExecutor main, FlowExecutor companion, List<Task> pending, Random random, List<String> history)
    {
        int i = random.nextInt(pending.size());
        Task task = random.nextInt(5) == 0 ? pending.get(i) : pending.remove(i);
        history.add("run " + describe(task));
        assertSuccess(runAll(task.flow().equals(MAIN.name) ? main : companion, task));
    }

    @Test
    void shouldKeepTheJoinInEverySeededHistoryWithOneClock()
    {
        for (long seed = 0; seed < SWEEP / 4; seed++)
        {
            String differs = run(seed, 2 + (int) (seed % 15), true);
            assertEquals("", differs, "seed " + seed + ":\n" + differs);
        }
    }

    /** Timestamps drawn from eight values: ties, and writes older than ones applied before them. */
    @Test
    void shouldKeepTheJoinInEverySeededHistoryWithOutOfOrderTimestamps()
    {
        for (long seed = 0; seed < SWEEP; seed++)
        {
            String differs = run(seed, 2 + (int) (seed % 15), false);
            assertEquals("", differs, "seed " + seed + ":\n" + differs);
        }
    }

    /**
     * Tasks of tweets and follows racing statement by statement (each task on its thread, a seeded scheduler picking
     * whose statement runs next, some statements failing and their tasks running again, some tasks run twice): the
     * ordering the design relies on (a source task writes the join index before it reads the copy, a follow task
     * writes the copy before it reads the join index) is what keeps the join.
     */
    @Test
    void shouldKeepTheJoinWhateverOrderRacingTasksRunTheirStatementsIn()
    {
        for (long seed = 0; seed < 600; seed++)
        {
            Random random = new Random(seed);
            FakeGateway cluster = cluster();
            FlowExecutor main = new FlowExecutor(MAIN, cluster, null, c -> null);
            FlowExecutor companion = new FlowExecutor(COMPANION, cluster, null, c -> null);
            List<Task> tasks = new ArrayList<>();
            List<String> history = new ArrayList<>();
            // a tweet and a follow of its author to start from, then racing changes of both
            List<Task> settled = List.of(Fixtures.task(MAIN, Operation.INSERT, 500, List.of(bigint(1)), row("tweet_id", 1L, "author_id", 100L, "body", "b0")),
                                         Fixtures.task(COMPANION, Operation.INSERT, 500, List.of(bigint(100), bigint(11)), row("user_id", 100L, "follower_id", 11L)));
            for (Task task : settled)
                assertSuccess(runAll(task.flow().equals(MAIN.name) ? main : companion,
                                     cluster.applied(task.flow().equals(MAIN.name) ? "tw" : "tw", task.flow().equals(MAIN.name) ? "tweets" : "followers", task)));
            int writes = 2 + random.nextInt(4);
            for (int i = 0; i < writes; i++)
            {
                Task task = draw(random, 1000L * (1 + random.nextInt(8)));
                FlowSpec spec = task.flow().equals(MAIN.name) ? MAIN : COMPANION;
                tasks.add(cluster.applied(spec.source.keyspace, spec.source.table, task));
                history.add(describe(task));
            }
            if (random.nextBoolean())
                tasks.add(tasks.get(random.nextInt(tasks.size()))); // a takeover runs a task again
            new LineageConvergenceTest.Interleaving(cluster, random, random.nextInt(3))
                .run(task -> task.flow().equals(MAIN.name) ? main : companion, tasks);
            assertEquals(expected(cluster), actual(cluster), "seed " + seed + ": " + history);
        }
    }

    /** A follow brings the author's tweets, an unfollow takes them away, a follow again brings them back. */
    @Test
    void shouldFollowUnfollowAndFollowAgain()
    {
        FakeGateway cluster = cluster();
        FlowExecutor main = new FlowExecutor(MAIN, cluster, null, c -> null);
        FlowExecutor companion = new FlowExecutor(COMPANION, cluster, null, c -> null);
        List<ByteBuffer> follow = List.of(bigint(100), bigint(11));
        assertSuccess(runAll(main, cluster.applied("tw", "tweets", Fixtures.task(MAIN, Operation.INSERT, 1000, List.of(bigint(1)),
                                                                                  row("tweet_id", 1L, "author_id", 100L, "body", "hi")))));
        assertEquals(Set.of("100/1 by 100: hi"), actual(cluster));
        Task add = cluster.applied("tw", "followers", Fixtures.task(COMPANION, Operation.INSERT, 2000, follow, row("user_id", 100L, "follower_id", 11L)));
        assertSuccess(runAll(companion, add));
        assertEquals(Set.of("100/1 by 100: hi", "11/1 by 100: hi"), actual(cluster));
        Task remove = cluster.applied("tw", "followers", Fixtures.task(COMPANION, Operation.DELETE, 3000, follow, row("user_id", 100L, "follower_id", 11L)));
        assertSuccess(runAll(companion, remove));
        assertEquals(Set.of("100/1 by 100: hi"), actual(cluster));
        Task again = cluster.applied("tw", "followers", Fixtures.task(COMPANION, Operation.INSERT, 4000, follow, row("user_id", 100L, "follower_id", 11L)));
        assertSuccess(runAll(companion, again));
        assertSuccess(runAll(companion, remove)); // the unfollow's task run again, late: the row's newest state wins
        assertEquals(Set.of("100/1 by 100: hi", "11/1 by 100: hi"), actual(cluster));
        assertTrue(cluster.rows("tw", "async_follows_tl").size() == 1, "the copy holds the follow");
    }
}
