package org.asynctriggers.spec;

import java.util.EnumSet;
import java.util.List;
import java.util.function.Consumer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlowSpecParserTest
{
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private static ObjectNode base(String json)
    {
        try
        {
            return (ObjectNode) MAPPER.readTree(json);
        }
        catch (Exception e)
        {
            throw new AssertionError(e);
        }
    }

    static void assertRejected(String expected, Consumer<ObjectNode> edit)
    {
        ObjectNode spec = base(Fixtures.TIMELINE);
        edit.accept(spec);
        FlowSpecException e = assertThrows(FlowSpecException.class, () -> FlowSpecParser.parse(spec.toString(), "twitter_timeline", 1));
        assertEquals(expected, e.getMessage());
    }

    static FlowSpec parsed(Consumer<ObjectNode> edit)
    {
        ObjectNode spec = base(Fixtures.TIMELINE);
        edit.accept(spec);
        return FlowSpecParser.parse(spec.toString(), "twitter_timeline", 1);
    }

    private static ObjectNode target(ObjectNode spec, int i)
    {
        return (ObjectNode) spec.get("targets").get(i);
    }

    @Test
    void shouldParseTheDesignExample()
    {
        FlowSpec spec = FlowSpecParser.parse(Fixtures.TIMELINE, "twitter_timeline", 42);
        assertEquals("twitter_timeline", spec.name);
        assertEquals(42, spec.version);
        assertEquals("tweets", spec.source.table);
        assertEquals(EnumSet.allOf(Operation.class), spec.events);
        assertEquals(ConsistencyLevel.QUORUM, spec.writeConsistency);
        assertEquals(100, spec.queueCapacity);
        assertEquals(2, spec.workers);
        assertEquals(3, spec.pageSize);
        assertNull(spec.handler);
        assertEquals(2, spec.targets.size());
        assertEquals("row.follower_id", spec.targets.get(1).columns.get("user_id").toString());
        assertEquals("followers", spec.targets.get(1).fanout.table);
    }

    @Test
    void shouldApplyDefaultsForOptionalOptions()
    {
        ObjectNode spec = base(Fixtures.USERS_BY_NAME);
        FlowSpec parsed = FlowSpecParser.parse(spec.toString(), null, 1);
        assertEquals(FlowSpecParser.DEFAULT_CAPACITY, parsed.queueCapacity);
        assertEquals(FlowSpecParser.DEFAULT_WORKERS, parsed.workers);
        assertEquals(FlowSpecParser.DEFAULT_PAGE_SIZE, parsed.pageSize);
        assertEquals(ConsistencyLevel.ONE, parsed.readConsistency);
        assertEquals(FlowSpec.Mode.LINEAGE, parsed.targets.get(0).mode);
    }

    @Test
    void shouldRejectInvalidJson()
    {
        FlowSpecException e = assertThrows(FlowSpecException.class, () -> FlowSpecParser.parse("{", "f", 1));
        assertEquals("flow 'f': spec is not valid JSON at line 1, column 2: Unexpected end-of-input: expected close marker for Object", e.getMessage());
    }

    @Test
    void shouldRejectANameOtherThanTheRowName()
    {
        assertRejected("flow 'twitter_timeline': 'name' must match the flow's row, found: 'other'", s -> s.put("name", "other"));
    }

    @Test
    void shouldRequireName()
    {
        assertRejected("flow 'twitter_timeline': 'name' is required", s -> s.remove("name"));
    }

    @Test
    void shouldRequireSourceKeyspace()
    {
        assertRejected("flow 'twitter_timeline': 'source.keyspace' is required", s -> ((ObjectNode) s.get("source")).remove("keyspace"));
    }

    @Test
    void shouldRequireSourcePartitionKeyInColumns()
    {
        assertRejected("flow 'twitter_timeline': 'source.partition_key' names 'nope', which is not in 'source.columns'",
                       s -> ((ObjectNode) s.get("source")).putArray("partition_key").add("nope"));
    }

    @Test
    void shouldRejectEmptySourceColumns()
    {
        assertRejected("flow 'twitter_timeline': 'source.columns' must be a non-empty object of column name to CQL type, found: {}",
                       s -> ((ObjectNode) s.get("source")).putObject("columns"));
    }

    @Test
    void shouldRejectUnknownEvent()
    {
        assertRejected("flow 'twitter_timeline': 'events' contains unknown event \"upsert\" (expected insert, update or delete)",
                       s -> s.putArray("events").add("insert").add("upsert"));
    }

    @Test
    void shouldRejectEmptyEvents()
    {
        assertRejected("flow 'twitter_timeline': 'events' must be a non-empty list of insert, update, delete, found: []",
                       s -> s.putArray("events"));
    }

    @Test
    void shouldRejectUnknownReadConsistency()
    {
        assertRejected("flow 'twitter_timeline': 'read_consistency' must be one of ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL, LOCAL_ONE, NODE_LOCAL, found: \"MOST\"",
                       s -> s.put("read_consistency", "MOST"));
    }

    @Test
    void shouldRejectNodeLocalConsistency()
    {
        assertRejected("flow 'twitter_timeline': 'write_consistency' cannot be NODE_LOCAL (derived rows go to their replicas; "
                       + "for the nearest data center only, LOCAL_ONE or LOCAL_QUORUM), found: \"NODE_LOCAL\"",
                       s -> s.put("write_consistency", "NODE_LOCAL"));
    }

    @Test
    void shouldAcceptTheDataCenterLevels()
    {
        ObjectNode spec = base(Fixtures.TIMELINE);
        spec.put("read_consistency", "local_one").put("write_consistency", "LOCAL_QUORUM");
        FlowSpec parsed = FlowSpecParser.parse(spec.toString(), null, 1);
        assertEquals(ConsistencyLevel.LOCAL_ONE, parsed.readConsistency);
        assertEquals(ConsistencyLevel.LOCAL_QUORUM, parsed.writeConsistency);
        spec.put("read_consistency", "EACH_QUORUM").put("write_consistency", "EACH_QUORUM");
        assertEquals(ConsistencyLevel.EACH_QUORUM, FlowSpecParser.parse(spec.toString(), null, 1).writeConsistency);
    }

    @Test
    void shouldRejectSerialWriteConsistency()
    {
        assertRejected("flow 'twitter_timeline': 'write_consistency' cannot be a serial consistency, found: \"SERIAL\"",
                       s -> s.put("write_consistency", "SERIAL"));
    }

    @Test
    void shouldRejectZeroQueueCapacity()
    {
        assertRejected("flow 'twitter_timeline': 'queue.capacity' must be strictly positive, found: 0",
                       s -> ((ObjectNode) s.get("queue")).put("capacity", 0));
    }

    @Test
    void shouldRejectNonIntegerQueueCapacity()
    {
        assertRejected("flow 'twitter_timeline': 'queue.capacity' must be an integer, found: \"big\"",
                       s -> ((ObjectNode) s.get("queue")).put("capacity", "big"));
    }

    @Test
    void shouldRejectNegativeQueueWorkers()
    {
        assertRejected("flow 'twitter_timeline': 'queue.workers' must be strictly positive, found: -1",
                       s -> ((ObjectNode) s.get("queue")).put("workers", -1));
    }

    @Test
    void shouldRejectZeroPageSize()
    {
        assertRejected("flow 'twitter_timeline': 'page_size' must be strictly positive, found: 0", s -> s.put("page_size", 0));
    }

    @Test
    void shouldRejectNegativeStartDelay()
    {
        assertRejected("flow 'twitter_timeline': 'start_delay_ms' must be a non-negative integer, found: -1", s -> s.put("start_delay_ms", -1));
    }

    @Test
    void shouldRejectHandlerThatIsNotAClassName()
    {
        assertRejected("flow 'twitter_timeline': 'handler' must be a fully qualified class name, found: \"not a class\"",
                       s -> { s.put("handler", "not a class"); s.remove("targets"); });
    }

    @Test
    void shouldRejectHandlerWithTargets()
    {
        assertRejected("flow 'twitter_timeline': 'handler' and 'targets' are mutually exclusive", s -> s.put("handler", "com.example.H"));
    }

    @Test
    void shouldRequireHandlerOrTargets()
    {
        assertRejected("flow 'twitter_timeline': one of 'handler' or 'targets' is required", s -> s.remove("targets"));
    }

    @Test
    void shouldAcceptHandlerWithoutTargets()
    {
        ObjectNode spec = base(Fixtures.TIMELINE);
        spec.put("handler", "com.example.MyHandler");
        spec.remove("targets");
        assertEquals("com.example.MyHandler", FlowSpecParser.parse(spec.toString(), null, 1).handler);
    }

    @Test
    void shouldRejectUnknownExpression()
    {
        assertRejected("flow 'twitter_timeline': unknown expression 'foo.bar' for column 'body' (expected source.<column> or row.<column>)",
                       s -> ((ObjectNode) target(s, 0).get("columns")).put("body", "foo.bar"));
    }

    @Test
    void shouldRejectExpressionOnUnknownSourceColumn()
    {
        assertRejected("flow 'twitter_timeline': expression 'source.title' for column 'body' names a column not in 'source.columns'",
                       s -> ((ObjectNode) target(s, 0).get("columns")).put("body", "source.title"));
    }

    @Test
    void shouldRejectRowExpressionWithoutFanout()
    {
        assertRejected("flow 'twitter_timeline': expression 'row.follower_id' for column 'user_id' needs a 'fanout'",
                       s -> ((ObjectNode) target(s, 0).get("columns")).put("user_id", "row.follower_id"));
    }

    @Test
    void shouldRejectRowExpressionOutsideFanoutColumns()
    {
        assertRejected("flow 'twitter_timeline': expression 'row.since' for column 'user_id' names a column not in 'fanout.columns'",
                       s -> ((ObjectNode) target(s, 1).get("columns")).put("user_id", "row.since"));
    }

    @Test
    void shouldRequireAnExpressionForEveryTargetKeyColumn()
    {
        assertRejected("flow 'twitter_timeline': 'targets[0].columns' has no expression for key column 'user_id'",
                       s -> ((ObjectNode) target(s, 0).get("columns")).remove("user_id"));
    }

    @Test
    void shouldRequireTargetTable()
    {
        assertRejected("flow 'twitter_timeline': 'targets[1].table' is required", s -> target(s, 1).remove("table"));
    }

    @Test
    void shouldRejectUnknownMode()
    {
        assertRejected("flow 'twitter_timeline': 'targets[0].mode' must be one of direct, lineage, found: \"index\"",
                       s -> target(s, 0).put("mode", "index"));
    }

    @Test
    void shouldDeriveTheLineageColumnsOfAFanoutFromItsMatch()
    {
        FlowSpec spec = parsed(s -> target(s, 1).put("mode", "lineage"));
        assertEquals(List.of("author_id"), spec.targets.get(1).lineageColumns);
    }

    @Test
    void shouldRejectALineageColumnThatIsASourceKey()
    {
        assertRejected("flow 'twitter_timeline': 'targets[1].lineage_columns' names 'tweet_id', which is not a non-key column of the source",
                       s -> target(s, 1).put("mode", "lineage").putArray("lineage_columns").add("author_id").add("tweet_id"));
    }

    @Test
    void shouldRejectLineageColumnsThatMissAKeyDependency()
    {
        assertRejected("flow 'twitter_timeline': 'targets[1].lineage_columns' must include every non-key source column of the target key and fan-out, expected: [author_id], found: [body]",
                       s -> target(s, 1).put("mode", "lineage").putArray("lineage_columns").add("body"));
    }

    @Test
    void shouldParseTheSpecificationsCtlRenders() throws Exception
    {
        // the golden files of the control plane's rendering tests: what `ctl trigger render` produces
        java.nio.file.Path golden = java.nio.file.Paths.get("..", "tests", "golden");
        FlowSpec timeline = FlowSpecParser.parse(java.nio.file.Files.readString(golden.resolve("twitter_timeline.json")), "twitter_timeline", 1);
        assertEquals(List.of("author_id"), timeline.targets.get(1).lineageColumns);
        assertEquals(FlowSpec.Mode.LINEAGE, timeline.targets.get(1).mode);
        assertTrue(timeline.targets.get(1).joinIndex, "the following fan-out's join index, before the fan-out");
        assertEquals("async_follows_twitter_timeline", timeline.targets.get(2).fanout.follow.table);
        FlowSpec follows = FlowSpecParser.parse(java.nio.file.Files.readString(golden.resolve("twitter_timeline_follows.json")), "twitter_timeline_follows", 1);
        assertEquals("twitter_timeline", follows.follows.flow);
        assertTrue(follows.targets.isEmpty());
        FlowSpec counts = FlowSpecParser.parse(java.nio.file.Files.readString(golden.resolve("twitter_tweet_counts.json")), "twitter_tweet_counts", 1);
        assertTrue(counts.targets.stream().anyMatch(t -> t.aggregate != null && "tweets".equals(t.aggregate.count)));
        FlowSpec index = FlowSpecParser.parse(java.nio.file.Files.readString(golden.resolve("users_by_name.json")), "users_by_name", 1);
        assertEquals(List.of("name"), index.targets.get(0).lineageColumns);
    }

    @Test
    void shouldRejectFanoutWithoutMatch()
    {
        assertRejected("flow 'twitter_timeline': 'targets[1].fanout.match' must be a non-empty object of column name to expression, found: {}",
                       s -> ((ObjectNode) target(s, 1).get("fanout")).putObject("match"));
    }

    @Test
    void shouldRejectFanoutWithoutColumns()
    {
        assertRejected("flow 'twitter_timeline': 'targets[1].fanout.columns' must not be empty",
                       s -> ((ObjectNode) target(s, 1).get("fanout")).putArray("columns"));
    }

    @Test
    void shouldRejectFanoutMatchOnRowExpression()
    {
        assertRejected("flow 'twitter_timeline': expression 'row.follower_id' for column 'user_id' needs a 'fanout'",
                       s -> ((ObjectNode) ((ObjectNode) target(s, 1).get("fanout")).get("match")).put("user_id", "row.follower_id"));
    }

    @Test
    void shouldRejectTargetsThatAreNotAList()
    {
        assertRejected("flow 'twitter_timeline': 'targets' must be a list, found: {\"a\":1}", s -> s.putObject("targets").put("a", 1));
    }
}
