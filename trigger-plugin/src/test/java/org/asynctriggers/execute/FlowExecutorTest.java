package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.api.Operation;
import org.asynctriggers.api.TaskContext;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlowExecutorTest
{
    /** Runs a task chunk by chunk to its end, as the workers do; the last chunk's result. */
    static ExecutionResult runAll(FlowExecutor executor, Task task)
    {
        ExecutionResult result = executor.execute(task);
        while (result.isSuccess() && result.hasMore())
            result = executor.execute(task.resumeAt(result.resumeTarget(), result.resumePaging()));
        return result;
    }

    private static void assertSuccess(ExecutionResult result)
    {
        if (!result.isSuccess())
            throw new AssertionError("task failed", result.cause());
    }

    static final String TIMELINE_INSERT =
        "INSERT INTO \"twitter\".\"timeline\" (\"user_id\", \"tweet_id\", \"author_id\", \"body\") VALUES (?, ?, ?, ?) USING TIMESTAMP ?";

    @Nested
    class Timeline
    {
        private final FakeGateway gateway = Fixtures.twitterGateway();
        private final FlowSpec spec = FlowSpecParser.parse(Fixtures.TIMELINE, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        private void follow(long user, long follower)
        {
            gateway.insert("twitter", "followers", row("user_id", user, "follower_id", follower), 1);
        }

        private List<Long> timelineOwners()
        {
            return gateway.rows("twitter", "timeline").stream().map(r -> longOf(r.get("user_id"))).sorted().collect(Collectors.toList());
        }

        @Test
        void shouldWriteTheDirectTargetAtTheSourceTimestampAndWriteConsistency()
        {
            Task insert = Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
            assertSuccess(runAll(executor, insert));
            List<Map<String, ByteBuffer>> rows = gateway.rows("twitter", "timeline");
            assertEquals(1, rows.size());
            assertEquals("hi", string(rows.get(0).get("body")));
            assertEquals(42, longOf(rows.get(0).get("user_id")));
            assertEquals(1000, gateway.table("twitter", "timeline").cells.values().iterator().next().get("body").ts);
            int write = gateway.executed.indexOf("INSERT INTO \"twitter\".\"timeline\" (\"user_id\", \"tweet_id\", \"author_id\", \"body\") VALUES (?, ?, ?, ?) USING TIMESTAMP ?");
            assertEquals(ConsistencyLevel.QUORUM, gateway.consistencies.get(write));
        }

        @Test
        void shouldFanOutPageByPage()
        {
            for (long follower = 100; follower < 107; follower++)
                follow(42, follower);
            follow(43, 999);
            Task insert = Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
            assertSuccess(runAll(executor, insert));
            assertEquals(List.of(42L, 100L, 101L, 102L, 103L, 104L, 105L, 106L), timelineOwners());
            assertEquals(3, gateway.pagesFetched);
            assertEquals(3, gateway.largestPage);
            int page = gateway.executed.indexOf("SELECT \"follower_id\" FROM \"twitter\".\"followers\" WHERE \"user_id\" = ?");
            assertEquals(ConsistencyLevel.ONE, gateway.consistencies.get(page));
        }

        @Test
        void shouldWriteAPageOnTheRowWritersAndFailTheWholePageWhenOneRowFails() throws Exception
        {
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
            try
            {
                FlowExecutor parallel = new FlowExecutor(spec, gateway, null, c -> null, pool);
                for (long follower = 100; follower < 107; follower++)
                    follow(42, follower);
                Task insert = Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
                assertSuccess(runAll(parallel, insert));
                assertEquals(List.of(42L, 100L, 101L, 102L, 103L, 104L, 105L, 106L), timelineOwners());

                Task second = Fixtures.task(spec, Operation.INSERT, 2000, List.of(bigint(8)), row("tweet_id", 8L, "author_id", 42L, "body", "again"));
                ExecutionResult first = parallel.execute(second);   // the author's row and the first page
                assertTrue(first.hasMore());
                gateway.failNext = 1;                                // one row of the next page fails
                ExecutionResult failed = parallel.execute(second.resumeAt(first.resumeTarget(), first.resumePaging()));
                assertFalse(failed.isSuccess(), "a page with a failed row is not done");
                assertEquals("injected failure", failed.cause().getMessage());
                ExecutionResult retried = runAll(parallel, second.resumeAt(first.resumeTarget(), first.resumePaging()));
                assertSuccess(retried);
                long tweet8 = gateway.rows("twitter", "timeline").stream().filter(r -> longOf(r.get("tweet_id")) == 8L).count();
                assertEquals(8, tweet8, "the page was run again as a whole: every follower has the tweet once");
            }
            finally
            {
                pool.shutdownNow();
            }
        }

        @Test
        void shouldRunAFanOutOnePageAtATimeAndGoOnFromTheRecordedPosition()
        {
            for (long follower = 100; follower < 107; follower++)
                follow(42, follower);
            Task insert = Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
            ExecutionResult first = executor.execute(insert);
            assertTrue(first.hasMore(), "a fan-out larger than page_size yields after one page");
            assertEquals(1, first.resumeTarget(), "target 0 (the author's row) is done, the fan-out target goes on");
            assertEquals(3, first.fanoutRows());
            assertEquals(List.of(42L, 100L, 101L, 102L), timelineOwners());

            // another node takes over from the recorded position: the first page is not written again
            byte[] paging = new byte[first.resumePaging().remaining()];
            first.resumePaging().duplicate().get(paging);
            int insertsBefore = java.util.Collections.frequency(gateway.executed, TIMELINE_INSERT);
            ExecutionResult rest = runAll(executor, insert.recovered(0, first.resumeTarget(), paging));
            assertSuccess(rest);
            assertFalse(rest.hasMore());
            assertEquals(List.of(42L, 100L, 101L, 102L, 103L, 104L, 105L, 106L), timelineOwners());
            assertEquals(4, java.util.Collections.frequency(gateway.executed, TIMELINE_INSERT) - insertsBefore,
                         "only the 4 followers after the resume position are written");
        }

        @Test
        void shouldReadTheSourceRowForColumnsAPartialUpdateLacks()
        {
            gateway.insert("twitter", "tweets", row("tweet_id", 7L, "author_id", 42L, "body", "old"), 900);
            Task update = Fixtures.task(spec, Operation.UPDATE, 1000, List.of(bigint(7)), row("tweet_id", 7L, "body", "new"));
            assertSuccess(runAll(executor, update));
            assertTrue(gateway.executed.contains("SELECT \"author_id\", \"body\" FROM \"twitter\".\"tweets\" WHERE \"tweet_id\" = ?"));
            List<Map<String, ByteBuffer>> rows = gateway.rows("twitter", "timeline");
            assertEquals(1, rows.size());
            assertEquals("new", string(rows.get(0).get("body")), "the update's own value wins over the read");
        }

        @Test
        void shouldNotReadWhenTheUpdateCarriesEverything()
        {
            Task insert = Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
            runAll(executor, insert);
            assertFalse(gateway.executed.stream().anyMatch(c -> c.contains("\"tweets\"")));
        }

        @Test
        void shouldSkipATargetWhoseKeyADeleteCannotName()
        {
            Task insert = Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
            runAll(executor, insert);
            Task delete = Fixtures.task(spec, Operation.DELETE, 2000, List.of(bigint(7)), row("tweet_id", 7L));
            assertSuccess(runAll(executor, delete));
            assertEquals(1, gateway.rows("twitter", "timeline").size(), "author_id is not in the key of a deleted tweet");
        }

        @Test
        void shouldFailWhenATableDoesNotPrepare()
        {
            FakeGateway empty = new FakeGateway().withAsyncTriggersKeyspace();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new FlowExecutor(spec, empty, null, c -> null));
            assertEquals("table twitter.tweets does not exist", e.getMessage());
        }
    }

    static final String COPY = "{\"name\": \"copy\","
        + "\"source\": {\"keyspace\": \"app\", \"table\": \"events\", \"partition_key\": [\"p\"], \"clustering\": [\"c\"],"
        + "  \"columns\": {\"p\": \"bigint\", \"c\": \"bigint\", \"v\": \"text\"}},"
        + "\"targets\": [{\"keyspace\": \"app\", \"table\": \"events_copy\", \"partition_key\": [\"p\"], \"clustering\": [\"c\"],"
        + "  \"columns\": {\"p\": \"source.p\", \"c\": \"source.c\", \"v\": \"source.v\"}}]}";

    @Nested
    class DirectDeletes
    {
        private final FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace()
                                                             .table("app", "events", List.of("p"), List.of("c"))
                                                             .table("app", "events_copy", List.of("p"), List.of("c"));
        private final FlowSpec spec = FlowSpecParser.parse(COPY, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        private Task insert(long p, long c, String v, long ts)
        {
            return Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(p), bigint(c)), row("p", p, "c", c, "v", v));
        }

        @Test
        void shouldDeleteTheDerivedRowAtTheSourceTimestamp()
        {
            assertSuccess(runAll(executor, insert(1, 1, "a", 10)));
            assertSuccess(runAll(executor, Fixtures.task(spec, Operation.DELETE, 20, List.of(bigint(1), bigint(1)), row("p", 1L, "c", 1L))));
            assertEquals(List.of(), gateway.rows("app", "events_copy"));
            assertTrue(gateway.executed.contains("DELETE FROM \"app\".\"events_copy\" USING TIMESTAMP ? WHERE \"p\" = ? AND \"c\" = ?"));
        }

        @Test
        void shouldConvergeWhenTheDeleteRunsBeforeTheInsert()
        {
            assertSuccess(runAll(executor, Fixtures.task(spec, Operation.DELETE, 20, List.of(bigint(1), bigint(1)), row("p", 1L, "c", 1L))));
            assertSuccess(runAll(executor, insert(1, 1, "a", 10)));
            assertEquals(List.of(), gateway.rows("app", "events_copy"));
        }

        @Test
        void shouldDeleteAPartitionOrRangeByTheKnownPrefix()
        {
            runAll(executor, insert(1, 1, "a", 10));
            runAll(executor, insert(1, 2, "b", 10));
            runAll(executor, insert(2, 1, "c", 10));
            assertSuccess(runAll(executor, Fixtures.task(spec, Operation.DELETE, 20, List.of(bigint(1)), row("p", 1L))));
            assertEquals(1, gateway.rows("app", "events_copy").size());
            assertTrue(gateway.executed.contains("DELETE FROM \"app\".\"events_copy\" USING TIMESTAMP ? WHERE \"p\" = ?"));
        }

        @Test
        void shouldNotBlankColumnsAPartialUpdateDidNotCarryWhenTheRowIsGone()
        {
            runAll(executor, insert(1, 1, "a", 10));
            // the source row is not in the fake's events table, so the read finds nothing: v stays as it was
            Task update = Fixtures.task(spec, Operation.UPDATE, 20, List.of(bigint(1), bigint(1)), row("p", 1L, "c", 1L));
            assertSuccess(runAll(executor, update));
            assertEquals("a", string(gateway.rows("app", "events_copy").get(0).get("v")));
        }

        @Test
        void shouldWriteANullCellAsNull()
        {
            runAll(executor, insert(1, 1, "a", 10));
            Task update = Fixtures.task(spec, Operation.UPDATE, 20, List.of(bigint(1), bigint(1)), row("p", 1L, "c", 1L, "v", null));
            assertSuccess(runAll(executor, update));
            assertNull(gateway.rows("app", "events_copy").get(0).get("v"));
        }
    }

    @Nested
    class Lineage
    {
        private final FakeGateway gateway = Fixtures.usersGateway();
        private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        private Task named(String name, long ts)
        {
            return Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(1)), row("id", 1L, "name", name, "email", name + "@x"));
        }

        private Task delete(long ts)
        {
            return Fixtures.task(spec, Operation.DELETE, ts, List.of(bigint(1)), row("id", 1L));
        }

        private List<String> names()
        {
            return gateway.rows("app", "users_by_name").stream().map(r -> string(r.get("name"))).sorted().collect(Collectors.toList());
        }

        private void run(Task... tasks)
        {
            for (Task t : tasks)
                assertSuccess(runAll(executor, t));
        }

        @Test
        void shouldKeepOnlyTheLaterNameWhenTasksArriveInOrder()
        {
            run(named("ann", 10), named("bob", 20));
            assertEquals(List.of("bob"), names());
            assertEquals(1, gateway.rows(Cql.KEYSPACE, "lineage").size());
        }

        @Test
        void shouldKeepOnlyTheLaterNameWhenTasksArriveReordered()
        {
            run(named("bob", 20), named("ann", 10));
            assertEquals(List.of("bob"), names());
        }

        @Test
        void shouldConvergeWhenAnOldTaskIsExecutedAgain()
        {
            Task ann = named("ann", 10);
            run(ann, named("bob", 20), ann, ann);
            assertEquals(List.of("bob"), names());
            assertEquals(1, gateway.rows(Cql.KEYSPACE, "lineage").size());
        }

        @Test
        void shouldDeleteTheDerivedRowOfADeletedSource()
        {
            run(named("ann", 10), delete(20));
            assertEquals(List.of(), names());
            List<Map<String, ByteBuffer>> lineage = gateway.rows(Cql.KEYSPACE, "lineage");
            assertEquals(1, lineage.size());
            assertEquals(1, KeyCodec.decode(lineage.get(0).get("target_key")).size(), "only the target's sentinel (its index alone) is left");
        }

        @Test
        void shouldConvergeWhenTheDeleteRunsBeforeTheInsert()
        {
            run(delete(20), named("ann", 10));
            assertEquals(List.of(), names());
        }

        @Test
        void shouldResurrectAfterADeleteWithANewerInsert()
        {
            run(named("ann", 10), delete(20), named("cy", 30), named("ann", 10));
            assertEquals(List.of("cy"), names());
        }

        @Test
        void shouldDropTheDerivedRowWhenTheNameBecomesNull()
        {
            Task nulled = Fixtures.task(spec, Operation.UPDATE, 20, List.of(bigint(1)), row("id", 1L, "name", null, "email", "x"));
            run(named("ann", 10), nulled, named("ann", 10));
            assertEquals(List.of(), names());
        }

        @Test
        void shouldConvergeForEveryOrderOfThreeWrites()
        {
            List<Task> tasks = List.of(named("ann", 10), named("bob", 20), named("cy", 30));
            for (List<Task> order : permutations(tasks))
            {
                FakeGateway fresh = Fixtures.usersGateway();
                FlowExecutor ex = new FlowExecutor(spec, fresh, null, c -> null);
                order.forEach(t -> assertSuccess(ex.execute(t)));
                List<String> names = fresh.rows("app", "users_by_name").stream().map(r -> string(r.get("name"))).collect(Collectors.toList());
                assertEquals(List.of("cy"), names, "order " + order.stream().map(Task::timestamp).collect(Collectors.toList()));
            }
        }
    }

    /** The Twitter flow as ctl renders it: both timeline targets keep lineage of the tweet's author. */
    @Nested
    class TwitterLineage
    {
        private final FakeGateway gateway = Fixtures.twitterGateway();
        private final FlowSpec spec = FlowSpecParser.parse(golden("twitter_timeline.json"), "twitter_timeline", 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        TwitterLineage()
        {
            for (long follower = 100; follower < 107; follower++)
                gateway.insert("twitter", "followers", row("user_id", 42L, "follower_id", follower), 1);
        }

        private Task tweet(long ts)
        {
            return Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi"));
        }

        private Task delete(long ts)
        {
            // a deleted tweet carries its key only: the author comes from the lineage
            return Fixtures.task(spec, Operation.DELETE, ts, List.of(bigint(7)), row("tweet_id", 7L));
        }

        private int timelineRows()
        {
            return gateway.rows("twitter", "timeline").size();
        }

        @Test
        void shouldRemoveADeletedTweetFromEveryTimeline()
        {
            assertSuccess(runAll(executor, tweet(1000)));
            assertEquals(8, timelineRows());
            assertSuccess(runAll(executor, delete(2000)));
            assertEquals(0, timelineRows());
        }

        @Test
        void shouldKeepADeleteThatOvertakesTheTweet()
        {
            assertSuccess(runAll(executor, delete(2000)));
            assertSuccess(runAll(executor, tweet(1000)));
            assertEquals(0, timelineRows());
        }

        @Test
        void shouldStayDeletedWhenTheTweetIsReExecuted()
        {
            assertSuccess(runAll(executor, tweet(1000)));
            assertSuccess(runAll(executor, delete(2000)));
            assertSuccess(runAll(executor, tweet(1000)));
            assertSuccess(runAll(executor, delete(2000)));
            assertEquals(0, timelineRows());
        }

        @Test
        void shouldReadAndWriteTheLineageAtQuorumWhenTheFlowSaysOne()
        {
            assertSuccess(runAll(executor, tweet(1000)));
            for (int i = 0; i < gateway.executed.size(); i++)
                if (gateway.executed.get(i).contains("\"async_triggers\".\"lineage\""))
                    assertEquals(ConsistencyLevel.QUORUM, gateway.consistencies.get(i), gateway.executed.get(i));
            assertTrue(gateway.executed.stream().anyMatch(q -> q.startsWith("SELECT") && q.contains("\"lineage\"")));
        }

        @Test
        void shouldReadTheFanoutPageByPageWhenCleaningUp()
        {
            assertSuccess(runAll(executor, tweet(1000)));
            int pagesBefore = gateway.pagesFetched;
            assertSuccess(runAll(executor, delete(2000)));
            assertTrue(gateway.pagesFetched > pagesBefore, "the clean-up recomputes the fan-out from the recorded author");
        }
    }

    private static String golden(String name)
    {
        try
        {
            return java.nio.file.Files.readString(java.nio.file.Paths.get("..", "tests", "golden", name));
        }
        catch (java.io.IOException e)
        {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static List<List<Task>> permutations(List<Task> tasks)
    {
        if (tasks.size() <= 1)
            return List.of(tasks);
        List<List<Task>> out = new ArrayList<>();
        for (Task head : tasks)
        {
            List<Task> rest = new ArrayList<>(tasks);
            rest.remove(head);
            for (List<Task> tail : permutations(rest))
            {
                List<Task> p = new ArrayList<>();
                p.add(head);
                p.addAll(tail);
                out.add(p);
            }
        }
        out.sort(Comparator.comparing(List::toString));
        return out;
    }

    /** Nested stub handler, as Cassandra's TriggersTest does with its triggers. */
    public static class RecordingHandler implements FlowHandler
    {
        static final List<TaskContext> seen = new CopyOnWriteArrayList<>();

        @Override
        public void execute(TaskContext ctx)
        {
            seen.add(ctx);
            ctx.execute("INSERT INTO \"app\".\"audit\" (\"id\", \"name\") VALUES (?, ?) USING TIMESTAMP ?",
                        ctx.key().get("id"), ctx.get("name"), ctx.timestamp());
        }
    }

    @Test
    void shouldRunAHandlerWithComposedValuesAndBoundCql()
    {
        FakeGateway gateway = Fixtures.usersGateway().table("app", "audit", List.of("id"), List.of());
        String json = Fixtures.USERS_BY_NAME.replaceFirst("\"targets\": \\[.*\\]\\}$", java.util.regex.Matcher.quoteReplacement("\"handler\": \"" + RecordingHandler.class.getName() + "\"}"));
        FlowSpec spec = FlowSpecParser.parse(json, null, 1);
        ColumnTypes types = c -> c.equals("id") ? LongType.instance : UTF8Type.instance;
        FlowExecutor executor = new FlowExecutor(spec, gateway, new RecordingHandler(), types);
        gateway.insert("app", "users", row("id", 1L, "name", "ann", "email", "old@x"), 5);
        RecordingHandler.seen.clear();

        assertSuccess(runAll(executor, Fixtures.task(spec, Operation.UPDATE, 10, List.of(bigint(1)), row("id", 1L, "email", "new@x"))));

        TaskContext ctx = RecordingHandler.seen.get(0);
        assertEquals("users_by_name", ctx.flowName());
        assertEquals(Operation.UPDATE, ctx.operation());
        assertEquals(1L, ctx.get("id"));
        assertEquals("ann", ctx.get("name"), "read back from the source row");
        assertEquals("new@x", ctx.get("email"));
        List<Map<String, ByteBuffer>> audit = gateway.rows("app", "audit");
        assertEquals("ann", string(audit.get(0).get("name")));
        assertEquals(10, gateway.table("app", "audit").cells.values().iterator().next().get("name").ts);
    }

    @Test
    void shouldReturnAFailureInsteadOfThrowing()
    {
        FakeGateway gateway = Fixtures.usersGateway();
        FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);
        gateway.failNext = 1;
        ExecutionResult result = runAll(executor, Fixtures.task(spec, Operation.INSERT, 10, List.of(bigint(1)), row("id", 1L, "name", "a", "email", "e")));
        assertFalse(result.isSuccess());
        assertEquals("injected failure", result.cause().getMessage());
    }
}
