package org.asynctriggers.metrics;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

import com.codahale.metrics.Histogram;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

import org.apache.cassandra.metrics.DecayingEstimatedHistogramReservoir;

/**
 * Counters of one flow. Updates are single adder increments and reads never throw, so the hot path (augment and
 * workers) is never disturbed by metrics. The propagation lag (source write to completion) is a histogram that
 * carries over from the version a redeploy replaces, like the counts; {@link CassandraMetrics} shows all of it in
 * Cassandra's own metrics registry too.
 * <p>
 * About 400 lines, one getter per figure: it is the JMX MBean's implementation, and an MBean's attributes are its
 * interface's getters, so splitting it would only split that list.
 */
public final class FlowMetrics implements FlowMetricsMBean, FlowCounters
{
    private final QueueGauge queue;
    private final int poolSize;
    /** the pool's current size (elastic pools change it); must not throw */
    private volatile java.util.function.IntSupplier currentPoolSize;
    /** tasks on disk now (spill policy); must not throw */
    private volatile LongSupplier spilledPending = () -> 0;
    private final LongAdder spilled = new LongAdder();
    private final LongAdder discarded = new LongAdder();
    private final LongSupplier nanoClock;
    private final LongAdder active = new LongAdder();
    private final LongAdder completed = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder retried = new LongAdder();
    private final LongAdder currentlyBlocked = new LongAdder();
    private final LongAdder totalBlocked = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder recovered = new LongAdder();
    private final LongAdder resumed = new LongAdder();
    private final LongAdder fanoutRows = new LongAdder();
    private final LongAdder backupEntries = new LongAdder();
    private final LongAdder deadLettered = new LongAdder();
    private final LongSupplier wallClockMillis;
    /** milliseconds from the source write's timestamp to the task's completion, one value per completed task */
    private final Histogram propagationLag;
    /** failed tasks waiting for their retry: pending too, or a drained queue would hide work still to do */
    private final LongAdder awaitingRetry = new LongAdder();
    /** the replaced version of this flow while it drains; its counts show here, so a redeploy resets nothing */
    private volatile FlowMetrics previous;
    private volatile boolean paused;

    public FlowMetrics(QueueGauge queue, int poolSize, LongSupplier nanoClock)
    {
        this(queue, poolSize, nanoClock, System::currentTimeMillis, newLagHistogram());
    }

    /**
     * @param wallClockMillis the clock the lag is measured with (source timestamps are wall-clock microseconds)
     * @param propagationLag the lag histogram: a new one ({@link #newLagHistogram()}), or the replaced version's
     */
    public FlowMetrics(QueueGauge queue, int poolSize, LongSupplier nanoClock, LongSupplier wallClockMillis,
                       Histogram propagationLag)
    {
        this.queue = queue;
        this.poolSize = poolSize;
        this.currentPoolSize = () -> poolSize;
        this.nanoClock = nanoClock;
        this.wallClockMillis = wallClockMillis;
        this.propagationLag = propagationLag;
    }

    /** Cassandra's own latency reservoir (exponentially decaying buckets, as its read and write latencies use). */
    public static Histogram newLagHistogram()
    {
        return new Histogram(new DecayingEstimatedHistogramReservoir(true));
    }

    public Histogram propagationLag()
    {
        return propagationLag;
    }

    public static ObjectName objectName(String keyspace, String table, String flow)
    {
        try
        {
            return new ObjectName("org.asynctriggers:type=Flow,keyspace=" + ObjectName.quote(keyspace) + ",table="
                                  + ObjectName.quote(table) + ",flow=" + ObjectName.quote(flow));
        }
        catch (MalformedObjectNameException e)
        {
            throw new IllegalArgumentException(e);
        }
    }

    public void poolSize(java.util.function.IntSupplier current)
    {
        currentPoolSize = current;
    }

    public void spilledPending(LongSupplier onDisk)
    {
        spilledPending = onDisk;
    }

    public void spilled()
    {
        spilled.increment();
    }

    public void discarded()
    {
        discarded.increment();
    }

    /** The flow was paused or resumed on this node. */
    public void paused(boolean paused)
    {
        this.paused = paused;
    }

    @Override
    public boolean isPaused()
    {
        return paused;
    }

    /** Counts of the version this one replaces (still draining) show in this one's from now on. */
    public void continueFrom(FlowMetrics replaced)
    {
        previous = replaced;
    }

    /** The replaced version stopped: its final counts become this one's, and the link is dropped. */
    public void absorbPrevious()
    {
        FlowMetrics p = previous;
        if (p == null)
            return;
        completed.add(p.getCompletedTasks());
        failed.add(p.getFailedTasks());
        retried.add(p.getRetriedTasks());
        totalBlocked.add(p.getTotalBlockedTasks());
        rejected.add(p.getRejectedTasks());
        spilled.add(p.getSpilledTasks());
        discarded.add(p.getDiscardedTasks());
        recovered.add(p.getRecoveredTasks());
        resumed.add(p.getResumedTasks());
        fanoutRows.add(p.getFanoutRowsWritten());
        backupEntries.add(p.getBackupEntries());
        deadLettered.add(p.getDeadLetteredTasks());
        previous = null;
    }

    /** A deploy's sweep of the fan-out table (FollowSweep) runs here: counted active, so the flow is not drained. */
    public void sweeping(boolean running)
    {
        if (running)
            active.increment();
        else
            active.decrement();
    }

    public void taskStarted()
    {
        active.increment();
    }

    public void taskFinished(boolean success)
    {
        active.decrement();
        (success ? completed : failed).increment();
    }

    /** A task waiting for its retry became a dead letter (its flow stopped): it failed without being active. */
    public void retryAbandoned()
    {
        awaitingRetry.decrement();
        failed.increment();
    }

