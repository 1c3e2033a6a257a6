package org.asynctriggers;

import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a worker does with a task: execute, retry failures with backoff, count, and give up loudly. The point where
 * dead letters (instead of dropping) and the replica acknowledgement (hash(t) to the slaves) slot in.
 */
public final class TaskProcessor implements Consumer<Task>
{
    private static final Logger logger = LoggerFactory.getLogger(TaskProcessor.class);

    /** Injected so tests do not sleep. */
    @FunctionalInterface
    public interface Sleeper
    {
        void sleep(long millis) throws InterruptedException;
    }

    private final String flow;
    private final FlowExecutor executor;
    private final FlowMetrics metrics;
    private final RetryPolicy retry;
    private final Sleeper sleeper;

    private final java.util.function.LongSupplier nanoClock;
    private final long startDelayNanos;

    public TaskProcessor(String flow, FlowExecutor executor, FlowMetrics metrics, RetryPolicy retry, Sleeper sleeper)
    {
        this(flow, executor, metrics, retry, sleeper, System::nanoTime, 0);
    }

    /** @param startDelayMillis a task starts no sooner than this after it was created (see FlowSpec#startDelayMillis) */
    public TaskProcessor(String flow, FlowExecutor executor, FlowMetrics metrics, RetryPolicy retry, Sleeper sleeper,
                         java.util.function.LongSupplier nanoClock, int startDelayMillis)
    {
        this.nanoClock = nanoClock;
        this.startDelayNanos = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(startDelayMillis);
        this.flow = flow;
        this.executor = executor;
        this.metrics = metrics;
        this.retry = retry;
        this.sleeper = sleeper;
    }

    @Override
    public void accept(Task task)
    {
        long early = task.createdNanos() + startDelayNanos - nanoClock.getAsLong();
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
        boolean success = false;
        try
        {
            for (int attempt = 1; ; attempt++)
            {
                ExecutionResult result = executor.execute(task);
                if (result.isSuccess())
                {
                    success = true;
                    return;
                }
                if (attempt >= retry.maxAttempts)
                {
                    logger.error("Flow '{}': dropping task after {} failed attempts: {}", flow, attempt, task, result.cause());
                    return;
                }
                long backoff = retry.backoffMillis(attempt);
                logger.warn("Flow '{}': attempt {} failed on {}, retrying in {} ms: {}", flow, attempt, task, backoff,
                            String.valueOf(result.cause()));
                metrics.retried();
                try
                {
                    sleeper.sleep(backoff);
                }
                catch (InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    logger.error("Flow '{}': interrupted while retrying, dropping task: {}", flow, task, result.cause());
                    return;
                }
            }
        }
        finally
        {
            metrics.taskFinished(success);
        }
    }
}
