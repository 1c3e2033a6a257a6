package org.asynctriggers;

import java.util.concurrent.ThreadFactory;
import java.util.function.LongSupplier;

import javax.management.ObjectName;

/** One running flow version on this node: its queue, worker pool, metrics and executor, started and stopped together. */
final class Flow
{
    final FlowSpec spec;
    final FlowQueue queue;
    final FlowMetrics metrics;
    final WorkerPool pool;
    final ObjectName objectName;
    private final FullQueuePolicy policy;
    /** set by the runtime once the MBean is registered (it may have to wait for a previous runtime to unregister) */
    volatile boolean registered;

    Flow(FlowSpec spec, FlowExecutor executor, FullQueuePolicy policy, RetryPolicy retry, TaskProcessor.Sleeper sleeper,
         ThreadFactory threadFactory, LongSupplier nanoClock)
    {
        this.spec = spec;
        this.policy = policy;
        this.queue = new BoundedFlowQueue(spec.queueCapacity);
        this.metrics = new FlowMetrics(queue, spec.workers, nanoClock);
        this.pool = new WorkerPool(spec.name, spec.workers, threadFactory, queue,
                                   new TaskProcessor(spec.name, executor, metrics, retry, sleeper, nanoClock,
                                                     spec.startDelayMillis));
        this.objectName = FlowMetrics.objectName(spec.source.keyspace, spec.source.table, spec.name);
    }

    void start()
    {
        pool.start();
    }

    FullQueuePolicy.Outcome enqueue(Task task)
    {
        return policy.enqueue(spec.name, queue, task, metrics);
    }

    int stop(long drainMillis)
    {
        return pool.stop(drainMillis);
    }
}
