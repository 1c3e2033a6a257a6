package org.asynctriggers.flows;

import java.util.concurrent.ThreadFactory;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import org.asynctriggers.work.WorkerPool;

/** How the workers of every flow on this node run: their threads, clock, retries, dead letters and idle time. */
public final class FlowWorkers
{
    final ThreadFactory threadFactory;
    final LongSupplier nanoClock;
    /** wall-clock millis, what a task's propagation lag is measured with */
    final LongSupplier wallClockMillis;
    final RetryScheduler.Factory retrySchedulers;
    final RetryPolicy.Jitter jitter;
    final TaskProcessor.Sleeper sleeper;
    final DeadLetters deadLetters;
    /** how long an elastic pool's extra worker idles before it ends */
    final long idleWorkerMillis;
    /** whether the cluster's schema is settling, when a replica's failure costs a task no attempt */
    final BooleanSupplier schemaSettling;

    public FlowWorkers(ThreadFactory threadFactory, LongSupplier nanoClock, RetryScheduler.Factory retrySchedulers,
                       RetryPolicy.Jitter jitter, TaskProcessor.Sleeper sleeper, DeadLetters deadLetters)
    {
        this(threadFactory, nanoClock, System::currentTimeMillis, retrySchedulers, jitter, sleeper, deadLetters);
    }

    public FlowWorkers(ThreadFactory threadFactory, LongSupplier nanoClock, LongSupplier wallClockMillis,
                       RetryScheduler.Factory retrySchedulers, RetryPolicy.Jitter jitter, TaskProcessor.Sleeper sleeper,
                       DeadLetters deadLetters)
    {
        this(threadFactory, nanoClock, wallClockMillis, retrySchedulers, jitter, sleeper, deadLetters,
             WorkerPool.DEFAULT_IDLE_MILLIS, () -> false);
    }

    private FlowWorkers(ThreadFactory threadFactory, LongSupplier nanoClock, LongSupplier wallClockMillis,
                        RetryScheduler.Factory retrySchedulers, RetryPolicy.Jitter jitter, TaskProcessor.Sleeper sleeper,
                        DeadLetters deadLetters, long idleWorkerMillis, BooleanSupplier schemaSettling)
    {
        this.schemaSettling = schemaSettling;
        this.threadFactory = threadFactory;
        this.nanoClock = nanoClock;
        this.wallClockMillis = wallClockMillis;
        this.retrySchedulers = retrySchedulers;
        this.jitter = jitter;
        this.sleeper = sleeper;
        this.deadLetters = deadLetters;
        this.idleWorkerMillis = idleWorkerMillis;
    }

    /** The same, with extra workers ending after {@code millis} idle. */
    FlowWorkers idleWorkerMillis(long millis)
    {
        return new FlowWorkers(threadFactory, nanoClock, wallClockMillis, retrySchedulers, jitter, sleeper, deadLetters, millis,
                               schemaSettling);
    }

    /** The same, asking {@code settling} whether the schema settles (a {@link org.asynctriggers.work.SchemaWatch}). */
    public FlowWorkers schemaSettling(BooleanSupplier settling)
    {
        return new FlowWorkers(threadFactory, nanoClock, wallClockMillis, retrySchedulers, jitter, sleeper, deadLetters,
                               idleWorkerMillis, settling);
    }
}
