package org.asynctriggers.testing;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/** Small builders shared by the tests. */
public final class Fixtures
{
    private Fixtures()
    {
    }

    public static ByteBuffer bigint(long v)
    {
        return ByteBuffer.allocate(8).putLong(0, v);
    }

    public static ByteBuffer text(String s)
    {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    public static String string(ByteBuffer b)
    {
        return b == null ? null : StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }

    public static long longOf(ByteBuffer b)
    {
        return b.getLong(b.position());
    }

    /** name, value, name, value... (values are ByteBuffer, String, Long) */
    public static Map<String, ByteBuffer> row(Object... pairs)
    {
        Map<String, ByteBuffer> out = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2)
        {
            Object v = pairs[i + 1];
            out.put((String) pairs[i], v == null ? null : v instanceof ByteBuffer ? (ByteBuffer) v
                                                          : v instanceof String ? text((String) v) : bigint((Long) v));
        }
        return out;
    }

    public static Task task(FlowSpec spec, Operation op, long ts, List<ByteBuffer> key, Map<String, ByteBuffer> values)
    {
        return new Task(spec.name, spec.version, key, op, ts, values, 0);
    }

    /** The design.md example, twitter timeline (direct + fan-out). */
    public static final String TIMELINE = "{\"name\": \"twitter_timeline\","
        + "\"source\": {\"keyspace\": \"twitter\", \"table\": \"tweets\", \"partition_key\": [\"tweet_id\"], \"clustering\": [],"
        + "  \"columns\": {\"tweet_id\": \"bigint\", \"author_id\": \"bigint\", \"body\": \"text\"}},"
        + "\"events\": [\"insert\", \"update\", \"delete\"],"
        + "\"read_consistency\": \"ONE\", \"write_consistency\": \"QUORUM\","
        + "\"queue\": {\"capacity\": 100, \"workers\": 2}, \"page_size\": 3, \"handler\": null,"
        + "\"targets\": ["
        + " {\"keyspace\": \"twitter\", \"table\": \"timeline\", \"partition_key\": [\"user_id\"], \"clustering\": [\"tweet_id\"],"
        + "  \"columns\": {\"user_id\": \"source.author_id\", \"tweet_id\": \"source.tweet_id\", \"author_id\": \"source.author_id\", \"body\": \"source.body\"},"
        + "  \"fanout\": null, \"mode\": \"direct\"},"
        + " {\"keyspace\": \"twitter\", \"table\": \"timeline\", \"partition_key\": [\"user_id\"], \"clustering\": [\"tweet_id\"],"
        + "  \"columns\": {\"user_id\": \"row.follower_id\", \"tweet_id\": \"source.tweet_id\", \"author_id\": \"source.author_id\", \"body\": \"source.body\"},"
        + "  \"fanout\": {\"keyspace\": \"twitter\", \"table\": \"followers\", \"match\": {\"user_id\": \"source.author_id\"}, \"columns\": [\"follower_id\"]},"
        + "  \"mode\": \"direct\"}]}";

    /** The index users -> users_by_name (lineage). */
    public static final String USERS_BY_NAME = "{\"name\": \"users_by_name\","
        + "\"source\": {\"keyspace\": \"app\", \"table\": \"users\", \"partition_key\": [\"id\"], \"clustering\": [],"
        + "  \"columns\": {\"id\": \"bigint\", \"name\": \"text\", \"email\": \"text\"}},"
        + "\"targets\": [{\"keyspace\": \"app\", \"table\": \"users_by_name\", \"partition_key\": [\"name\"], \"clustering\": [\"id\"],"
        + "  \"columns\": {\"name\": \"source.name\", \"id\": \"source.id\", \"email\": \"source.email\"}, \"mode\": \"lineage\"}]}";

    public static FakeGateway twitterGateway()
    {
        return new FakeGateway().withAsyncTriggersKeyspace()
                                .table("twitter", "tweets", List.of("tweet_id"), List.of())
                                .table("twitter", "timeline", List.of("user_id"), List.of("tweet_id"))
                                .table("twitter", "followers", List.of("user_id"), List.of("follower_id"));
    }

    public static FakeGateway usersGateway()
    {
        return new FakeGateway().withAsyncTriggersKeyspace()
                                .table("app", "users", List.of("id"), List.of())
                                .table("app", "users_by_name", List.of("name"), List.of("id"));
    }
}