    /** A task waiting for its retry was left to its backup entry (its flow version stopped): a scan runs it. */
    public void retryReleased()
    {
        awaitingRetry.decrement();
    }

    /** A task waiting for its retry is back in the queue. */
    public void retryQueued()
    {
        awaitingRetry.decrement();
    }

    /** An execution failed and the task waits for its retry: no longer active, not finished either. */
    public void taskRetrying()
    {
        active.decrement();
        retried.increment();
        awaitingRetry.increment();
    }

    /** One chunk of a fan-out done, the rest queued again: no longer active, still pending. */
    public void taskYielded()
    {
        active.decrement();
        awaitingRetry.increment();
    }

    /** A task became a dead letter (its row is in {@code async_triggers.dead_letters}). */
    public void deadLettered()
    {
        deadLettered.increment();
    }

    /**
     * A task completed: its lag from the source write ({@code sourceWriteMicros}, the write's timestamp) to now. A
     * write stamped in the future (a client's clock ahead of this node's) counts as no lag rather than a negative one.
     */
    public void propagated(long sourceWriteMicros)
    {
        try
        {
            long lag = wallClockMillis.getAsLong() - TimeUnit.MICROSECONDS.toMillis(sourceWriteMicros);
            propagationLag.update(Math.max(0, lag));
        }
        catch (RuntimeException e)
        {
            // metrics never fail a task
        }
    }

    /** Queued from a backup map (takeover, restart, safety net); resumed: from a recorded fan-out position. */
    public void taskRecovered(boolean fromResumePosition)
    {
        recovered.increment();
        if (fromResumePosition)
            resumed.increment();
    }

    public void fanoutRowsWritten(long rows)
    {
        if (rows > 0)
            fanoutRows.add(rows);
    }

    public void backupEntriesWritten(int entries)
    {
        backupEntries.add(entries);
    }

    @Override
    public long getDeadLetteredTasks()
    {
        FlowMetrics p = previous;
        return deadLettered.sum() + (p == null ? 0 : p.getDeadLetteredTasks());
    }

    @Override
    public long getRecoveredTasks()
    {
        FlowMetrics p = previous;
        return recovered.sum() + (p == null ? 0 : p.getRecoveredTasks());
    }

    @Override
    public long getResumedTasks()
    {
        FlowMetrics p = previous;
        return resumed.sum() + (p == null ? 0 : p.getResumedTasks());
    }


    @Override
    public long getFanoutRowsWritten()
    {
        FlowMetrics p = previous;
        return fanoutRows.sum() + (p == null ? 0 : p.getFanoutRowsWritten());
    }

    @Override
    public long getBackupEntries()
    {
        FlowMetrics p = previous;
        return backupEntries.sum() + (p == null ? 0 : p.getBackupEntries());
    }

    public void blockStarted()
    {
        currentlyBlocked.increment();
        totalBlocked.increment();
    }

    public void blockEnded()
    {
        currentlyBlocked.decrement();
    }

    public void rejected()
    {
        rejected.increment();
    }

    @Override
    public long getPendingTasks()
    {
        FlowMetrics p = previous;
        return queue.size() + awaitingRetry.sum() + onDisk() + (p == null ? 0 : p.getPendingTasks());
    }

    @Override
    public long getActiveTasks()
    {
        FlowMetrics p = previous;
        return active.sum() + (p == null ? 0 : p.getActiveTasks());
    }

    @Override
    public long getCompletedTasks()
    {
        FlowMetrics p = previous;
        return completed.sum() + (p == null ? 0 : p.getCompletedTasks());
    }

    @Override
    public long getFailedTasks()
    {
        FlowMetrics p = previous;
        return failed.sum() + (p == null ? 0 : p.getFailedTasks());
    }

    @Override
    public long getRetriedTasks()
    {
        FlowMetrics p = previous;
        return retried.sum() + (p == null ? 0 : p.getRetriedTasks());
    }

    @Override
    public long getOldestPendingTaskAgeMillis()
    {
        long oldest = queue.oldestCreatedNanos();
        if (oldest == Long.MAX_VALUE)
            return 0;
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - oldest));
    }

    private long onDisk()
    {
        try
        {
            return spilledPending.getAsLong();
        }
        catch (RuntimeException e)
        {
            return 0;
        }
    }

    /** The current pool size: {@code queue.workers}, more while an elastic pool has grown. */
    @Override
    public int getMaxPoolSize()
    {
        try
        {
            return currentPoolSize.getAsInt();
        }
        catch (RuntimeException e)
        {
            return poolSize;
        }
    }

    @Override
    public long getSpilledTasks()
    {
        FlowMetrics p = previous;
        return spilled.sum() + (p == null ? 0 : p.getSpilledTasks());
    }

    @Override
    public long getSpilledPending()
    {
        FlowMetrics p = previous;
        return onDisk() + (p == null ? 0 : p.getSpilledPending());
    }

    @Override
    public long getDiscardedTasks()
    {
        FlowMetrics p = previous;
        return discarded.sum() + (p == null ? 0 : p.getDiscardedTasks());
    }

    @Override
    public int getQueueCapacity()
    {
        return queue.capacity();
    }

    @Override
    public long getCurrentlyBlockedTasks()
    {
        return currentlyBlocked.sum();
    }

    @Override
    public long getTotalBlockedTasks()
    {
        FlowMetrics p = previous;
        return totalBlocked.sum() + (p == null ? 0 : p.getTotalBlockedTasks());
    }

    @Override
    public long getRejectedTasks()
    {
        FlowMetrics p = previous;
        return rejected.sum() + (p == null ? 0 : p.getRejectedTasks());
    }
}
