package org.asynctriggers;

import java.util.function.Consumer;

/**
 * What a worker does with a task: execute it once and count it; a failure goes to {@link Retries}, which queues it
 * again later or makes it a dead letter, so the worker is at once free for the next task. The point where the replica
 * acknowledgement (hash(t) to the slaves) slots in.
 */
public final class TaskProcessor implements Consumer<Task>
{
    /** Injected so tests do not sleep. */
    @FunctionalInterface
    public interface Sleeper
    {
        void sleep(long millis) throws InterruptedException;
    }

    /** What runs a task: the flow's {@link FlowExecutor}; tests inject slow or recording ones. */
    @FunctionalInterface
    interface Executor
    {
        ExecutionResult execute(Task task);
    }

    private final Executor executor;
    private final FlowMetrics metrics;
    private final Retries retries;
    private final Sleeper sleeper;

    private final java.util.function.LongSupplier nanoClock;
    private final long startDelayNanos;
    private volatile Backups backups = Backups.NONE;
    private static final org.slf4j.Logger logger = org.slf4j.LoggerFactory.getLogger(TaskProcessor.class);
    /** how long a task waits for its backup entry (its source write) to show before it is dropped as never stored */
    static final long STORE_WAIT_MILLIS = 10_000;
    static final long STORE_RECHECK_MILLIS = 250;
    static final long STORE_UNKNOWN_RECHECK_MILLIS = 2_000;

    /** @param startDelayMillis a task starts no sooner than this after it was created (see FlowSpec#startDelayMillis) */
    TaskProcessor(FlowExecutor executor, FlowMetrics metrics, Retries retries, Sleeper sleeper,
                  java.util.function.LongSupplier nanoClock, int startDelayMillis)
    {
        this((Executor) executor::execute, metrics, retries, sleeper, nanoClock, startDelayMillis);
    }

    TaskProcessor(Executor executor, FlowMetrics metrics, Retries retries, Sleeper sleeper,
                  java.util.function.LongSupplier nanoClock, int startDelayMillis)
    {
        this.nanoClock = nanoClock;
        this.startDelayNanos = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(startDelayMillis);
        this.executor = executor;
        this.metrics = metrics;
        this.retries = retries;
        this.sleeper = sleeper;
    }

    void backups(Backups backups)
    {
        this.backups = backups;
    }

    @Override
    public void accept(Task task)
    {
        // a task read from a backup map (stored) was written long ago: no need to let its write finish first
        long early = task.isStored() ? 0 : task.createdNanos() + startDelayNanos - nanoClock.getAsLong();
        if (early > 0)
        {
            try
            {
                sleeper.sleep(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(early) + 1);
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt(); // stopping: run it now rather than lose it
            }
        }
        if (task.backupId() != null && !task.isStored())
        {
            Boolean stored = stored(task, false);
            if (!Boolean.TRUE.equals(stored))
            {
                long age = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - task.createdNanos());
                if (age < STORE_WAIT_MILLIS)
                {
                    defer(task, STORE_RECHECK_MILLIS);
                    return;
                }
                // long enough for any write in flight: only a read of every replica may conclude it was never stored
                stored = stored(task, true);
                if (stored == null)
                {
                    // a replica does not answer: cannot tell yet; the entry, if any, is safe on the live replicas
                    if (age < retries.maxAgeMillis())
                    {
                        defer(task, STORE_UNKNOWN_RECHECK_MILLIS);
                        return;
                    }
                    logger.warn("Flow '{}': could not tell for {} ms whether the source write of {} was stored; "
                                + "left to its replicas' safety net", task.flow(), age, task);
                    backups.abandoned(task);
                    metrics.taskAbandoned();
                    return;
                }
                if (!stored)
                {
                    logger.info("Flow '{}': the source write of {} is on no replica after {} ms (it failed); "
                                + "task dropped", task.flow(), task, age);
                    metrics.taskAbandoned();
                    backups.abandoned(task);
                    return;
                }
            }
            task = task.stored();
        }
        metrics.taskStarted();
        ExecutionResult result;
        try
        {
            result = executor.execute(task);
        }
        catch (RuntimeException | AssertionError e)
        {
            result = ExecutionResult.failure(e); // the executor returns its failures; this is a bug there, still retried
        }
        if (!result.isSuccess())
        {
            retries.failed(task, result.cause());
            return;
        }
        metrics.fanoutRowsWritten(result.fanoutRows());
        if (result.hasMore())
        {
            if (task.backupId() != null)
            {
                try
                {
                    backups.recordResume(task, result.resumeTarget(), result.resumePaging());
                }
                catch (RuntimeException e)
                {
                    logger.debug("Flow '{}': resume position of {} not recorded: {}", task.flow(), task, e.toString());
                }
            }
            metrics.taskYielded();
            retries.later(task.resumeAt(result.resumeTarget(), result.resumePaging()), 0);
            return;
        }
        try
        {
            backups.completed(task);
        }
        catch (RuntimeException e)
        {
            logger.debug("Flow '{}': backup entry of {} not removed ({}); a replica may run it again", task.flow(), task, e.toString());
        }
        metrics.taskFinished(true);
    }

    private void defer(Task task, long millis)
    {
        metrics.taskDeferred();
        retries.later(task, millis);
    }

    /** Reads the task's backup entry; null when the read failed. */
    private Boolean stored(Task task, boolean everywhere)
    {
        try
        {
            return backups.isStored(task, everywhere);
        }
        catch (RuntimeException e)
        {
            logger.debug("Flow '{}': backup entry of {} not readable{}: {}", task.flow(), task, everywhere ? " at ALL" : "", e.toString());
            return null;
        }
    }
}
