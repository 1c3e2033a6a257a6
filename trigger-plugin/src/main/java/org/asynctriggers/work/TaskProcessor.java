package org.asynctriggers.work;

import java.util.function.Consumer;

import org.asynctriggers.backup.TaskEntries;
import org.asynctriggers.execute.ExecutionResult;
import org.asynctriggers.execute.FlowExecutor;
import org.asynctriggers.metrics.FlowCounters;
import org.asynctriggers.task.Task;

/**
 * What a worker does with a task: execute it once and count it; a failure goes to {@link Retries}, which queues it
 * again later or makes it a dead letter, so the worker is at once free for the next task. A finished task completes
 * its backup entry on every replica (the report's notification of hash(t) to the slaves).
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
    public interface Executor
    {
        ExecutionResult execute(Task task);
    }

    private final Executor executor;
    private final FlowCounters metrics;
    private final Retries retries;
    private final Sleeper sleeper;

    private final java.util.function.LongSupplier nanoClock;
    private final long startDelayNanos;
    private volatile TaskEntries entries = TaskEntries.NONE;
    private static final org.slf4j.Logger logger = org.slf4j.LoggerFactory.getLogger(TaskProcessor.class);

    /** @param startDelayMillis a task starts no sooner than this after it was created (see FlowSpec#startDelayMillis) */
    public TaskProcessor(FlowExecutor executor, FlowCounters metrics, Retries retries, Sleeper sleeper,
                  java.util.function.LongSupplier nanoClock, int startDelayMillis)
    {
        this((Executor) executor::execute, metrics, retries, sleeper, nanoClock, startDelayMillis);
    }

    public TaskProcessor(Executor executor, FlowCounters metrics, Retries retries, Sleeper sleeper,
                  java.util.function.LongSupplier nanoClock, int startDelayMillis)
    {
        this.nanoClock = nanoClock;
        this.startDelayNanos = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(startDelayMillis);
        this.executor = executor;
        this.metrics = metrics;
        this.retries = retries;
        this.sleeper = sleeper;
    }

    public void entries(TaskEntries entries)
    {
        this.entries = entries;
    }

    @Override
    public void accept(Task task)
    {
        if (entries.leaves(task))
            return; // the row's executor is another node now: its scan runs the entry (backup/Handover)
        // a task read from a backup map was written long ago: no need to let its write finish first
        long early = task.isRecovered() ? 0 : task.createdNanos() + startDelayNanos - nanoClock.getAsLong();
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
        metrics.taskStarted();
        ExecutionResult result;
        try
        {
            result = executor.execute(task);
        }
        catch (Throwable e)
        {
            result = ExecutionResult.failure(e); // the executor returns its failures; this is a bug there, still retried
        }
        if (!result.isSuccess())
        {
            try
            {
                retries.failed(task, result.cause());
            }
            catch (Throwable e)
            {
                // never forget a task: its entry holds it, and a scan runs it again
                logger.error("Flow '{}': could not schedule a retry of {}; its backup entry keeps it", task.flow(), task, e);
                metrics.taskFinished(false);
                entries.released(task);
            }
            return;
        }
        metrics.fanoutRowsWritten(result.fanoutRows());
        if (result.hasMore())
        {
            try
            {
                entries.recordResume(task, result.resumeTarget(), result.resumePaging());
            }
            catch (RuntimeException e)
            {
                logger.debug("Flow '{}': resume position of {} not recorded: {}", task.flow(), task, e.toString());
            }
            metrics.taskYielded();
            retries.requeueRest(task.resumeAt(result.resumeTarget(), result.resumePaging()));
            return;
        }
        try
        {
            entries.completed(task);
        }
        catch (RuntimeException e)
        {
            logger.debug("Flow '{}': backup entry of {} not removed ({}); a replica may run it again", task.flow(), task, e.toString());
        }
        metrics.propagated(task.timestamp());
        metrics.taskFinished(true);
    }
}
