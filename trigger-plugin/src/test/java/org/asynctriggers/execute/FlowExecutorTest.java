package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
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

    static void assertSuccess(ExecutionResult result)
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
        void shouldReadTheSourceRowOnThisReplicaWithItsWriteTimesForAKeyAPartialUpdateLacks()
        {
            gateway.insert("twitter", "tweets", row("tweet_id", 7L, "author_id", 42L, "body", "old"), 900);
            Task update = Fixtures.task(spec, Operation.UPDATE, 1000, List.of(bigint(7)), row("tweet_id", 7L, "body", "new"));
            assertSuccess(runAll(executor, update));
            int read = gateway.executed.indexOf("READ ROW twitter.tweets");
            assertTrue(read >= 0, gateway.executed.toString());
            assertNull(gateway.consistencies.get(read), "read on this node's own replica, through no other node");
            List<Map<String, ByteBuffer>> rows = gateway.rows("twitter", "timeline");
            assertEquals(1, rows.size());
            assertEquals("new", string(rows.get(0).get("body")), "the update's own value wins over the read");
            FakeGateway.Cell author = gateway.table("twitter", "timeline").cells.values().iterator().next().get("author_id");
            assertEquals(900, author.ts, "a value read back keeps the write time it was read with, never the task's");
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
            return gateway.applied("app", "events", Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(p), bigint(c)), row("p", p, "c", c, "v", v)));
        }

        private Task delete(long ts, Long... key)
        {
            List<ByteBuffer> k = new java.util.ArrayList<>();
            for (Long component : key)
                k.add(bigint(component));
            return gateway.applied("app", "events", Fixtures.task(spec, Operation.DELETE, ts, k, key.length == 2 ? row("p", key[0], "c", key[1]) : row("p", key[0])));
        }

        @Test
        void shouldDeleteTheDerivedRowAtTheSourceTimestamp()
        {
            assertSuccess(runAll(executor, insert(1, 1, "a", 10)));
            assertSuccess(runAll(executor, delete(20, 1L, 1L)));
            assertEquals(List.of(), gateway.rows("app", "events_copy"));
            assertTrue(gateway.executed.contains("DELETE FROM \"app\".\"events_copy\" USING TIMESTAMP ? WHERE \"p\" = ? AND \"c\" = ?"));
        }

        @Test
        void shouldConvergeWhenTheDeleteRunsBeforeTheInsert()
        {
            assertSuccess(runAll(executor, delete(20, 1L, 1L)));
            assertSuccess(runAll(executor, insert(1, 1, "a", 10)));
            assertEquals(List.of(), gateway.rows("app", "events_copy"));
        }

        @Test
        void shouldDeleteAPartitionOrRangeByTheKnownPrefix()
        {
            runAll(executor, insert(1, 1, "a", 10));
            runAll(executor, insert(1, 2, "b", 10));
            runAll(executor, insert(2, 1, "c", 10));
            assertSuccess(runAll(executor, delete(20, 1L)));
            assertEquals(1, gateway.rows("app", "events_copy").size());
            assertTrue(gateway.executed.contains("DELETE FROM \"app\".\"events_copy\" USING TIMESTAMP ? WHERE \"p\" = ?"));
        }

        @Test
        void shouldNotBlankColumnsAPartialUpdateDidNotCarry()
        {
            runAll(executor, insert(1, 1, "a", 10));
            Task update = gateway.applied("app", "events", Fixtures.task(spec, Operation.UPDATE, 20, List.of(bigint(1), bigint(1)), row("p", 1L, "c", 1L)));
            assertSuccess(runAll(executor, update));
            assertEquals("a", string(gateway.rows("app", "events_copy").get(0).get("v")));
        }

        @Test
        void shouldWriteACellDeletedSinceOnThisReplicaAsATombstoneAtItsOwnTimestamp()
        {
            Task insert = insert(1, 1, "a", 10);
            gateway.applied("app", "events", delete(30, 1L));      // a partition deletion applied after the insert
            runAll(executor, delete(30, 1L));
            assertSuccess(runAll(executor, insert));                // the insert's task runs late (a retry, a takeover)
            assertEquals(List.of(), gateway.rows("app", "events_copy"), "the late task does not bring the deleted row back");
        }

        @Test
        void shouldWriteANullCellAsNull()
        {
            runAll(executor, insert(1, 1, "a", 10));
            Task update = gateway.applied("app", "events", Fixtures.task(spec, Operation.UPDATE, 20, List.of(bigint(1), bigint(1)), row("p", 1L, "c", 1L, "v", null)));
            assertSuccess(runAll(executor, update));
            assertNull(gateway.rows("app", "events_copy").get(0).get("v"));
        }
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
