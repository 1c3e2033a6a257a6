package org.asynctriggers;

import java.util.concurrent.ThreadFactory;
import java.util.function.LongSupplier;

import javax.management.ObjectName;

/**
 * One running flow version on this node: its queue, worker pool, retry scheduler, metrics and executor, started and
 * stopped together.
 */
final class Flow
{
    final FlowSpec spec;
    final FlowQueue queue;
    final FlowMetrics metrics;
    final WorkerPool pool;
    final Retries retries;
    private final RetryScheduler retryScheduler;
    final ObjectName objectName;
    private final FullQueuePolicy policy;
    /** set by the runtime once the MBean is registered (it may have to wait for a previous runtime to unregister) */
    volatile boolean registered;

    Flow(FlowSpec spec, FlowExecutor executor, FullQueuePolicy policy, RetryScheduler.Factory retrySchedulers,
         RetryPolicy.Jitter jitter, DeadLetters deadLetters, TaskProcessor.Sleeper sleeper, ThreadFactory threadFactory,
         LongSupplier nanoClock)
    {
        this.spec = spec;
        this.policy = policy;
        this.queue = new BoundedFlowQueue(spec.queueCapacity);
        this.metrics = new FlowMetrics(queue, spec.workers, nanoClock);
        this.retryScheduler = retrySchedulers.create(spec.name);
        this.retries = new Retries(spec.name, spec.retry, jitter, retryScheduler, queue, metrics, deadLetters, nanoClock);
        this.pool = new WorkerPool(spec.name, spec.workers, threadFactory, queue,
                                   new TaskProcessor(executor, metrics, retries, sleeper, nanoClock,
                                                     spec.startDelayMillis));
        this.objectName = FlowMetrics.objectName(spec.source.keyspace, spec.source.table, spec.name);
    }

    void start()
    {
        retryScheduler.start();
        pool.start();
    }

    FullQueuePolicy.Outcome enqueue(Task task)
    {
        return policy.enqueue(spec.name, queue, task, metrics);
    }

    /** Workers first: while they drain, their failures still schedule retries, which then become dead letters. */
    int stop(long drainMillis)
    {
        int left = pool.stop(drainMillis);
        retries.stop();
        return left;
    }
}
