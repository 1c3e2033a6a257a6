package org.asynctriggers;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.asynctriggers.api.Operation;
import org.asynctriggers.backup.BackupMapStub;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.flows.Flow;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.asynctriggers.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pausing a flow (the {@code paused} column of {@code async_triggers.flows}) on one node wired whole: its tasks are
 * captured but neither queued nor run, whatever its overflow policy; a node that starts while it is paused, or a new
 * version, stays paused; on resume the node queues what waited in its backup map.
 */
class PauseTest
{
    private static final String FLOW = "users_by_name";
    /** long enough for a worker to have taken a task queued by mistake (they poll every 100 ms) */
    private static final long QUIET_MILLIS = 500;

    @BeforeAll
    static void partitioner()
    {
        DatabaseDescriptor.clientInitialization(false);
        DatabaseDescriptor.setPartitionerUnsafe(Murmur3Partitioner.instance);
    }

    private final MBeanServer mbeans = MBeanServerFactory.newMBeanServer();
    private final FakeGateway gateway = Fixtures.usersGateway()
                                                .table("app", BackupTable.companionOf("users"), List.of("key_0"), List.of("flow", "id"));
    private final BackupMapStub backupMap = new BackupMapStub();
    private final TrackingThreadFactory threads = new TrackingThreadFactory();
    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path spillRoot;
    private Node node;
    private long ts = 1;

    @AfterEach
    void shutdown() throws InterruptedException
    {
        if (node != null)
            node.shutdown();
        threads.assertAllEnded(10_000);
    }

    private Node start()
    {
        node = Node.builder(gateway).mbeans(mbeans).threads(threads).spillDirs(spillRoot::resolve)
                   .jitter((min, max) -> max).sleeper(millis -> {}).drainMillis(5_000)
                   .backupTables(spec -> new BackupTable("app", "users", 1, gateway)).scanner(backupMap).build();
        node.control().firstCycle();
        return node;
    }

    /** The flows table's row of the flow, as a deploy (paused null) or ctl trigger pause|resume writes it. */
    private void flowsRow(String spec, long version, Boolean paused)
    {
        gateway.insert(Cql.KEYSPACE, "flows", row("name", FLOW, "spec", spec, "version", version, "paused",
                                                  paused == null ? null : ByteBuffer.wrap(new byte[]{ (byte) (paused ? 1 : 0) })), ts++);
    }

    private static String spec(String overflow)
    {
        return Fixtures.USERS_BY_NAME.replace("\"targets\"", "\"queue\": {\"capacity\": 8, \"workers\": 1}, "
                                                            + "\"overflow\": {\"policy\": \"" + overflow + "\"}, \"targets\"");
    }

    /** Captures writes of users 1..n on this replica: their entries in its backup map, their tasks to its intake. */
    private void captureUsers(int from, int to)
    {
        List<Task> tasks = new ArrayList<>();
        for (long id = from; id <= to; id++)
        {
            Task task = gateway.applied("app", "users", Task.captured(FLOW, new SourceChange(Operation.INSERT, List.of(Fixtures.bigint(id)), 10 + id,
                                                             row("id", id, "name", "user" + id, "email", "e")), System.nanoTime()));
            backupMap.add(task, id, System.currentTimeMillis());
            tasks.add(task);
        }
        node.intake().captured("app", null, tasks, tasks);
    }

    private int derivedRows()
    {
        return gateway.rows("app", FLOW).size();
    }

    private FlowMetrics metrics()
    {
        return node.flows().get(FLOW).metrics;
    }

    private void assertNothingRunsFor(long millis, String why) throws InterruptedException
    {
        Thread.sleep(millis);
        assertEquals(0, derivedRows(), why);
        assertEquals(0, metrics().getActiveTasks() + metrics().getCompletedTasks(), why);
    }

