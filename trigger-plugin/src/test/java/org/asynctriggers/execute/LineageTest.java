package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The targets in mode lineage, run through {@link FlowExecutor} as the workers run them. */
class LineageTest
{
    @Nested
    class UsersByName
    {
        private final FakeGateway gateway = Fixtures.usersGateway();
        private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        private Task named(String name, long ts)
        {
            return gateway.applied("app", "users", Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(1)), row("id", 1L, "name", name, "email", name + "@x")));
        }

        private Task delete(long ts)
        {
            return gateway.applied("app", "users", Fixtures.task(spec, Operation.DELETE, ts, List.of(bigint(1)), row("id", 1L)));
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
            assertEquals(List.of(), gateway.rows(Cql.KEYSPACE, "lineage"), "no image is left, and ann's entry went with her row");
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
            Task nulled = gateway.applied("app", "users", Fixtures.task(spec, Operation.UPDATE, 20, List.of(bigint(1)), row("id", 1L, "name", null, "email", "x")));
            run(named("ann", 10), nulled, named("ann", 10));
            assertEquals(List.of(), names());
        }

        @Test
        void shouldDeriveNoRowForAnEmptyNameAndKeepConverging()
        {
            // Cassandra refuses an empty partition key: '' derives no row, as null does, and the name before it goes
            run(named("ann", 10), named("", 20));
            assertEquals(List.of(), names());
            run(named("bob", 30), named("", 20));
            assertEquals(List.of("bob"), names());
        }

        @Test
        void shouldConvergeForEveryOrderOfThreeWrites()
        {
            List<Task> tasks = List.of(named("ann", 10), named("bob", 20), named("cy", 30));
            for (List<Task> order : permutations(tasks))
            {
                FakeGateway fresh = Fixtures.usersGateway();
                FlowExecutor ex = new FlowExecutor(spec, fresh, null, c -> null);
                tasks.forEach(t -> fresh.applied("app", "users", t)); // the replica holds the writes when their tasks run
                order.forEach(t -> assertSuccess(ex.execute(t)));
                List<String> names = fresh.rows("app", "users_by_name").stream().map(r -> string(r.get("name"))).collect(Collectors.toList());
                assertEquals(List.of("cy"), names, "order " + order.stream().map(Task::timestamp).collect(Collectors.toList()));
            }
        }
    }

    /** The Twitter flow as ctl renders it: both timeline targets keep lineage of the tweet's author, and the fan-out
     *  follows its table (its follows reach the copy through the companion flow, as rendered too). */
    @Nested
    class TwitterLineage
    {
        private final FakeGateway gateway = Fixtures.twitterGateway()
                                                    .table("twitter", "async_join_twitter_timeline", List.of("m0"), List.of("k0"))
                                                    .table("twitter", "async_follows_twitter_timeline", List.of("user_id"), List.of("follower_id"));
        private final FlowSpec spec = FlowSpecParser.parse(golden("twitter_timeline.json"), "twitter_timeline", 1);
        private final FlowSpec follows = FlowSpecParser.parse(golden("twitter_timeline_follows.json"), "twitter_timeline_follows", 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        TwitterLineage()
        {
            FlowExecutor companion = new FlowExecutor(follows, gateway, null, c -> null);
            for (long follower = 100; follower < 107; follower++)
            {
                Map<String, ByteBuffer> follow = row("user_id", 42L, "follower_id", follower);
                assertSuccess(runAll(companion, gateway.applied("twitter", "followers",
                                                                Fixtures.task(follows, Operation.INSERT, 1, List.of(bigint(42), bigint(follower)), follow))));
            }
        }

        private Task tweet(long ts)
        {
            return gateway.applied("twitter", "tweets", Fixtures.task(spec, Operation.INSERT, ts, List.of(bigint(7)), row("tweet_id", 7L, "author_id", 42L, "body", "hi")));
        }

        private Task delete(long ts)
        {
            // a deleted tweet carries its key only: the author comes from the lineage
            return gateway.applied("twitter", "tweets", Fixtures.task(spec, Operation.DELETE, ts, List.of(bigint(7)), row("tweet_id", 7L)));
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
        void shouldRecordATweetsImagesInOneWrite()
        {
            // the author's own row, the followers' rows and the join index's row: three images of one lineage partition,
            // one batch
            assertSuccess(runAll(executor, tweet(1000)));
            long records = gateway.executed.stream().filter(cql -> cql.contains("INTO \"async_triggers\".\"lineage\"")).count();
            assertEquals(1, records, String.join("\n", gateway.executed));
            assertTrue(gateway.executed.stream().anyMatch(cql -> cql.startsWith("BEGIN UNLOGGED BATCH ")));
            assertEquals(3, gateway.rows("async_triggers", "lineage").size());
            assertEquals(8, timelineRows());
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
        void shouldWriteTheLineageInEveryDataCenterAndReadItInThisOneWhenTheFlowSaysOne()
        {
            assertSuccess(runAll(executor, tweet(1000)));
            assertSuccess(runAll(executor, delete(2000))); // the old image's entry is deleted too
            for (int i = 0; i < gateway.executed.size(); i++)
                if (gateway.executed.get(i).contains("\"async_triggers\".\"lineage\""))
                    assertEquals(gateway.executed.get(i).startsWith("SELECT") ? ConsistencyLevel.LOCAL_QUORUM : ConsistencyLevel.EACH_QUORUM,
                                 gateway.consistencies.get(i), gateway.executed.get(i));
            assertTrue(gateway.executed.stream().anyMatch(q -> q.startsWith("DELETE") && q.contains("\"lineage\"")));
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
}
