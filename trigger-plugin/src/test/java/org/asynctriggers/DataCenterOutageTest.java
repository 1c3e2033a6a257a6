package org.asynctriggers;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.PeerStatus;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.asynctriggers.testing.TwoDataCenters;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A node in dc2 while the whole of dc1 is down (every keyspace replicated 3 + 3): a statement at a level that needs a
 * dc1 replica fails as Unavailable. The node's own statements go on, and so does a flow at LOCAL_* levels; only a
 * lineage target waits, without spending attempts, until dc1 is back.
 */
class DataCenterOutageTest
{
    private static final ObjectName TIMELINE_FLOW = FlowMetrics.objectName("twitter", "tweets", "twitter_timeline");
    private static final ObjectName USERS_FLOW = FlowMetrics.objectName("app", "users", "users_by_name");
    private static final String LOCAL_TIMELINE = Fixtures.TIMELINE.replace(
        "\"read_consistency\": \"ONE\", \"write_consistency\": \"QUORUM\"",
        "\"read_consistency\": \"LOCAL_ONE\", \"write_consistency\": \"LOCAL_QUORUM\"");
    private static final String SELF = "127.0.0.1";

    private final MBeanServer mbeans = MBeanServerFactory.newMBeanServer();
    private final FakeGateway gateway = Fixtures.usersGateway()
                                                .table("twitter", "tweets", List.of("tweet_id"), List.of())
                                                .table("twitter", "timeline", List.of("user_id"), List.of("tweet_id"))
                                                .table("twitter", "followers", List.of("user_id"), List.of("follower_id"))
                                                .table("twitter", "async_backup_tweets", List.of("key_0"), List.of("flow", "id"));
    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path spillRoot;
    private Node node;

    {
        gateway.reachable = new TwoDataCenters(3, 3).reachableFrom(TwoDataCenters.DC2, TwoDataCenters.DC1);
    }

    private Node start()
    {
        node = Node.builder(gateway).mbeans(mbeans).threads(new TrackingThreadFactory()).spillDirs(spillRoot::resolve)
                   .jitter((min, max) -> max).sleeper(millis -> {}).wallClock(() -> 1_000L).nodeName(() -> SELF)
                   .backupTables(spec -> spec.source.table.equals("tweets") ? new BackupTable("twitter", "tweets", 1, gateway) : null)
                   .build();
        node.control().firstCycle();
        return node;
    }

    @AfterEach
    void shutdown()
    {
        if (node != null)
            node.shutdown();
    }

    private void deploy(String name, String spec)
    {
        gateway.insert(Cql.KEYSPACE, "flows", row("name", name, "spec", spec, "version", 1L), 1);
    }

    private static Task tweet(long id)
    {
        return Task.captured("twitter_timeline", new SourceChange(Operation.INSERT, List.of(bigint(id)), 10,
                                                                  row("tweet_id", id, "author_id", 42L, "body", "hi")), System.nanoTime());
    }

    /** The entry a replica's capture writes beside the source row. */
    private void backupEntry(Task task)
    {
        ByteBuffer id = ByteBuffer.allocate(16).putLong(0, task.id().getMostSignificantBits()).putLong(8, task.id().getLeastSignificantBits());
        gateway.insert("twitter", "async_backup_tweets", row("key_0", task.key().get(0), "flow", task.flow(), "id", id,
                                                             "task", task.serialize()), task.timestamp());
    }

    private boolean everyStatementReachable()
    {
        synchronized (gateway)
        {
            return gateway.consistencies.stream().allMatch(gateway.reachable);
        }
    }

    @Test
    void shouldApplyRunCompleteAndReportAFlowWhileTheOtherDataCenterIsDown() throws Exception
    {
        deploy("twitter_timeline", LOCAL_TIMELINE);
        start();
        assertTrue(node.flows().watches("twitter", "tweets"), "the flows table was read");
        Task task = tweet(7);
        backupEntry(task);
        node.intake().captured("twitter", null, List.of(task), List.of(task));

        waitFor(() -> (Long) mbeans.getAttribute(TIMELINE_FLOW, "CompletedTasks") == 1L);
        assertEquals(1, gateway.rows("twitter", "timeline").size());
        assertEquals(0, gateway.rows("twitter", "async_backup_tweets").size(), "the entry is deleted (hints carry it to dc1)");
        node.control().cycle();
        assertEquals(SELF, Fixtures.string(gateway.rows(Cql.KEYSPACE, "flow_status").get(0).get("node")));
        assertTrue(everyStatementReachable(), "statements: " + gateway.consistencies);
    }

    @Test
    void shouldWriteAndServeADeadLetterWhileTheOtherDataCenterIsDown() throws Exception
    {
        deploy("twitter_timeline", LOCAL_TIMELINE);
        start();
        assertTrue(new DeadLetters(gateway, () -> SELF, () -> 1_000L).write(tweet(8), 5, new IllegalStateException("poisoned"), "test"));
        Map<String, ByteBuffer> letter = gateway.rows(Cql.KEYSPACE, "dead_letters").get(0);
        gateway.insert(Cql.KEYSPACE, "dead_letter_retries", row("node", SELF, "flow", "twitter_timeline", "id", letter.get("id")), 5);

        node.control().cycle();

        waitFor(() -> (Long) mbeans.getAttribute(TIMELINE_FLOW, "CompletedTasks") == 1L);
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letter_retries").size());
        assertTrue(everyStatementReachable(), "statements: " + gateway.consistencies);
    }

    @Test
    void shouldReadThePeersReportsWhileTheOtherDataCenterIsDown()
    {
        gateway.insert(Cql.KEYSPACE, "flow_status", row("flow", "twitter_timeline", "node", "127.0.0.2", "pending", 0L,
                                                        "active", 0L, "last_scan", 900L, "updated", 1_000L), 1);
        PeerStatus peers = new PeerStatus(gateway, () -> 1_000L);
        peers.refresh();
        assertTrue(peers.idleAndScannedSince("twitter_timeline", "127.0.0.2", 900, 10_000));
    }

    @Test
    void shouldKeepALineageTaskWaitingWithoutSpendingAttemptsUntilTheOtherDataCenterIsBack() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME);
        start();
        node.intake().captured("app", null, List.of(gateway.applied("app", "users", Task.captured("users_by_name", new SourceChange(
            Operation.INSERT, List.of(bigint(1)), 10, row("id", 1L, "name", "ann", "email", "e")), System.nanoTime()))), List.of());

        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "RetriedTasks") >= 1L);
        synchronized (gateway)
        {
            assertTrue(gateway.consistencies.contains(ConsistencyLevel.EACH_QUORUM), "the image is written in both data centers");
        }
        assertEquals(0L, mbeans.getAttribute(USERS_FLOW, "FailedTasks"));
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());

        gateway.reachable = level -> true;
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        assertEquals("ann", Fixtures.string(gateway.rows("app", "users_by_name").get(0).get("name")));
    }

    private static void waitFor(Await.Condition condition) throws Exception
    {
        Await.until(condition, 10);
    }
}