    @Test
    void shouldCaptureButNeitherQueueNorRunAPausedFlowsTasksThenRunThemFromTheBackupMapOnResume() throws Exception
    {
        flowsRow(spec("spill"), 1, null);
        start();
        assertFalse(node.flows().get(FLOW).isPaused());
        flowsRow(spec("spill"), 1, true);
        node.control().cycle();
        assertTrue(node.flows().get(FLOW).isPaused());
        assertTrue(metrics().isPaused());

        captureUsers(1, 10);
        assertEquals(0, node.heldTasks(), "nothing queued here: the entries hold the tasks");
        assertEquals(0, metrics().getPendingTasks() + metrics().getSpilledTasks() + metrics().getDiscardedTasks());
        assertNothingRunsFor(QUIET_MILLIS, "paused");
        node.control().cycle();
        ByteBuffer reported = gateway.rows(Cql.KEYSPACE, "flow_status").get(0).get("paused");
        assertEquals(1, reported.get(0), "the status row says paused");

        flowsRow(spec("spill"), 1, false);
        node.control().cycle();
        assertFalse(metrics().isPaused());
        waitFor(() -> derivedRows() == 10);
        waitFor(() -> gateway.table("app", BackupTable.companionOf("users")).tombstones.size() == 10);
        assertEquals(10, metrics().getRecoveredTasks(), "queued from the backup map by the scan that followed the resume");
    }

    @Test
    void shouldStartPausedWhenTheFlowIsPausedAtBootAndScanWithoutQueueing() throws Exception
    {
        flowsRow(spec("spill"), 1, true);
        // entries this replica wrote before it restarted (commit log replay restores them)
        start();
        captureUsers(1, 3);
        waitFor(() -> backupMap.scans > 0);
        assertTrue(node.flows().get(FLOW).isPaused(), "started paused: its workers never took a task");
        assertNothingRunsFor(QUIET_MILLIS, "paused at boot");
        assertEquals(0, metrics().getRecoveredTasks(), "the start scan queued nothing of a paused flow");

        flowsRow(spec("spill"), 1, false);
        node.control().cycle();
        waitFor(() -> derivedRows() == 3);
    }

    @Test
    void shouldKeepANewVersionOfAPausedFlowPaused() throws Exception
    {
        flowsRow(spec("spill"), 1, true);
        start();
        Flow first = node.flows().get(FLOW);
        captureUsers(1, 2);
        flowsRow(spec("spill"), 2, null); // a redeploy: its INSERT leaves paused as it was
        gateway.insert(Cql.KEYSPACE, "flows", row("name", FLOW, "paused", ByteBuffer.wrap(new byte[]{ 1 })), ts++);
        node.control().cycle();
        assertNotSame(first, node.flows().get(FLOW));
        assertEquals(2L, node.flows().get(FLOW).spec.version);
        assertTrue(node.flows().get(FLOW).isPaused());
        captureUsers(3, 4);
        assertNothingRunsFor(QUIET_MILLIS, "the new version is paused too");

        flowsRow(spec("spill"), 2, false);
        node.control().cycle();
        waitFor(() -> derivedRows() == 4);
    }

    @Test
    void shouldNeitherDiscardNorBlockBecauseOfAPause() throws Exception
    {
        for (String policy : List.of("discard", "block"))
        {
            flowsRow(spec(policy), 1, true);
            start();
            int first = 1 + 100 * (policy.equals("block") ? 1 : 0);
            captureUsers(first, first + 19); // more than twice the queue's capacity
            node.flows().admit("app", "users"); // the coordinator: a full queue of a block flow would throw here
            assertEquals(0, metrics().getDiscardedTasks(), policy);
            assertEquals(0, metrics().getCurrentlyBlockedTasks() + metrics().getTotalBlockedTasks(), policy);
            flowsRow(spec(policy), 1, false);
            node.control().cycle();
            // a discard flow takes what fits its queue from each scan (a scan every 5 s while entries are left)
            waitFor(() -> {
                node.control().cycle();
                return derivedRows() == 20 * (policy.equals("block") ? 2 : 1);
            });
            assertEquals(0, metrics().getDiscardedTasks(), policy + ": what the resume's scan read back is never discarded");
            node.shutdown();
            node = null;
        }
    }

    @Test
    void shouldStopAPausedFlowAtOnceWhenItIsDropped() throws Exception
    {
        flowsRow(spec("spill"), 1, true);
        start();
        gateway.execute(gateway.prepare(Cql.delete(Cql.KEYSPACE, "flows", List.of("name"))), org.apache.cassandra.db.ConsistencyLevel.ONE,
                        List.of(Fixtures.bigint(ts++), Fixtures.text(FLOW)));
        long started = System.nanoTime();
        node.control().cycle();
        assertEquals(null, node.flows().get(FLOW));
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(3), "a paused pool does not wait to drain");
    }

    private static void waitFor(Await.Condition condition) throws Exception
    {
        Await.until(condition, 30);
    }
}
