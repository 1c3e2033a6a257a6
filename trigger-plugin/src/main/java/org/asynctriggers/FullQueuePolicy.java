package org.asynctriggers;

/**
 * What {@code augment} does with a task whose flow queue is full. An explicit choice, counted in the flow's
 * metrics. Today: {@link BlockThenFail}; spill-to-disk, discard and elastic policies implement the same interface.
 */
public interface FullQueuePolicy
{
    enum Outcome
    {
        /** queued at once */
        ACCEPTED,
        /** queued after waiting for space */
        ACCEPTED_AFTER_BLOCKING,
        /** the queue is closed (flow replaced or runtime shutting down): the caller re-resolves the flow */
        CLOSED
    }

    /** @throws QueueFullException when the policy gives up on the task */
    Outcome enqueue(String flow, FlowQueue queue, Task task, FlowMetrics metrics);

    /** Bounded blocking put: waits up to the timeout for space, then fails the write with a clear message. */
    final class BlockThenFail implements FullQueuePolicy
    {
        private final long timeoutMillis;

        public BlockThenFail(long timeoutMillis)
        {
            this.timeoutMillis = timeoutMillis;
        }

        @Override
        public Outcome enqueue(String flow, FlowQueue queue, Task task, FlowMetrics metrics)
        {
            if (queue.isClosed())
                return Outcome.CLOSED;
            if (queue.offer(task))
                return Outcome.ACCEPTED;
            if (queue.isClosed())
                return Outcome.CLOSED;
            metrics.blockStarted();
            boolean accepted;
            try
            {
                accepted = queue.offer(task, timeoutMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
                accepted = false;
            }
            finally
            {
                metrics.blockEnded();
            }
            if (accepted)
                return Outcome.ACCEPTED_AFTER_BLOCKING;
            if (queue.isClosed())
                return Outcome.CLOSED;
            metrics.rejected();
            throw new QueueFullException("async trigger queue of flow '" + flow + "' is full (capacity " + queue.capacity()
                                         + ") after waiting " + timeoutMillis + " ms; the write was not applied: "
                                         + "raise 'queue.workers' or 'queue.capacity', or slow the writers down");
        }
    }
}
