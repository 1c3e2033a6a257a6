// Long: one node wired whole, from the flows table to completed tasks and dead letters; the tests share its fixture (gateway, MBean server, spill root, shutdown of both nodes).
package org.asynctriggers;

import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.backup.ExecutorChoice;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.metrics.CassandraMetrics;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.metrics.NodeStatus;
import org.asynctriggers.queue.QueueFullException;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetriesTest;
import org.asynctriggers.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NodeTest
{
    private static final ObjectName USERS_FLOW = FlowMetrics.objectName("app", "users", "users_by_name");
    private static final String TIMELINE_ROW = Fixtures.TIMELINE;

    private final MBeanServer mbeans = MBeanServerFactory.newMBeanServer();
    private final FakeGateway gateway = Fixtures.usersGateway()
                                                .table("twitter", "tweets", List.of("tweet_id"), List.of())
                                                .table("twitter", "timeline", List.of("user_id"), List.of("tweet_id"))
                                                .table("twitter", "followers", List.of("user_id"), List.of("follower_id"));
    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path spillRoot;
    private Node first;
    private Node second;

    private Node.Builder builder(TrackingThreadFactory threads, FakeGateway gw)
    {
        return Node.builder(gw).mbeans(mbeans).threads(threads).spillDirs(flow -> spillRoot.resolve(flow))
                             .jitter((min, max) -> max).sleeper(millis -> {}).wallClock(() -> 1_000L).drainMillis(5_000);
    }

    private Node node(TrackingThreadFactory threads, FakeGateway gw)
    {
        return builder(threads, gw).build();
    }

    /** What the capture index hands the node on a replica that applied these changes. */
    private void capture(Node node, String flow, SourceChange... changes)
    {
        List<Task> tasks = new java.util.ArrayList<>();
        for (SourceChange change : changes)
            tasks.add(gateway.applied("app", "users", Task.captured(flow, change, System.nanoTime())));
        node.intake().captured("app", null, tasks, List.of());
    }

    private void deploy(String name, String spec, long version)
    {
        gateway.insert(Cql.KEYSPACE, "flows", row("name", name, "spec", spec, "version", version), version);
    }

    private void undeploy(String name, long ts)
    {
        gateway.execute(gateway.prepare(Cql.delete(Cql.KEYSPACE, "flows", List.of("name"))), ConsistencyLevel.ONE, List.of(bigint(ts), text(name)));
    }

    private static SourceChange userNamed(long id, String name, long ts)
    {
        return new SourceChange(Operation.INSERT, List.of(bigint(id)), ts, row("id", id, "name", name, "email", "e"));
    }

    @AfterEach
    void shutdownNodes()
    {
        if (first != null)
            first.shutdown();
        if (second != null)
            second.shutdown();
    }

    @Test
    void shouldStartFlowsFromTheFlowsTableAndRegisterTheirMBeans() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = node(threads, gateway);
        first.control().firstCycle();

        assertTrue(first.control().isReady());
        assertEquals(first.status().getId(), mbeans.getAttribute(NodeStatus.NAME, "Id"));
        assertEquals(FlowSpecParser.DEFAULT_CAPACITY, mbeans.getAttribute(USERS_FLOW, "QueueCapacity"));
        assertEquals(FlowSpecParser.DEFAULT_WORKERS, mbeans.getAttribute(USERS_FLOW, "MaxPoolSize"));
        for (String attribute : List.of("SpilledTasks", "SpilledPending", "DiscardedTasks", "CurrentlyBlockedTasks", "TotalBlockedTasks"))
            assertEquals(0L, mbeans.getAttribute(USERS_FLOW, attribute), attribute);
        assertEquals(4L, threads.alive(), "two workers, the retry thread and the spill drainer (default overflow policy)");
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-retry") && t.isDaemon()));
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-spill") && t.isDaemon()));
        assertTrue(first.flows().watches("app", "users"));
        assertFalse(first.flows().watches("app", "other"));
    }

    @Test
    void shouldKeepTheTasksOfAFlowNotAppliedYetAndRunThemOnceItIs() throws Exception
    {
        first = node(new TrackingThreadFactory(), gateway);
        first.start();
        assertTrue(first.control().awaitReady(5_000));
        assertFalse(first.flows().watches("app", "users"));
        // the capture index knows a flow before this node has read it from the flows table
        capture(first, "users_by_name", userNamed(1, "ann", 10));
        assertEquals(1, first.status().getParkedTasks());
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        waitFor(() -> gateway.rows("app", "users_by_name").size() == 1);
        assertEquals(0, first.status().getParkedTasks());
    }

    @Test
    void shouldQueueNothingForRowsAnotherNodeExecutes() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = builder(new TrackingThreadFactory(), gateway).executors(new ExecutorChoice()
        {
            @Override
            public String executorOf(String keyspace, org.apache.cassandra.dht.Token token)
            {
                return "10.0.0.9";
            }

            @Override
            public String self()
            {
                return "127.0.0.1";
            }
        }).build();
        first.control().firstCycle();
        capture(first, "users_by_name", userNamed(1, "ann", 10));
        assertEquals(0, first.heldTasks());
        assertEquals(0, first.status().getParkedTasks());
        Thread.sleep(100);
        assertEquals(0, gateway.rows("app", "users_by_name").size());
    }

    @Test
    void shouldRunATaskCapturedTwiceOnce() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();
        // a contended memtable update, a hint and the original, batchlog replay: the same write captured again while
        // its task is queued or running here (the worker cannot finish while the test holds the gateway)
        synchronized (gateway)
        {
            capture(first, "users_by_name", userNamed(1, "ann", 10));
            capture(first, "users_by_name", userNamed(1, "ann", 10));
        }
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        Thread.sleep(100);
        assertEquals(1L, mbeans.getAttribute(USERS_FLOW, "CompletedTasks"));
        assertEquals(0, first.heldTasks());
    }

    @Test
    void shouldQueueAndExecuteTasksOfMatchingFlowsOnly() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        deploy("twitter_timeline", TIMELINE_ROW, 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();

        capture(first, "users_by_name", userNamed(1, "ann", 10), userNamed(2, "bob", 10));
        capture(first, "not_deployed", userNamed(3, "cy", 10));
        waitFor(() -> gateway.rows("app", "users_by_name").size() == 2);
        assertEquals(1, first.status().getParkedTasks(), "a flow this node does not know yet: its task waits for it");
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 2L);
        assertEquals(0L, mbeans.getAttribute(FlowMetrics.objectName("twitter", "tweets", "twitter_timeline"), "CompletedTasks"));
    }

    @Test
    void shouldReplaceAFlowWhoseVersionChanged() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = node(threads, gateway);
        first.control().firstCycle();
        List<Thread> v1Workers = List.copyOf(threads.threads);

        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"", "\"queue\": {\"capacity\": 7, \"workers\": 3}, \"targets\""), 2);
        first.control().cycle();

        assertEquals(7, mbeans.getAttribute(USERS_FLOW, "QueueCapacity"));
        assertEquals(3, mbeans.getAttribute(USERS_FLOW, "MaxPoolSize"));
        for (Thread t : v1Workers)
        {
            t.join(5_000);
            assertFalse(t.isAlive());
        }
        assertEquals(5L, threads.alive(), "three workers, the retry thread and the spill drainer of version 2");
    }

    @Test
    void shouldKeepEachFlowsMetricsInCassandrasRegistryAcrossARedeployUntilItIsRemoved() throws Exception
    {
        com.codahale.metrics.MetricRegistry registry = new com.codahale.metrics.MetricRegistry();
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = builder(new TrackingThreadFactory(), gateway).metricsRegistry(CassandraMetrics.Registry.plain(registry)).build();
        first.control().firstCycle();
        capture(first, "users_by_name", userNamed(1, "ann", 10));      // written at 10 us, done at 1,000 ms (the wall clock)
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        String lag = CassandraMetrics.nameOf("users_by_name", CassandraMetrics.PROPAGATION_LAG).getMetricName();
        assertEquals(1, registry.histogram(lag).getCount());
        long max = registry.histogram(lag).getSnapshot().getMax();
        assertTrue(max >= 1_000 && max < 1_200, "1 s, as the upper bound of its bucket (Cassandra's reservoir): " + max);

        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"", "\"queue\": {\"capacity\": 7, \"workers\": 3}, \"targets\""), 2);
        first.control().cycle();
        assertEquals(CassandraMetrics.metricNames().size(), registry.getNames().size(), "one set of names: " + registry.getNames());
        assertEquals(3, registry.getGauges().get(CassandraMetrics.nameOf("users_by_name", CassandraMetrics.WORKERS).getMetricName()).getValue());
        assertEquals(1, registry.getCounters().get(CassandraMetrics.nameOf("users_by_name", CassandraMetrics.COMPLETED_TASKS).getMetricName()).getCount());
        assertEquals(1, registry.histogram(lag).getCount(), "the lag histogram goes on with the new version");

        undeploy("users_by_name", 5);
        first.control().cycle();
        assertEquals(Set.of(), registry.getNames());
    }

    @Test
    void shouldRemoveAFlowDeletedFromTheTable() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = node(threads, gateway);
        first.control().firstCycle();
        undeploy("users_by_name", 5);
        first.control().cycle();

        assertFalse(mbeans.isRegistered(USERS_FLOW));
        assertFalse(first.flows().watches("app", "users"));
        threads.assertAllEnded(5_000);
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-retry")));
    }

    @Test
    void shouldKeepGoodFlowsWhenOneSpecIsInvalid() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        deploy("broken", "{\"name\": \"broken\", \"queue\": {\"capacity\": 0}}", 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();

        assertEquals(List.of("users_by_name"), List.of(first.status().getFlowNames()));
    }

    /** A handler whose class cannot initialize: a missing dependency jar, a failing static block. */
    public static final class UnloadableHandler implements org.asynctriggers.api.FlowHandler
    {
        static final Object NEVER = fail();

        private static Object fail()
        {
            throw new IllegalStateException("static initializer failed");
        }

        @Override
        public void execute(org.asynctriggers.api.TaskContext ctx)
        {
        }
    }

    @Test
    void shouldKeepGoodFlowsAndKeepPollingWhenAHandlerClassCannotInitialize() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        deploy("unloadable", RetriesTest.HOOK.replace("users_hook", "unloadable")
                                             .replace(RetriesTest.Poison.class.getName(), UnloadableHandler.class.getName()), 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle(); // ExceptionInInitializerError, an Error, from the handler's class

        assertTrue(first.control().awaitReady(0), "the node is ready: it captures and runs the other flows");
        assertEquals(List.of("users_by_name"), List.of(first.status().getFlowNames()));
        first.control().cycle();
        capture(first, "users_by_name", userNamed(1, "ann", 10));
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
    }

    @Test
    void shouldWaitQuietlyForTheKeyspaceToExist()
    {
        FakeGateway noKeyspace = new FakeGateway();
        first = node(new TrackingThreadFactory(), noKeyspace);
        first.control().firstCycle();
        first.control().cycle();

        assertTrue(first.control().isReady());
        assertEquals(0, first.status().getFlowNames().length);
    }

    @Test
    void shouldWriteFlowStatusRows()
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();
        first.control().cycle();

        var rows = gateway.rows(Cql.KEYSPACE, "flow_status");
        assertEquals(1, rows.size());
        assertEquals("127.0.0.1", Fixtures.string(rows.get(0).get("node")));
        assertEquals(FlowSpecParser.DEFAULT_CAPACITY, rows.get(0).get("capacity").getInt(0));
        assertEquals(0L, rows.get(0).get("spilled").getLong(0));
        assertEquals(0L, rows.get(0).get("discarded").getLong(0));
        assertTrue(gateway.executed.contains(Cql.statusInsert(true)));
        assertTrue(Cql.statusInsert(true).endsWith("USING TTL 30"));
        assertEquals(0, rows.get(0).get("paused").get(0), "running, not paused");
    }

    @Test
    void shouldStopEveryThreadItStartedAndUnregisterEveryMBean() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = node(threads, gateway);
        first.start();
        assertTrue(first.control().awaitReady(5_000));
        waitFor(() -> mbeans.isRegistered(USERS_FLOW));

        first.shutdown();

        threads.assertAllEnded(5_000);
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().startsWith("async-trigger-control-")));
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-retry")));
        assertEquals(Set.of(), mbeans.queryNames(new ObjectName("org.asynctriggers:*"), null));
    }

    @Test
    void shouldFailTheCoordinatorsWriteWhenTheQueueOfABlockFlowStaysFull()
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"", "\"queue\": {\"capacity\": 1, \"workers\": 1}, "
               + "\"overflow\": {\"policy\": \"block\", \"block_timeout_ms\": 100}, \"targets\""), 1);
        FakeGateway blocked = gateway;
        first = node(new TrackingThreadFactory(), blocked);
        first.control().firstCycle();
        // a slow executor: hold the gateway's lock so the single worker cannot finish
        synchronized (blocked)
        {
            for (int i = 0; i < 5; i++)
                capture(first, "users_by_name", userNamed(i, "n" + i, 10)); // a replica never waits: it spills
            QueueFullException e = assertThrows(QueueFullException.class, () -> first.flows().admit("app", "users"));
            assertTrue(e.getMessage().startsWith("async trigger queue of flow 'users_by_name' is full (capacity 1)"));
        }
    }

    @Test
    void shouldRetryAFailingTaskOnTheRetryThreadUntilItSucceeds() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"",
               "\"retry\": {\"initial_backoff_ms\": 1, \"max_backoff_ms\": 5}, \"targets\""), 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = node(threads, gateway);
        first.control().firstCycle();
        gateway.failNext = 2;

        capture(first, "users_by_name", userNamed(1, "ann", 10), userNamed(2, "bob", 10));

        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 2L);
        assertEquals(2, gateway.rows("app", "users_by_name").size());
        assertEquals(2L, mbeans.getAttribute(USERS_FLOW, "RetriedTasks"));
        assertEquals(0L, mbeans.getAttribute(USERS_FLOW, "FailedTasks"));
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        first.shutdown();
        threads.assertAllEnded(5_000);
    }

    @Test
    void shouldRunATaskAgainWhenItsDeadLetterCouldNotBeWritten() throws Exception
    {
        // the whole cluster restarting: the task's only attempt fails, and so does its dead letter's write
        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"",
               "\"retry\": {\"max_attempts\": 1}, \"targets\""), 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();
        gateway.failNext = 2;
        capture(first, "users_by_name", userNamed(1, "ann", 10));
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "FailedTasks") == 1L && gateway.failNext == 0);
        waitFor(() -> first.heldTasks() == 0);
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());

        // what a scan does with the entry that still holds it (Takeover.NodeView#requeue offers it like a capture)
        capture(first, "users_by_name", userNamed(1, "ann", 10));
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
    }

    private static final java.nio.ByteBuffer DEAD_LETTER_ID = java.nio.ByteBuffer.wrap(new byte[]{ 1, 2, 3, 4, 5, 6, 0x11, 8, 9, 10, 11, 12, 13, 14, 15, 16 });

    private void deadLetter(String flow, SourceChange change)
    {
        FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME.replace("{\"name\": \"users_by_name\"", "{\"name\": \"" + flow + "\""), null, 1);
        Task task = Task.of(spec, change, 0).failedOnce().failedOnce();
        assertEquals(flow, task.flow());
        new DeadLetters(gateway, () -> "127.0.0.1", () -> 1_000L, () -> DEAD_LETTER_ID)
            .write(task, 3, new RuntimeException("boom"), "test");
        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
    }

    private void requestRetry(String node, String flow)
    {
        gateway.insert(Cql.KEYSPACE, "dead_letter_retries", row("node", node, "flow", flow, "id", DEAD_LETTER_ID), 5);
    }

    @Test
    void shouldQueueADeadLetterAgainOnRequestThenDeleteTheRequestAndTheDeadLetter() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();
        deadLetter("users_by_name", userNamed(5, "eve", 10));
        gateway.applied("app", "users", Task.captured("users_by_name", userNamed(5, "eve", 10), 0));
        requestRetry("127.0.0.1", "users_by_name");
        requestRetry("10.0.0.2", "users_by_name"); // another node's request: not ours to serve

        first.control().cycle();

        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        assertEquals("eve", Fixtures.string(gateway.rows("app", "users_by_name").get(0).get("name")));
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        var requests = gateway.rows(Cql.KEYSPACE, "dead_letter_retries");
        assertEquals(1, requests.size());
        assertEquals("10.0.0.2", Fixtures.string(requests.get(0).get("node")));
        assertEquals(ConsistencyLevel.LOCAL_QUORUM, gateway.consistencies.get(gateway.executed.indexOf(Cql.deadLetterDelete())));
        assertEquals(ConsistencyLevel.LOCAL_QUORUM, gateway.consistencies.get(gateway.executed.indexOf(Cql.deadLetterRetryDelete())));
    }

    @Test
    void shouldWriteARetriedDeadLetterABackupEntryOfItsOwnBeforeTheDeadLetterGoes() throws Exception
    {
        gateway.table("app", "async_backup_users", List.of("key_0"), List.of("flow", "id"));
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        // the node holds the flow without running its tasks, as one about to be stopped or killed would
        first = builder(new TrackingThreadFactory(), gateway)
                    .backupTables(spec -> new org.asynctriggers.backup.BackupTable("app", "users", 1, gateway)).build();
        first.control().firstCycle();
        deadLetter("users_by_name", userNamed(6, "fay", 10));
        gateway.applied("app", "users", Task.captured("users_by_name", userNamed(6, "fay", 10), 0));
        requestRetry("127.0.0.1", "users_by_name");
        List<String> order = new java.util.concurrent.CopyOnWriteArrayList<>();
        gateway.beforeEach = cql -> {
            if (cql.startsWith("INSERT INTO \"app\".\"async_backup_users\"") || cql.equals(Cql.deadLetterDelete()))
                order.add(cql.startsWith("INSERT") ? "entry" : "dead letter deleted");
        };

        first.control().cycle();

        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        assertEquals(List.of("entry", "dead letter deleted"), order, "the task is durable again before its dead letter goes");
        assertEquals("fay", Fixtures.string(gateway.rows("app", "users_by_name").get(0).get("name")));
        assertEquals(0, gateway.rows("app", "async_backup_users").size(), "its own entry is completed when it ran");
    }

    @Test
    void shouldKeepARetryRequestUntilItsFlowRunsHere() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = node(new TrackingThreadFactory(), gateway);
        first.control().firstCycle();
        deadLetter("ghost", userNamed(5, "eve", 10));
        requestRetry("127.0.0.1", "ghost");

        first.control().cycle();
        first.control().cycle();

        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letter_retries").size());
        assertEquals(0, gateway.rows("app", "users_by_name").size());
    }

    private static void waitFor(Await.Condition condition) throws Exception
    {
        Await.until(condition, 10);
    }
}
