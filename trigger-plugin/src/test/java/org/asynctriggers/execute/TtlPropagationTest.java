package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.Cql;
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
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.asynctriggers.testing.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A source write with a TTL gives its derived rows what remains of it (docs/design.md, "TTL"), on the fake's
 * clock: the fake expires cells and row markers as Cassandra does, and the executor counts on the same clock.
 */
class TtlPropagationTest
{
    /** when the source write was made, in the fake's seconds */
    private static final long WRITTEN = 1_700_000_000L;

    @Test
    void shouldCountTheRemainingTtlFromTheExpirationTimeRoundingDown()
    {
        assertEquals(5, Expiry.remaining(100, 95_000).ttl);
        assertEquals(4, Expiry.remaining(100, 95_001).ttl, "a started second counts as gone: never outlive the source");
        assertTrue(Expiry.remaining(100, 99_001).expired);
        assertTrue(Expiry.remaining(100, 100_000).expired);
        assertTrue(Expiry.remaining(100, 250_000).expired);
        assertEquals(Expiry.MAX_TTL, Expiry.remaining(Long.MAX_VALUE / 1000, 0).ttl);
    }

    @Nested
    class Timeline
    {
        private final FakeGateway gateway = Fixtures.twitterGateway();
        private final FlowSpec spec = FlowSpecParser.parse(Fixtures.TIMELINE, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null, null, () -> gateway.nowSeconds * 1000 + 250);

        Timeline()
        {
            gateway.nowSeconds = WRITTEN;
            for (long follower = 100; follower < 105; follower++)
                gateway.insert("twitter", "followers", row("user_id", 42L, "follower_id", follower), 1);
        }

        private Task tweet(long ts, String body, Map<String, Long> expirations, long rowExpiresAt)
        {
            return gateway.applied("twitter", "tweets", new Task(spec.name, spec.version, List.of(bigint(7)), Operation.INSERT, ts,
                            row("tweet_id", 7L, "author_id", 42L, "body", body), expirations, rowExpiresAt, 0));
        }

        private List<Long> owners()
        {
            return gateway.rows("twitter", "timeline").stream().map(r -> longOf(r.get("user_id"))).sorted().collect(Collectors.toList());
        }

        private List<ByteBuffer> timelineKey(long user)
        {
            return List.of(bigint(user), bigint(7));
        }

        @Test
        void shouldGiveTheDirectAndFannedOutRowsTheRemainingTtlOfAnInsert()
        {
            long expires = WRITTEN + 20;
            Task insert = tweet(1000, "hi", Map.of("author_id", expires, "body", expires), expires);
            gateway.nowSeconds = WRITTEN + 5; // the task runs 5.25 s after the write
            assertSuccess(runAll(executor, insert));

            assertEquals(List.of(42L, 100L, 101L, 102L, 103L, 104L), owners());
            for (long user : List.of(42L, 100L, 104L))
            {
                assertEquals(14, gateway.markerTtl("twitter", "timeline", timelineKey(user)), "20 - 5.25, rounded down");
                assertEquals(14, gateway.ttl("twitter", "timeline", timelineKey(user), "body"));
            }
            assertTrue(gateway.executed.contains("INSERT INTO \"twitter\".\"timeline\" (\"user_id\", \"tweet_id\", \"author_id\", \"body\") "
                                                 + "VALUES (?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?"));
            assertEquals(1000, gateway.table("twitter", "timeline").cells.values().iterator().next().get("body").ts);

            gateway.nowSeconds = expires - 1; // the derived rows expire with the source, at the latest
            assertEquals(List.of(), owners());
        }

        @Test
        void shouldWriteRowsWithoutTtlForASourceWithoutOne()
        {
            assertSuccess(runAll(executor, tweet(1000, "hi", Map.of(), 0)));
            assertEquals(List.of(42L, 100L, 101L, 102L, 103L, 104L), owners());
            assertNull(gateway.markerTtl("twitter", "timeline", timelineKey(100)));
            assertNull(gateway.ttl("twitter", "timeline", timelineKey(100), "body"));
            assertFalse(gateway.executed.stream().anyMatch(cql -> cql.contains("TTL ?")), gateway.executed.toString());
            gateway.nowSeconds += 1_000_000;
            assertEquals(6, owners().size());
        }

        @Test
        void shouldGiveEachDerivedCellTheTtlOfItsSourceCell()
        {
            Task insert = tweet(1000, "hi", Map.of("author_id", WRITTEN + 50, "body", WRITTEN + 30, "views", WRITTEN + 3), 0);
            assertSuccess(runAll(executor, insert));
            assertNull(gateway.markerTtl("twitter", "timeline", timelineKey(101)), "the insert set its row marker without TTL");
            assertEquals(29, gateway.ttl("twitter", "timeline", timelineKey(101), "body"), "body's 30 s, less the started second");
            assertEquals(49, gateway.ttl("twitter", "timeline", timelineKey(101), "author_id"));
            gateway.nowSeconds = WRITTEN + 40;
            assertNull(gateway.rows("twitter", "timeline").get(0).get("body"), "the body expired with its source cell; the row lives on");
        }

