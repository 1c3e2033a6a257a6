package org.asynctriggers.queue;

import org.asynctriggers.task.Task;
import java.util.concurrent.TimeUnit;

/**
 * The node-local queue of one flow. Bounded; once {@link #close() closed} it refuses new tasks but still hands out
 * what it holds, so workers can drain it. Implementation: {@link BoundedFlowQueue} (FlowQueueContractTest); the spill
 * policy keeps its overflow beside the queue, in {@link SpillStore}.
 */
public interface FlowQueue
{
    /** Adds without waiting; false when full or closed. */
    boolean offer(Task task);

    /** Adds, waiting up to the timeout for space; false when still full, or closed. */
    boolean offer(Task task, long timeout, TimeUnit unit) throws InterruptedException;

    /** The oldest task, waiting up to the timeout; null when none arrived. */
    Task poll(long timeout, TimeUnit unit) throws InterruptedException;

    int size();

    int capacity();

    /** {@link Task#createdNanos()} of the oldest queued task, or {@code Long.MAX_VALUE} when empty. */
    long oldestCreatedNanos();

    void close();

    boolean isClosed();
}
