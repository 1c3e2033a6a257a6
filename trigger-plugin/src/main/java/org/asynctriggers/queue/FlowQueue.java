package org.asynctriggers.queue;

import java.util.concurrent.TimeUnit;

import org.asynctriggers.metrics.QueueGauge;
import org.asynctriggers.task.Task;

/**
 * The node-local queue of one flow. Bounded; once {@link #close() closed} it refuses new tasks but still hands out
 * what it holds, so workers can drain it. Implementation: {@link BoundedFlowQueue} (FlowQueueContractTest); the spill
 * policy keeps its overflow beside the queue, in {@link SpillStore}.
 */
public interface FlowQueue extends QueueGauge
{
    /** Adds without waiting; false when full or closed. */
    boolean offer(Task task);

    /** Adds, waiting up to the timeout for space; false when still full, or closed. */
    boolean offer(Task task, long timeout, TimeUnit unit) throws InterruptedException;

    /** The oldest task, waiting up to the timeout; null when none arrived. */
    Task poll(long timeout, TimeUnit unit) throws InterruptedException;

    void close();

    boolean isClosed();
}
