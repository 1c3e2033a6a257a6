package org.asynctriggers.work;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.WriteType;
import org.apache.cassandra.exceptions.UnavailableException;
import org.apache.cassandra.exceptions.WriteTimeoutException;
import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.api.Operation;
import org.asynctriggers.api.TaskContext;
import org.asynctriggers.backup.TaskEntries;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.execute.FlowExecutor;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.queue.BoundedFlowQueue;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.ManualRetryScheduler;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Failed executions on one flow, with the retry thread replaced by {@link ManualRetryScheduler}: no thread, no sleep. */
public class RetriesTest
{
    static final long POISON_TS = 666;

    /** Fails every task written at {@link #POISON_TS}; records the others. */
    public static final class Poison implements FlowHandler
    {
        final List<Long> done = new ArrayList<>();

        @Override
        public void execute(TaskContext ctx)
        {
            if (ctx.timestamp() == POISON_TS)
                throw new IllegalStateException("poisoned row " + ctx.key().keySet());
            done.add(ctx.timestamp());
        }
    }

    public static final String HOOK = "{\"name\": \"users_hook\","
        + "\"source\": {\"keyspace\": \"app\", \"table\": \"users\", \"partition_key\": [\"id\"], \"clustering\": [],"
        + "  \"columns\": {\"id\": \"bigint\", \"name\": \"text\", \"email\": \"text\"}},"
        + "\"handler\": \"" + Poison.class.getName() + "\","
        + "\"retry\": {\"max_attempts\": 3, \"initial_backoff_ms\": 100, \"max_backoff_ms\": 150, \"max_age_ms\": 60000}}";

    private final FakeGateway gateway = Fixtures.usersGateway();
    private final FlowSpec spec = FlowSpecParser.parse(HOOK, null, 1);
    private final Poison handler = new Poison();
    private final BoundedFlowQueue queue = new BoundedFlowQueue(10);
    private final FlowMetrics metrics = new FlowMetrics(queue, 1, () -> 0);
    private final ManualRetryScheduler scheduler = new ManualRetryScheduler();
    /** the jitter bounds asked for; the delay chosen is the lower one */
    private final List<List<Long>> jitterBounds = new ArrayList<>();
    private final ByteBuffer deadLetterId = ByteBuffer.wrap(new byte[]{ 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
                                                                         0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f });
    private long nowNanos = TimeUnit.SECONDS.toNanos(1);
    private final Retries retries = new Retries(spec.name, spec.retry, (min, max) -> {
        jitterBounds.add(List.of(min, max));
        return min;
    }, scheduler, queue, metrics, new DeadLetters(gateway, () -> "10.0.0.1", () -> 1_234L, () -> deadLetterId),
                                                () -> nowNanos);
    private final List<Long> sleeps = new ArrayList<>();
    private final TaskProcessor worker = new TaskProcessor(new FlowExecutor(spec, gateway, handler, c -> null),
                                                           metrics, retries, sleeps::add, () -> nowNanos, 0);

    /** Backup entries that record what the retries do with them; {@code holds}: whether an entry holds each task. */
    private static final class RecordingEntries implements TaskEntries
    {
        final List<Task> completed = new ArrayList<>(), released = new ArrayList<>();
        private final boolean holds;

        RecordingEntries(boolean holds)
        {
            this.holds = holds;
        }

        @Override
        public void recordResume(Task task, int target, ByteBuffer paging)
        {
        }

        @Override
        public void completed(Task task)
        {
            completed.add(task);
        }

        @Override
        public void released(Task task)
        {
            released.add(task);
        }

        @Override
        public boolean holdsTasks()
        {
            return holds;
        }
    }

    private static Task user(long id, long ts)
    {
        return new Task("users_hook", 1, List.of(bigint(id)), Operation.INSERT, ts,
                        row("id", id, "name", "n" + id, "email", "e"), 0);
    }

