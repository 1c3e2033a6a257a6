package org.asynctriggers;

import java.util.ArrayList;
import java.util.List;

import org.asynctriggers.api.Operation;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class TaskProcessorTest
{
    private final FakeGateway gateway = Fixtures.usersGateway();
    private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
    private final BoundedFlowQueue queue = new BoundedFlowQueue(1);
    private final FlowMetrics metrics = new FlowMetrics(queue, 1, () -> 0);
    private final List<Long> sleeps = new ArrayList<>();

    private Task insert()
    {
        return Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)), Fixtures.row("id", 1L, "name", "ann", "email", "a@x"));
    }

    private final ManualRetryScheduler scheduler = new ManualRetryScheduler();

    private TaskProcessor processor(long nowNanos)
    {
        Retries retries = new Retries(spec.name, spec.retry, RetryPolicy.Jitter.RANDOM, scheduler, queue,
                                      metrics, new DeadLetters(gateway, () -> "n", () -> 0L), () -> nowNanos);
        return new TaskProcessor(new FlowExecutor(spec, gateway, null, c -> null), metrics, retries,
                                 sleeps::add, () -> nowNanos, 20);
    }

    /** Backup entries as a set: what is stored, what was completed, what resume positions were recorded. */
    private static final class RecordingBackups implements Backups
    {
        final java.util.Set<java.util.UUID> stored = new java.util.HashSet<>();
        /** entries only a read of every replica finds (the replica a read at ONE asks lacks them) */
        final java.util.Set<java.util.UUID> storedElsewhere = new java.util.HashSet<>();
        final List<java.util.UUID> completed = new ArrayList<>();
        final List<java.util.UUID> abandoned = new ArrayList<>();
        boolean replicaDown;

        @Override
        public boolean isStored(Task task, boolean everywhere)
        {
            if (everywhere && replicaDown)
                throw new IllegalStateException("Cannot achieve consistency level ALL");
            return stored.contains(task.backupId()) || (everywhere && storedElsewhere.contains(task.backupId()));
        }

        @Override
        public void recordResume(Task task, int target, java.nio.ByteBuffer paging)
        {
        }

        @Override
        public void completed(Task task)
        {
            completed.add(task.backupId());
        }

        @Override
        public void abandoned(Task task)
        {
            abandoned.add(task.backupId());
        }
    }

    @Test
    void shouldRunATaskOnlyOnceItsBackupEntryShowsAndThenCompleteTheEntry()
    {
        RecordingBackups backups = new RecordingBackups();
        java.util.UUID id = BackupMap.newId();
        Task task = insert().withBackup(id);

        TaskProcessor early = processor(30_000_000L);
        early.backups(backups);
        early.accept(task); // the source write has not landed yet: put back, not run
        assertEquals(0, gateway.rows("app", "users_by_name").size());
        assertEquals(List.of(TaskProcessor.STORE_RECHECK_MILLIS), scheduler.delays);
        assertEquals(1, metrics.getPendingTasks(), "a task waiting for its source write is pending");

        backups.stored.add(id);
        scheduler.runDue();
        Task requeued = pollNow();
        early.accept(requeued);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
        assertEquals(List.of(id), backups.completed);
        assertEquals(1, metrics.getCompletedTasks());
        assertEquals(0, metrics.getPendingTasks());
    }

    private Task pollNow()
    {
        try
        {
            return queue.poll(1, java.util.concurrent.TimeUnit.SECONDS);
        }
        catch (InterruptedException e)
        {
            throw new AssertionError(e);
        }
    }

    @Test
    void shouldRunATaskWhoseEntryOnlyAReadOfEveryReplicaFinds()
    {
        RecordingBackups backups = new RecordingBackups();
        Task task = insert().withBackup(BackupMap.newId());
        backups.storedElsewhere.add(task.backupId());
        TaskProcessor late = processor(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(TaskProcessor.STORE_WAIT_MILLIS + 1));
        late.backups(backups);
        late.accept(task);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
        assertEquals(List.of(task.backupId()), backups.completed);
    }

    @Test
    void shouldKeepWaitingRatherThanDropATaskWhenAReplicaDoesNotAnswer()
    {
        RecordingBackups backups = new RecordingBackups();
        backups.replicaDown = true;
        Task task = insert().withBackup(BackupMap.newId());
        TaskProcessor late = processor(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(TaskProcessor.STORE_WAIT_MILLIS + 1));
        late.backups(backups);
        late.accept(task);
        assertEquals(List.of(), backups.abandoned, "unknown is not absent");
        assertEquals(List.of(TaskProcessor.STORE_UNKNOWN_RECHECK_MILLIS), scheduler.delays);
        assertEquals(1, metrics.getPendingTasks());
    }

    @Test
    void shouldDropATaskWhoseSourceWriteWasNeverStored()
    {
        RecordingBackups backups = new RecordingBackups();
        Task task = insert().withBackup(BackupMap.newId());
        TaskProcessor late = processor(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(TaskProcessor.STORE_WAIT_MILLIS + 1));
        late.backups(backups);
        late.accept(task);
        assertEquals(0, gateway.rows("app", "users_by_name").size(), "no derived row for a write that failed everywhere");
        assertEquals(List.of(task.backupId()), backups.abandoned);
        assertEquals(1, metrics.getAbandonedTasks());
        assertEquals(0, metrics.getPendingTasks());
    }

    @Test
    void shouldNotStartATaskBeforeItsStartDelay()
    {
        // created at 0 ns (Fixtures.task), now 5 ms later, delay 20 ms: waits the remaining 15 ms, then runs
        processor(5_000_000L).accept(insert());
        assertEquals(List.of(16L), sleeps);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
        // an older task starts at once
        processor(30_000_000L).accept(insert());
        assertEquals(List.of(16L), sleeps);
        assertEquals(2, metrics.getCompletedTasks());
    }
}
