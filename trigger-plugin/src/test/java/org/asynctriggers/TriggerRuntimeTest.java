package org.asynctriggers;

import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.Fixtures.bigint;
import static org.asynctriggers.Fixtures.row;
import static org.asynctriggers.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TriggerRuntimeTest
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
    private TriggerRuntime first;
    private TriggerRuntime second;

    private TriggerRuntime runtime(TrackingThreadFactory threads, FakeGateway gw)
    {
        return new TriggerRuntime(gw, mbeans, threads, System::nanoTime, flow -> spillRoot.resolve(flow),
                                  RetryScheduler.onThreads(threads), (min, max) -> max, millis -> {},
                                  spec -> column -> null,
                                  getClass().getClassLoader(), () -> "127.0.0.1", () -> 1_000L, 5_000);
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
    void shutdownRuntimes()
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
        first = runtime(threads, gateway);
        first.firstCycle();

        assertTrue(first.isReady());
        assertEquals(first.getId(), mbeans.getAttribute(TriggerRuntime.NAME, "Id"));
        assertEquals(FlowSpecParser.DEFAULT_CAPACITY, mbeans.getAttribute(USERS_FLOW, "QueueCapacity"));
        assertEquals(FlowSpecParser.DEFAULT_WORKERS, mbeans.getAttribute(USERS_FLOW, "MaxPoolSize"));
        for (String attribute : List.of("SpilledTasks", "SpilledPending", "DiscardedTasks", "CurrentlyBlockedTasks", "TotalBlockedTasks"))
            assertEquals(0L, mbeans.getAttribute(USERS_FLOW, attribute), attribute);
        assertEquals(4L, threads.alive(), "two workers, the retry thread and the spill drainer (default overflow policy)");
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-retry") && t.isDaemon()));
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-spill") && t.isDaemon()));
        assertTrue(first.watches("app", "users"));
        assertFalse(first.watches("app", "other"));
    }

    @Test
    void shouldReadANewFlowAtOnceWhenAWriteArrivesBeforeTheNextPoll() throws Exception
    {
        org.apache.cassandra.config.DatabaseDescriptor.clientInitialization(false);
        org.apache.cassandra.schema.TableMetadata users =
            org.apache.cassandra.schema.TableMetadata.builder("app", "users")
                                                     .partitioner(org.apache.cassandra.dht.Murmur3Partitioner.instance)
                                                     .addPartitionKeyColumn("id", org.apache.cassandra.db.marshal.LongType.instance)
                                                     .addRegularColumn("name", org.apache.cassandra.db.marshal.UTF8Type.instance)
                                                     .addRegularColumn("email", org.apache.cassandra.db.marshal.UTF8Type.instance)
                                                     .build();
        first = runtime(new TrackingThreadFactory(), gateway);
        first.start();
        assertTrue(first.awaitReady(5_000));
        assertFalse(first.watches("app", "users"));
        // ctl writes the flow, then creates the trigger: the first write can come before the next 2 s poll
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        org.apache.cassandra.db.partitions.PartitionUpdate.SimpleBuilder write =
            org.apache.cassandra.db.partitions.PartitionUpdate.simpleBuilder(users, 1L).timestamp(10);
        write.row().add("name", "ann").add("email", "e");
        first.enqueue(write.build());
        assertTrue(first.watches("app", "users"), "the write made the runtime read the flows at once");
        waitFor(() -> gateway.rows("app", "users_by_name").size() == 1);
    }

    @Test
    void shouldQueueAndExecuteTasksOfMatchingFlowsOnly() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        deploy("twitter_timeline", TIMELINE_ROW, 1);
        first = runtime(new TrackingThreadFactory(), gateway);
        first.firstCycle();

        first.enqueue("app", "users", List.of(userNamed(1, "ann", 10), userNamed(2, "bob", 10)));
        first.enqueue("app", "elsewhere", List.of(userNamed(3, "cy", 10)));
        waitFor(() -> gateway.rows("app", "users_by_name").size() == 2);
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 2L);
        assertEquals(0L, mbeans.getAttribute(FlowMetrics.objectName("twitter", "tweets", "twitter_timeline"), "CompletedTasks"));
    }

    @Test
    void shouldHandOverToTheRuntimeOfANewClassLoader() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory oldThreads = new TrackingThreadFactory();
        first = runtime(oldThreads, gateway);
        first.firstCycle();
        first.enqueue("app", "users", List.of(userNamed(1, "ann", 10), userNamed(2, "bob", 10), userNamed(3, "cy", 10)));

        TrackingThreadFactory newThreads = new TrackingThreadFactory();
        second = runtime(newThreads, gateway);
        second.firstCycle();

        assertTrue(first.isShutdown());
        oldThreads.assertAllEnded(5_000);
        assertEquals(3, gateway.rows("app", "users_by_name").size(), "the old runtime drained its queue before stopping");
        assertEquals(second.getId(), mbeans.getAttribute(TriggerRuntime.NAME, "Id"));
        Set<ObjectName> flowBeans = mbeans.queryNames(new ObjectName("org.asynctriggers:type=Flow,*"), null);
        assertEquals(Set.of(USERS_FLOW), flowBeans);
        assertEquals(4L, newThreads.alive(), "one pool, one retry thread and one spill drainer per flow");

        second.enqueue("app", "users", List.of(userNamed(4, "dee", 10)));
        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
    }

    @Test
    void shouldReplaceAFlowWhoseVersionChanged() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = runtime(threads, gateway);
        first.firstCycle();
        List<Thread> v1Workers = List.copyOf(threads.threads);

        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"", "\"queue\": {\"capacity\": 7, \"workers\": 3}, \"targets\""), 2);
        first.cycle();

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
    void shouldRemoveAFlowDeletedFromTheTable() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = runtime(threads, gateway);
        first.firstCycle();
        undeploy("users_by_name", 5);
        first.cycle();

        assertFalse(mbeans.isRegistered(USERS_FLOW));
        assertFalse(first.watches("app", "users"));
        threads.assertAllEnded(5_000);
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-retry")));
    }

    @Test
    void shouldKeepGoodFlowsWhenOneSpecIsInvalid() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        deploy("broken", "{\"name\": \"broken\", \"queue\": {\"capacity\": 0}}", 1);
        first = runtime(new TrackingThreadFactory(), gateway);
        first.firstCycle();

        assertEquals(List.of("users_by_name"), List.of(first.getFlowNames()));
    }

    @Test
    void shouldWaitQuietlyForTheKeyspaceToExist()
    {
        FakeGateway noKeyspace = new FakeGateway();
        first = runtime(new TrackingThreadFactory(), noKeyspace);
        first.firstCycle();
        first.cycle();

        assertTrue(first.isReady());
        assertEquals(0, first.getFlowNames().length);
    }

    @Test
    void shouldWriteFlowStatusRows()
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = runtime(new TrackingThreadFactory(), gateway);
        first.firstCycle();
        first.cycle();

        var rows = gateway.rows(Cql.KEYSPACE, "flow_status");
        assertEquals(1, rows.size());
        assertEquals("127.0.0.1", Fixtures.string(rows.get(0).get("node")));
        assertEquals(FlowSpecParser.DEFAULT_CAPACITY, rows.get(0).get("capacity").getInt(0));
        assertEquals(0L, rows.get(0).get("spilled").getLong(0));
        assertEquals(0L, rows.get(0).get("discarded").getLong(0));
        assertTrue(gateway.executed.contains(Cql.statusInsert()));
        assertTrue(Cql.statusInsert().endsWith("USING TTL 30"));
    }

    @Test
    void shouldStopEveryThreadItStartedAndUnregisterEveryMBean() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = runtime(threads, gateway);
        first.start();
        assertTrue(first.awaitReady(5_000));
        waitFor(() -> mbeans.isRegistered(USERS_FLOW));

        first.shutdown();

        threads.assertAllEnded(5_000);
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().startsWith("async-trigger-control-")));
        assertTrue(threads.threads.stream().anyMatch(t -> t.getName().equals("async-trigger-users_by_name-retry")));
        assertEquals(Set.of(), mbeans.queryNames(new ObjectName("org.asynctriggers:*"), null));
    }

    @Test
    void shouldFailTheWriteWhenTheQueueStaysFull()
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"", "\"queue\": {\"capacity\": 1, \"workers\": 1}, "
               + "\"overflow\": {\"policy\": \"block\", \"block_timeout_ms\": 100}, \"targets\""), 1);
        FakeGateway blocked = gateway;
        first = runtime(new TrackingThreadFactory(), blocked);
        first.firstCycle();
        // a slow executor: hold the gateway's lock so the single worker cannot finish
        synchronized (blocked)
        {
            QueueFullException e = assertThrows(QueueFullException.class, () -> {
                for (int i = 0; i < 5; i++)
                    first.enqueue("app", "users", List.of(userNamed(i, "n" + i, 10)));
            });
            assertTrue(e.getMessage().startsWith("async trigger queue of flow 'users_by_name' is full (capacity 1)"));
        }
    }

    @Test
    void shouldRetryAFailingTaskOnTheRetryThreadUntilItSucceeds() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME.replace("\"targets\"",
               "\"retry\": {\"initial_backoff_ms\": 1, \"max_backoff_ms\": 5}, \"targets\""), 1);
        TrackingThreadFactory threads = new TrackingThreadFactory();
        first = runtime(threads, gateway);
        first.firstCycle();
        gateway.failNext = 2;

        first.enqueue("app", "users", List.of(userNamed(1, "ann", 10), userNamed(2, "bob", 10)));

        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 2L);
        assertEquals(2, gateway.rows("app", "users_by_name").size());
        assertEquals(2L, mbeans.getAttribute(USERS_FLOW, "RetriedTasks"));
        assertEquals(0L, mbeans.getAttribute(USERS_FLOW, "FailedTasks"));
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        first.shutdown();
        threads.assertAllEnded(5_000);
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
        first = runtime(new TrackingThreadFactory(), gateway);
        first.firstCycle();
        deadLetter("users_by_name", userNamed(5, "eve", 10));
        requestRetry("127.0.0.1", "users_by_name");
        requestRetry("10.0.0.2", "users_by_name"); // another node's request: not ours to serve

        first.cycle();

        waitFor(() -> (Long) mbeans.getAttribute(USERS_FLOW, "CompletedTasks") == 1L);
        assertEquals("eve", Fixtures.string(gateway.rows("app", "users_by_name").get(0).get("name")));
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        var requests = gateway.rows(Cql.KEYSPACE, "dead_letter_retries");
        assertEquals(1, requests.size());
        assertEquals("10.0.0.2", Fixtures.string(requests.get(0).get("node")));
        assertEquals(ConsistencyLevel.QUORUM, gateway.consistencies.get(gateway.executed.indexOf(Cql.deadLetterDelete())));
        assertEquals(ConsistencyLevel.QUORUM, gateway.consistencies.get(gateway.executed.indexOf(Cql.deadLetterRetryDelete())));
    }

    @Test
    void shouldKeepARetryRequestUntilItsFlowRunsHere() throws Exception
    {
        deploy("users_by_name", Fixtures.USERS_BY_NAME, 1);
        first = runtime(new TrackingThreadFactory(), gateway);
        first.firstCycle();
        deadLetter("ghost", userNamed(5, "eve", 10));
        requestRetry("127.0.0.1", "ghost");

        first.cycle();
        first.cycle();

        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letter_retries").size());
        assertEquals(0, gateway.rows("app", "users_by_name").size());
    }

    interface Condition
    {
        boolean holds() throws Exception;
    }

    private static void waitFor(Condition condition) throws Exception
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.holds())
        {
            if (System.nanoTime() > deadline)
                throw new AssertionError("condition not met within 10 s");
            Thread.sleep(10);
        }
    }
}