    /** What the worker thread would do: run what is queued until the queue is empty. */
    private void drainQueue() throws InterruptedException
    {
        Task next;
        while ((next = queue.poll(0, TimeUnit.MILLISECONDS)) != null)
            worker.accept(next);
    }

    @Test
    void shouldRequeueAFailingTaskAfterItsBackoffWhileTheWorkerGoesOn() throws Exception
    {
        Task flaky = user(1, 10);
        FlowHandler twiceFailing = new FlowHandler()
        {
            int failures;

            @Override
            public void execute(TaskContext ctx)
            {
                if (ctx.timestamp() == 10 && failures++ < 2)
                    throw new IllegalStateException("transient");
                handler.done.add(ctx.timestamp());
            }
        };
        TaskProcessor flakyWorker = new TaskProcessor(new FlowExecutor(spec, gateway, twiceFailing, c -> null),
                                                      metrics, retries, sleeps::add, () -> nowNanos, 0);

        flakyWorker.accept(flaky);
        assertEquals(0, queue.size(), "not queued again before its backoff");
        assertEquals(1, metrics.getPendingTasks(), "a task waiting for its retry is still pending");
        flakyWorker.accept(user(2, 20)); // the worker is free meanwhile
        assertEquals(List.of(20L), handler.done);

        assertEquals(1, scheduler.runDue());
        assertEquals(1, metrics.getPendingTasks(), "queued again, counted once");
        Task requeued = queue.poll(0, TimeUnit.MILLISECONDS);
        assertEquals(1, requeued.attempts());
        flakyWorker.accept(requeued);
        assertEquals(1, scheduler.runDue());
        requeued = queue.poll(0, TimeUnit.MILLISECONDS);
        assertEquals(2, requeued.attempts());
        flakyWorker.accept(requeued);

        assertEquals(List.of(20L, 10L), handler.done);
        // min(150, 100 * 2^(n-1)), jittered between half and all of it
        assertEquals(List.of(List.of(50L, 100L), List.of(75L, 150L)), jitterBounds);
        assertEquals(List.of(50L, 75L), scheduler.delays);
        assertEquals(List.of(), sleeps, "the worker never sleeps through a backoff");
        assertEquals(2, metrics.getRetriedTasks());
        assertEquals(2, metrics.getCompletedTasks());
        assertEquals(0, metrics.getFailedTasks());
        assertEquals(0, metrics.getActiveTasks());
        assertEquals(0, metrics.getPendingTasks());
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
    }

    @Test
    void shouldWriteAPoisonTaskToTheDeadLettersAfterMaxAttemptsWhileOtherTasksComplete() throws Exception
    {
        Task poison = user(7, POISON_TS);
        queue.offer(poison);
        for (long id = 1; id <= 3; id++)
            queue.offer(user(id, id));
        drainQueue();
        while (scheduler.runDue() > 0)
            drainQueue();

        assertEquals(List.of(1L, 2L, 3L), handler.done);
        assertEquals(3, metrics.getCompletedTasks());
        assertEquals(1, metrics.getFailedTasks());
        assertEquals(2, metrics.getRetriedTasks());
        assertEquals(0, metrics.getActiveTasks());
        List<Map<String, ByteBuffer>> letters = gateway.rows(Cql.KEYSPACE, "dead_letters");
        assertEquals(1, letters.size());
        Map<String, ByteBuffer> letter = letters.get(0);
        assertEquals("users_hook", Fixtures.string(letter.get("flow")));
        assertEquals(deadLetterId, letter.get("id"));
        assertEquals("10.0.0.1", Fixtures.string(letter.get("node")));
        assertEquals("insert", Fixtures.string(letter.get("op")));
        assertEquals(POISON_TS, Fixtures.longOf(letter.get("ts")));
        assertEquals(poison.serializedKey(), letter.get("source_key"));
        assertEquals("java.lang.IllegalStateException: poisoned row [id]", Fixtures.string(letter.get("error")));
        assertEquals(3, letter.get("attempts").getInt(0));
        assertEquals(1_234L, Fixtures.longOf(letter.get("failed_at")));
        Task stored = Task.deserialize(letter.get("task"));
        assertEquals(poison.toString() + " attempts=2", stored.toString());
        assertEquals(poison.values(), stored.values());
        assertEquals(ConsistencyLevel.LOCAL_QUORUM,
                     gateway.consistencies.get(gateway.executed.indexOf(Cql.deadLetterInsert())));
    }

