package org.asynctriggers.queue;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.asynctriggers.metrics.FlowCounters;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What happens to a task whose flow queue is full (docs/design.md, "Full queues"), chosen per flow by its
 * {@code overflow.policy} and counted in the flow's metrics. Tasks are offered by a replica as it applies a write, so
 * {@link #offer} never waits: {@code spill} (the default), {@code block} and {@code elastic} (after growing the pool)
 * spill to disk, {@code discard} drops (a task read back from its backup entry excepted: it waits there for a later
 * scan). Waiting belongs before the write is sent anywhere: {@link #admit}, called by the
 * trigger on the coordinator, holds a write of a {@code block} flow while that node's queue is full.
 */
public abstract class FullQueuePolicy
{
    private static final Logger logger = LoggerFactory.getLogger(FullQueuePolicy.class);

    public enum Outcome
    {
        /** queued at once */
        ACCEPTED,
        /** written to the flow's spill file; the drainer queues it later */
        SPILLED,
        /** dropped and counted */
        DISCARDED,
        /** neither queued nor spilled (the spill cannot be written): its backup entry holds it for a later scan */
        LEFT,
        /** the queue is closed (flow replaced or node shutting down): the caller re-resolves the flow */
        CLOSED
    }

    /** Never blocks, never throws. */
    public abstract Outcome offer(String flow, FlowQueue queue, Task task, FlowCounters metrics);

    /**
     * A task read back from its backup entry by a scan (a takeover, the resume of a paused flow): as {@link #offer},
     * except that it is never discarded, since its entry is the task's durable record: {@link Outcome#LEFT} instead,
     * for a later scan. Never blocks, never throws.
     */
    public Outcome offerRecovered(String flow, FlowQueue queue, Task task, FlowCounters metrics)
    {
        return offer(flow, queue, task, metrics);
    }

    /**
     * Before a write is sent to its replicas: returns at once unless the policy holds writes back.
     * @throws QueueFullException when the write must fail
     */
    public void admit(String flow, FlowQueue queue, FlowCounters metrics)
    {
    }

    /** Queue, else spill ({@code spill}; also what {@code block} and {@code elastic} do on a replica). */
    public static class Spill extends FullQueuePolicy
    {
        private final SpillStore store;

        public Spill(SpillStore store)
        {
            this.store = store;
        }

        @Override
        public Outcome offer(String flow, FlowQueue queue, Task task, FlowCounters metrics)
        {
            if (queue.isClosed())
                return Outcome.CLOSED;
            // fast path without the store's lock: nothing spilled, room in the queue
            if (!store.isSpilling() && queue.offer(task))
                return Outcome.ACCEPTED;
            return spill(queue, task, metrics);
        }

        final Outcome spill(FlowQueue queue, Task task, FlowCounters metrics)
        {
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
                    return Outcome.LEFT;
            }
        }

        boolean full(FlowQueue queue)
        {
            return store.isSpilling() || queue.size() >= queue.capacity();
        }
    }

    /**
     * {@code block}: the coordinator holds a write while its own queue of the flow is full (every node executes about
     * the same share of the tasks), up to the timeout, then fails it with OVERLOADED naming the flow. A replica still
     * spills what it cannot queue: it has applied the write already.
     */
    public static final class BlockThenFail extends Spill
    {
        private static final long RECHECK_MILLIS = 1;
        private final long timeoutMillis;
        private final LongSupplier nanoClock;

        public BlockThenFail(SpillStore store, long timeoutMillis, LongSupplier nanoClock)
        {
            super(store);
            this.timeoutMillis = timeoutMillis;
            this.nanoClock = nanoClock;
        }

        @Override
        public void admit(String flow, FlowQueue queue, FlowCounters metrics)
        {
            if (queue.isClosed() || !full(queue))
                return;
            metrics.blockStarted();
            long deadline = nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            try
            {
                while (full(queue) && !queue.isClosed())
                {
                    if (nanoClock.getAsLong() - deadline >= 0)
                    {
                        metrics.rejected();
                        throw new QueueFullException("async trigger queue of flow '" + flow + "' is full (capacity " + queue.capacity()
                                                     + ") after waiting " + timeoutMillis + " ms; the write was not applied: "
                                                     + "raise 'queue.workers' or 'queue.capacity', or slow the writers down");
                    }
                    Thread.sleep(RECHECK_MILLIS);
                }
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
            finally
            {
                metrics.blockEnded();
            }
        }
    }

    /** {@code elastic}: grows the pool by one worker (up to its maximum) when the queue is full, then spills. */
    public static final class Elastic extends Spill
    {
        private final Runnable growPool;

        /** @param growPool adds a worker to the flow's pool unless it is at its maximum */
        public Elastic(SpillStore store, Runnable growPool)
        {
            super(store);
            this.growPool = growPool;
        }

        @Override
        public Outcome offer(String flow, FlowQueue queue, Task task, FlowCounters metrics)
        {
            Outcome outcome = super.offer(flow, queue, task, metrics);
            if (outcome == Outcome.SPILLED)
                growPool.run();
            return outcome;
        }
    }

    /** {@code discard}: drops the task and counts it; a WARN at most once per 10 s per flow. */
    public static final class Discard extends FullQueuePolicy
    {
        static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

        private final LongSupplier nanoClock;
        private final AtomicLong nextWarnNanos;

        public Discard(LongSupplier nanoClock)
        {
            this.nanoClock = nanoClock;
            this.nextWarnNanos = new AtomicLong(nanoClock.getAsLong());
        }

        @Override
        public Outcome offer(String flow, FlowQueue queue, Task task, FlowCounters metrics)
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

        @Override
        public Outcome offerRecovered(String flow, FlowQueue queue, Task task, FlowCounters metrics)
        {
            if (queue.isClosed())
                return Outcome.CLOSED;
            return queue.offer(task) ? Outcome.ACCEPTED : queue.isClosed() ? Outcome.CLOSED : Outcome.LEFT;
        }
    }
}
