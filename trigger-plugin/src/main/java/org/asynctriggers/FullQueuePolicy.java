package org.asynctriggers;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code augment} does with a task whose flow queue is full (docs/design.md, "Full queues"): chosen per flow by
 * its {@code overflow.policy} and counted in the flow's metrics. {@link BlockThenFail} ({@code block}),
 * {@link Spill} ({@code spill}, the default), {@link Discard} ({@code discard}), {@link Elastic} ({@code elastic}).
 */
public interface FullQueuePolicy
{
    enum Outcome
    {
        /** queued at once */
        ACCEPTED,
        /** queued after waiting for space */
        ACCEPTED_AFTER_BLOCKING,
        /** written to the flow's spill file; the drainer queues it later */
        SPILLED,
        /** dropped and counted */
        DISCARDED,
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
            return block(flow, queue, task, metrics);
        }

        /** The waiting part, after a first offer failed. */
        Outcome block(String flow, FlowQueue queue, Task task, FlowMetrics metrics)
        {
            if (queue.isClosed())
                return Outcome.CLOSED;
            metrics.blockStarted();
            boolean accepted;
            try
            {
                accepted = queue.offer(task, timeoutMillis, TimeUnit.MILLISECONDS);
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

    /**
     * Spills to the flow's {@link SpillStore} instead of waiting; never blocks the writer, unless the spill cannot be
     * written (disk full or failing): then it blocks like {@link BlockThenFail}, the error logged by the store.
     */
    final class Spill implements FullQueuePolicy
    {
        private final SpillStore store;
        private final BlockThenFail fallback;

        public Spill(SpillStore store, long blockTimeoutMillis)
        {
            this.store = store;
            this.fallback = new BlockThenFail(blockTimeoutMillis);
        }

        @Override
        public Outcome enqueue(String flow, FlowQueue queue, Task task, FlowMetrics metrics)
        {
            if (queue.isClosed())
                return Outcome.CLOSED;
            // fast path without the store's lock: nothing spilled, room in the queue
            if (!store.isSpilling() && queue.offer(task))
                return Outcome.ACCEPTED;
            switch (store.offerOrSpill(queue, task))
            {
                case QUEUED:
                    return Outcome.ACCEPTED;
                case SPILLED:
                    metrics.spilled();
                    return Outcome.SPILLED;
                case CLOSED:
                    return Outcome.CLOSED;
                default:
                    return fallback.block(flow, queue, task, metrics);
            }
        }
    }

    /** Drops the task and counts it; a WARN at most once per 10 s per flow. */
    final class Discard implements FullQueuePolicy
    {
        private static final Logger logger = LoggerFactory.getLogger(Discard.class);
        static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

        private final LongSupplier nanoClock;
        private final AtomicLong nextWarnNanos;

        public Discard(LongSupplier nanoClock)
        {
            this.nanoClock = nanoClock;
            this.nextWarnNanos = new AtomicLong(nanoClock.getAsLong());
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
            metrics.discarded();
            long now = nanoClock.getAsLong();
            long next = nextWarnNanos.get();
            if (now - next >= 0 && nextWarnNanos.compareAndSet(next, now + WARN_INTERVAL_NANOS))
                logger.warn("Flow '{}': queue full (capacity {}), task discarded ('overflow.policy' is discard); "
                            + "{} discarded so far", flow, queue.capacity(), metrics.getDiscardedTasks());
            return Outcome.DISCARDED;
        }
    }

    /** Grows the pool by one worker (up to its maximum) when the queue is full, then blocks like {@link BlockThenFail}. */
    final class Elastic implements FullQueuePolicy
    {
        private final WorkerPool pool;
        private final BlockThenFail block;

        public Elastic(WorkerPool pool, long blockTimeoutMillis)
        {
            this.pool = pool;
            this.block = new BlockThenFail(blockTimeoutMillis);
        }

        @Override
        public Outcome enqueue(String flow, FlowQueue queue, Task task, FlowMetrics metrics)
        {
            if (queue.isClosed())
                return Outcome.CLOSED;
            if (queue.offer(task))
                return Outcome.ACCEPTED;
            pool.grow();
            return block.block(flow, queue, task, metrics);
        }
    }
}