    @Test
    void shouldWaitOutAClusterFailureWithoutSpendingAttemptsUntilMaxAge() throws Exception
    {
        // a node, or the whole cluster, restarting: the derived writes find no replica; 10 such failures of a task
        // allowed 3 attempts still make no dead letter, until the task is max_age_ms old
        Task task = user(7, 70);
        for (int i = 0; i < 10; i++)
        {
            retries.failed(task, new RuntimeException("write failed", UnavailableException.create(ConsistencyLevel.ONE, 1, 0)));
            assertEquals(1, scheduler.runDue());
            task = queue.poll(0, TimeUnit.MILLISECONDS);
            assertEquals(0, task.attempts());
        }
        retries.failed(task, new WriteTimeoutException(WriteType.SIMPLE, ConsistencyLevel.ONE, 0, 1));
        assertEquals(1, scheduler.runDue());
        task = queue.poll(0, TimeUnit.MILLISECONDS);
        // a lineage version's Paxos round a node down cut short: its result unknown, the cluster's failure too
        retries.failed(task, new org.apache.cassandra.exceptions.CasWriteUnknownResultException(ConsistencyLevel.SERIAL, 1, 2));
        assertEquals(1, scheduler.runDue());
        task = queue.poll(0, TimeUnit.MILLISECONDS);
        assertEquals(0, task.attempts());
        assertEquals(java.util.Collections.nCopies(12, Retries.UNAVAILABLE_WAIT_MILLIS), scheduler.delays);
        assertEquals(0, metrics.getFailedTasks());
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());