        @Test
        void shouldKeepTheTtlAndWriteTimeOfAColumnReadBackFromTheSource()
        {
            // the tweet was inserted with a TTL of 100 s; an update without TTL changes only its body
            gateway.insert("twitter", "tweets", row("tweet_id", 7L, "author_id", 42L, "body", "old"), 900, 100);
            gateway.nowSeconds = WRITTEN + 10;
            Task update = new Task(spec.name, spec.version, List.of(bigint(7)), Operation.UPDATE, 1000,
                                   row("tweet_id", 7L, "body", "new"), Map.of(), 0, 0);
            assertSuccess(runAll(executor, update));
            assertEquals("new", string(gateway.rows("twitter", "timeline").get(0).get("body")));
            assertNull(gateway.ttl("twitter", "timeline", timelineKey(42), "body"), "the update set the body without TTL");
            assertEquals(89, gateway.ttl("twitter", "timeline", timelineKey(42), "author_id"),
                         "the author read back expires in 90 s, and so does its copy");
        }

        @Test
        void shouldWriteWhatTheSourceMadeOfCellsThatExpiredBeforeTheTaskRan()
        {
            assertSuccess(runAll(executor, tweet(900, "older", Map.of(), 0)));     // an older image, without TTL
            assertEquals(6, owners().size());
            long expires = WRITTEN + 20;
            Task late = tweet(1000, "hi", Map.of("author_id", expires, "body", expires), expires);
            gateway.nowSeconds = expires + 60;                                     // a takeover, long after
            assertSuccess(runAll(executor, late));
            gateway.nowSeconds += 1;                                               // the expired marker's second

            assertEquals(List.of(), owners(), "neither the expired tweet nor the image it overwrote comes back");
            for (Map<String, FakeGateway.Cell> cells : gateway.table("twitter", "timeline").cells.values())
            {
                assertEquals(1000, cells.get("body").ts, "a tombstone at the source write's timestamp: a newer write still wins");
                assertNull(cells.get("body").value);
            }
        }

        @Test
        void shouldLeaveRowsOfANewerWriteAloneWhenAnOlderExpiredTaskRuns()
        {
            assertSuccess(runAll(executor, tweet(2000, "newer", Map.of(), 0)));
            Task late = tweet(1000, "hi", Map.of("body", WRITTEN + 1), WRITTEN + 1);
            gateway.nowSeconds = WRITTEN + 60;
            assertSuccess(runAll(executor, late));
            assertEquals(6, owners().size());
            assertEquals(text("newer"), gateway.rows("twitter", "timeline").get(0).get("body"));
        }
    }

    @Nested
    class UsersByName
    {
        private final FakeGateway gateway = Fixtures.usersGateway();
        private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null, null, () -> gateway.nowSeconds * 1000);

        UsersByName()
        {
            gateway.nowSeconds = WRITTEN;
        }

        private Task named(String name, long ts, long expiresAt)
        {
            Map<String, Long> expirations = expiresAt == 0 ? Map.of() : Map.of("name", expiresAt, "email", expiresAt);
            return gateway.applied("app", "users", new Task(spec.name, spec.version, List.of(bigint(1)), Operation.INSERT, ts,
                            row("id", 1L, "name", name, "email", name + "@x"), expirations, expiresAt, 0));
        }

        private List<String> names()
        {
            return gateway.rows("app", "users_by_name").stream().map(r -> string(r.get("name"))).sorted().collect(Collectors.toList());
        }

        /** The TTLs left of the live lineage entries; 0 for one without TTL. */
        private List<Long> lineageTtls()
        {
            FakeGateway.Table lineage = gateway.table(Cql.KEYSPACE, "lineage");
            return lineage.keys.keySet().stream()
                          .filter(id -> lineage.visible(id) != null)
                          .map(id -> lineage.cells.get(id).get("ts").expiresAt)
                          .map(at -> at == Long.MAX_VALUE ? 0 : at - gateway.nowSeconds)
                          .sorted().collect(Collectors.toList());
        }

        @Test
        void shouldGiveTheIndexRowTheTtlAndItsLineageEntryTheTtlAndAGrace()
        {
            assertSuccess(runAll(executor, named("ann", 1000, WRITTEN + 20)));
            assertEquals(List.of("ann"), names());
            assertEquals(20, gateway.markerTtl("app", "users_by_name", List.of(text("ann"), bigint(1))));
            assertEquals(List.of(20L + Lineage.EXPIRED_ROW_GRACE_SECONDS), lineageTtls(),
                         "the entry outlives its row by a grace, and goes by itself");
            gateway.nowSeconds = WRITTEN + 20;
            assertEquals(List.of(), names());
        }

        @Test
        void shouldNotBringBackAnOlderImageWhenItsTaskRunsAfterTheNewerOneExpired()
        {
            assertSuccess(runAll(executor, named("bob", 2000, WRITTEN + 20)));
            gateway.nowSeconds = WRITTEN + 600;            // bob expired, with the source's name
            assertSuccess(runAll(executor, named("ann", 1000, 0)));  // an older write's task, run late
            assertEquals(List.of(), names(), "the source's name expired at 2000, which shadows ann's at 1000");
        }

        @Test
        void shouldRecordASentinelAndDeleteOlderImagesWhenTheSourceExpiredBeforeTheTaskRan()
        {
            assertSuccess(runAll(executor, named("ann", 1000, 0)));
            assertEquals(List.of("ann"), names());
            gateway.nowSeconds = WRITTEN + 600;
            assertSuccess(runAll(executor, named("bob", 2000, WRITTEN + 20)));
            assertEquals(List.of(), names(), "bob expired unseen, and ann was overwritten by him at the source");
            assertEquals(List.of(), lineageTtls(), "no entry is left: the row has no image, and ann's rows and entry went");
        }
    }
}
