package org.asynctriggers.spec;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The spec of a fan-out that follows its table: the main flow's join index and fan-out, and its companion flow. */
public class FollowSpecTest
{
    private static final String SOURCE = "{\"keyspace\": \"tw\", \"table\": \"tweets\", \"partition_key\": [\"tweet_id\"],"
                                         + " \"clustering\": [], \"columns\": {\"tweet_id\": \"bigint\", \"author_id\": \"bigint\", \"body\": \"text\"}}";
    private static final String INDEX = "{\"keyspace\": \"tw\", \"table\": \"async_join_tl\", \"partition_key\": [\"m0\"],"
                                        + " \"clustering\": [\"k0\"], \"columns\": {\"m0\": \"source.author_id\", \"k0\": \"source.tweet_id\","
                                        + " \"v0\": \"source.body\"}, \"mode\": \"lineage\", \"lineage_columns\": [\"author_id\"], \"join_index\": true}";

    private static String fanout(int index, String mode)
    {
        return "{\"keyspace\": \"tw\", \"table\": \"timeline\", \"partition_key\": [\"user_id\"], \"clustering\": [\"tweet_id\"],"
               + " \"columns\": {\"user_id\": \"row.follower_id\", \"tweet_id\": \"source.tweet_id\", \"body\": \"source.body\"},"
               + " \"fanout\": {\"keyspace\": \"tw\", \"table\": \"followers\", \"match\": {\"user_id\": \"source.author_id\"},"
               + " \"columns\": [\"follower_id\"], \"follow\": {\"index\": " + index + ", \"keyspace\": \"tw\", \"table\": \"async_follows_tl\"}},"
               + " \"mode\": \"" + mode + "\", \"lineage_columns\": [\"author_id\"]}";
    }

    private static FlowSpec main(String targets)
    {
        return FlowSpecParser.parse("{\"name\": \"tl\", \"source\": " + SOURCE + ", \"targets\": [" + targets + "]}", null, 1);
    }

    public static String companion(String targets)
    {
        return "{\"name\": \"tl_follows\", \"source\": {\"keyspace\": \"tw\", \"table\": \"followers\", \"partition_key\": [\"user_id\"],"
               + " \"clustering\": [\"follower_id\"], \"columns\": {\"user_id\": \"bigint\", \"follower_id\": \"bigint\"}}, \"targets\": "
               + targets + ", \"follows\": {\"flow\": \"tl\", \"source\": " + SOURCE + ", \"index\": " + INDEX + ", \"target\": "
               + fanout(0, "lineage") + "}}";
    }

    @Test
    void shouldParseAFlowThatFollowsAndItsCompanion()
    {
        FlowSpec spec = main(INDEX + ", " + fanout(0, "lineage"));
        assertTrue(spec.following());
        assertTrue(spec.targets.get(0).joinIndex);
        assertTrue(spec.targets.get(0).isIndex());
        assertEquals("async_follows_tl", spec.targets.get(1).fanout.follow.table);
        FlowSpec follows = FlowSpecParser.parse(companion("[]"), null, 1);
        assertFalse(follows.following());
        assertEquals("tl", follows.follows.flow);
        assertEquals(java.util.Set.of(), follows.capturedColumns(), "the non-key columns of the fan-out table the target uses: none");
    }

    @Test
    void shouldRefuseAFollowWithoutItsJoinIndexBeforeIt()
    {
        FlowSpecException e = assertThrows(FlowSpecException.class, () -> main(fanout(0, "lineage") + ", " + INDEX));
        assertEquals("flow 'tl': 'targets[0].fanout.follow.index' must name a join index before it, found: 0", e.getMessage());
        e = assertThrows(FlowSpecException.class, () -> main(INDEX + ", " + fanout(0, "direct")));
        assertEquals("flow 'tl': 'targets[1].mode' must be lineage for a fan-out that follows its table", e.getMessage());
    }

    @Test
    void shouldRefuseACompanionWithTargets()
    {
        FlowSpecException e = assertThrows(FlowSpecException.class, () -> FlowSpecParser.parse(companion("[" + INDEX + "]"), null, 1));
        assertEquals("flow 'tl_follows': a flow with 'follows' has no 'targets' and no 'handler'", e.getMessage());
    }

    @Test
    void shouldSpaceVersionsSoThatChangeNumbersFitBetween()
    {
        long k = FlowSpec.Follow.SPACING;
        assertEquals(3 * k, FlowSpec.Follow.versionAtLeast(2 * k + 1));
        assertEquals(2 * k, FlowSpec.Follow.versionAtLeast(2 * k));
        assertTrue(FlowSpec.Follow.MAX_CHANGE < k - 1, "a row through a fan-out row stays below the other steps' rows of its version");
    }
    @Test
    void shouldEndARowAtItsTimeKeyPlusTheRecencyBound()
    {
        String bounded = fanout(0, "lineage").replace("\"table\": \"async_follows_tl\"}",
            "\"table\": \"async_follows_tl\", \"recent\": {\"column\": \"tweet_id\", \"type\": \"timestamp\", \"seconds\": 60}}");
        FlowSpec.Follow follow = main(INDEX + ", " + bounded).targets.get(1).fanout.follow;
        assertEquals("tweet_id", follow.recentColumn);
        // 1,700,000,000,500 ms: whole seconds 1,700,000,000, plus 60
        java.nio.ByteBuffer at = java.nio.ByteBuffer.allocate(8).putLong(0, 1_700_000_000_500L);
        assertEquals(1_700_000_060L, follow.recentExpiresAt(java.util.Map.of("tweet_id", at)));
        assertEquals(0, new FlowSpec.Follow(0, "tw", "c").recentExpiresAt(java.util.Map.of("tweet_id", at)), "no bound");

        // a timeuuid's time, as Cassandra makes one for a millisecond and a tenth of a microsecond in it
        for (long millis : new long[]{ 0L, 1_700_000_000_123L, 4_102_444_800_000L })
        {
            java.nio.ByteBuffer uuid = org.apache.cassandra.utils.TimeUUID.Generator.atUnixMillis(millis, 7).toBytes();
            assertEquals(millis, FlowSpec.Follow.timeMillis("timeuuid", uuid), "millis " + millis);
        }

        String notKey = bounded.replace("\"column\": \"tweet_id\"", "\"column\": \"body\"");
        FlowSpecException e = assertThrows(FlowSpecException.class, () -> main(INDEX + ", " + notKey));
        assertEquals("flow 'tl': 'targets[1].fanout.follow.recent.column' must be a primary key column of the source, found: body",
                     e.getMessage());
        String zero = bounded.replace("\"seconds\": 60", "\"seconds\": 0");
        e = assertThrows(FlowSpecException.class, () -> main(INDEX + ", " + zero));
        assertTrue(e.getMessage().contains("'targets[1].fanout.follow.recent.seconds' must be a whole number of seconds"), e.getMessage());
    }
}