        nowNanos = TimeUnit.MILLISECONDS.toNanos(60_000);
        retries.failed(task, UnavailableException.create(ConsistencyLevel.ONE, 1, 0));
        assertEquals(1, metrics.getFailedTasks());
        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
    }

    @Test
    void shouldWaitOutAReplicasFailureWhileTheSchemaSettlesButSpendAnAttemptOtherwise() throws Exception
    {
        // a replica that has not applied an ALTER TABLE yet fails the task's read: "INCOMPATIBLE_SCHEMA" always, and a
        // failure without a reason while the schema settles, cost no attempt; the same failure on a settled schema
        // and any other reason are the task's
        boolean[] settling = { true };
        Retries watching = new Retries(spec.name, spec.retry, (min, max) -> min, scheduler, queue, metrics,
                                       new DeadLetters(gateway, () -> "10.0.0.1", () -> 1_234L, () -> deadLetterId),
                                       () -> nowNanos, () -> settling[0]);
        java.net.InetAddress replica = java.net.InetAddress.getByName("127.0.0.2");
        Task task = user(7, 70);
        for (org.apache.cassandra.exceptions.RequestFailureReason reason : List.of(
                org.apache.cassandra.exceptions.RequestFailureReason.UNKNOWN,
                org.apache.cassandra.exceptions.RequestFailureReason.INCOMPATIBLE_SCHEMA))
        {
            watching.failed(task, new RuntimeException(readFailure(replica, reason)));
            assertEquals(1, scheduler.runDue());
            task = queue.poll(0, TimeUnit.MILLISECONDS);
            assertEquals(0, task.attempts(), reason.toString());
        }
        assertEquals(java.util.Collections.nCopies(2, Retries.UNAVAILABLE_WAIT_MILLIS), scheduler.delays);

        settling[0] = false;
        watching.failed(task, readFailure(replica, org.apache.cassandra.exceptions.RequestFailureReason.INCOMPATIBLE_SCHEMA));
        assertEquals(1, scheduler.runDue());
        task = queue.poll(0, TimeUnit.MILLISECONDS);
        assertEquals(0, task.attempts());
        for (org.apache.cassandra.exceptions.RequestFailureReason reason : List.of(
                org.apache.cassandra.exceptions.RequestFailureReason.UNKNOWN,
                org.apache.cassandra.exceptions.RequestFailureReason.READ_TOO_MANY_TOMBSTONES))
        {
            int before = task.attempts();
            watching.failed(task, readFailure(replica, reason));
            assertEquals(1, scheduler.runDue());
            task = queue.poll(0, TimeUnit.MILLISECONDS);
            assertEquals(before + 1, task.attempts(), reason.toString());
        }
        settling[0] = true; // too many tombstones is the task's even then: its third attempt makes the dead letter
        watching.failed(task, readFailure(replica, org.apache.cassandra.exceptions.RequestFailureReason.READ_TOO_MANY_TOMBSTONES));
        assertEquals(0, scheduler.runDue());
        assertEquals(1, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
    }

    private static org.apache.cassandra.exceptions.ReadFailureException readFailure(
            java.net.InetAddress replica, org.apache.cassandra.exceptions.RequestFailureReason reason)
    {
        return new org.apache.cassandra.exceptions.ReadFailureException(
            ConsistencyLevel.QUORUM, 1, 2, true,
            java.util.Map.of(org.apache.cassandra.locator.InetAddressAndPort.getByAddress(replica), reason));
    }

    @Test
    void shouldRetryATaskWhoseHandlerThrowsAnError() throws Exception
    {
        // a LinkageError from a handler's missing dependency is the task's failure: retried, not lost with the worker
        TaskProcessor broken = new TaskProcessor((TaskProcessor.Executor) t -> { throw new NoClassDefFoundError("com/example/Gone"); },
                                                 metrics, retries, sleeps::add, () -> nowNanos, 0);
        broken.accept(user(7, 70));
        assertEquals(0, metrics.getActiveTasks());
        assertEquals(1, metrics.getRetriedTasks());
        assertEquals(1, scheduler.runDue());
        assertEquals(70, queue.poll(0, TimeUnit.MILLISECONDS).timestamp());
    }

    @Test
    void shouldSendATaskOlderThanMaxAgeToTheDeadLettersWithoutRetrying() throws Exception
    {
        nowNanos = TimeUnit.MILLISECONDS.toNanos(60_000); // the task was created at 0: exactly max_age_ms old
        worker.accept(user(7, POISON_TS));

        assertEquals(0, scheduler.waiting());
        assertEquals(0, metrics.getRetriedTasks());
        assertEquals(1, metrics.getFailedTasks());
        List<Map<String, ByteBuffer>> letters = gateway.rows(Cql.KEYSPACE, "dead_letters");
        assertEquals(1, letters.size());
        assertEquals(1, letters.get(0).get("attempts").getInt(0));
    }

    @Test
    void shouldTryAgainLaterWhenTheQueueIsFullInsteadOfDropping() throws Exception
    {
        BoundedFlowQueue tiny = new BoundedFlowQueue(1);
        ManualRetryScheduler later = new ManualRetryScheduler();
        Retries onTiny = new Retries(spec.name, spec.retry, (min, max) -> max, later, tiny, metrics,
                                     new DeadLetters(gateway, () -> "n", () -> 0L, () -> deadLetterId), () -> nowNanos);
        onTiny.failed(user(7, POISON_TS), new IllegalStateException("x"));
        tiny.offer(user(1, 1));

        assertEquals(1, later.runDue());
        assertEquals(1, tiny.size());
        assertEquals(List.of(100L, 100L), later.delays, "offered again after the initial backoff");
        tiny.poll(0, TimeUnit.MILLISECONDS);
        assertEquals(1, later.runDue());
        assertEquals(POISON_TS, tiny.poll(0, TimeUnit.MILLISECONDS).timestamp());
        assertEquals(0, onTiny.pending());
    }

    @Test
    void shouldTurnRetriesPendingAtStopIntoDeadLetters() throws Exception
    {
        worker.accept(user(7, POISON_TS));
        assertEquals(1, retries.pending());

        retries.stop();

        assertTrue(scheduler.stopped);
        assertEquals(0, retries.pending());
        assertEquals(1, metrics.getFailedTasks());
        assertEquals(1, metrics.getRetriedTasks());
        assertEquals(0, metrics.getActiveTasks());
        List<Map<String, ByteBuffer>> letters = gateway.rows(Cql.KEYSPACE, "dead_letters");
        assertEquals(1, letters.size());
        assertEquals(1, letters.get(0).get("attempts").getInt(0));
        // a failure after the stop cannot be scheduled: a dead letter too, not an exception in the worker
        worker.accept(user(8, POISON_TS));
        assertEquals(2, metrics.getFailedTasks());
    }

    @Test
    void shouldLeaveRetriesPendingAtStopToTheirBackupEntriesWhenTheFlowKeepsThem() throws Exception
    {
        // a redeploy replaces the version: what waits for a retry (or the rest of a fan-out) neither failed nor is
        // done; its entry holds it with its resume position, and the new version's scan runs it
        RecordingEntries entries = new RecordingEntries(true);
        List<Task> released = entries.released, completed = entries.completed;
        retries.entries(entries);
        worker.accept(user(7, POISON_TS));
        assertEquals(1, retries.pending());

        retries.stop();

        assertEquals(0, retries.pending());
        assertEquals(0, metrics.getFailedTasks(), "a stop is not a failure of the task");
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
        assertEquals(1, released.size());
        assertEquals(List.of(), completed, "the entry stays: the next scan runs the task from it");
        // a failure after the stop cannot be scheduled: back to its entry as well
        worker.accept(user(8, POISON_TS));
        assertEquals(2, released.size());
        assertEquals(0, metrics.getFailedTasks());
        assertEquals(0, gateway.rows(Cql.KEYSPACE, "dead_letters").size());
    }

    @Test
    void shouldReleaseTheTaskToItsBackupEntryWhenTheDeadLetterCannotBeWritten()
    {
        // the whole cluster restarting: the task fails its attempts, and its dead letter cannot be written either
        FakeGateway noTables = new FakeGateway().table("app", "users", List.of("id"), List.of());
        Retries lost = new Retries(spec.name, new RetryPolicy(1, 0, 0, 1_000), (min, max) -> max, scheduler, queue, metrics,
                                   new DeadLetters(noTables, () -> "n", () -> 0L, () -> deadLetterId), () -> nowNanos);
        RecordingEntries entries = new RecordingEntries(false);
        List<Task> completed = entries.completed, released = entries.released;
        lost.entries(entries);
        TaskProcessor processor = new TaskProcessor(new FlowExecutor(spec, noTables, handler, c -> null),
                                                    metrics, lost, sleeps::add, () -> nowNanos, 0);
        Task task = user(7, POISON_TS);
        processor.accept(task);
        assertEquals(1, metrics.getFailedTasks());
        assertEquals(0, metrics.getActiveTasks());
        assertEquals(List.of(), completed, "the entry stays: it is the only copy of the task now");
        assertEquals(1, released.size(), "the node forgets it queued the task, so a scan queues it again");
        assertEquals(task.id(), released.get(0).id());
    }

    @Test
    void shouldTruncateTheErrorTo2000Characters()
    {
        String error = DeadLetters.error(new RuntimeException("x".repeat(5_000)));
        assertEquals(DeadLetters.MAX_ERROR_CHARS, error.length());
        assertTrue(error.startsWith("java.lang.RuntimeException: xxx"));
    }
}
