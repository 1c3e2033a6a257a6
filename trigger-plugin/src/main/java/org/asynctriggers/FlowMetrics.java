package org.asynctriggers;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

/**
 * Counters of one flow. Updates are single adder increments and reads never throw, so the hot path (augment and
 * workers) is never disturbed by metrics.
 */
public final class FlowMetrics implements FlowMetricsMBean
{
    private final FlowQueue queue;
    private final int poolSize;
    private final LongSupplier nanoClock;
    private final LongAdder active = new LongAdder();
    private final LongAdder completed = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder retried = new LongAdder();
    private final LongAdder currentlyBlocked = new LongAdder();
    private final LongAdder totalBlocked = new LongAdder();
    private final LongAdder rejected = new LongAdder();

    public FlowMetrics(FlowQueue queue, int poolSize, LongSupplier nanoClock)
    {
        this.queue = queue;
        this.poolSize = poolSize;
        this.nanoClock = nanoClock;
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

    void taskStarted()
    {
        active.increment();
    }

    void taskFinished(boolean success)
    {
        active.decrement();
        (success ? completed : failed).increment();
    }

    void retried()
    {
        retried.increment();
    }

    void blockStarted()
    {
        currentlyBlocked.increment();
        totalBlocked.increment();
    }

    void blockEnded()
    {
        currentlyBlocked.decrement();
    }

    void rejected()
    {
        rejected.increment();
    }

    @Override
    public long getPendingTasks()
    {
        return queue.size();
    }

    @Override
    public long getActiveTasks()
    {
        return active.sum();
    }

    @Override
    public long getCompletedTasks()
    {
        return completed.sum();
    }

    @Override
    public long getFailedTasks()
    {
        return failed.sum();
    }

    @Override
    public long getRetriedTasks()
    {
        return retried.sum();
    }

    @Override
    public long getOldestPendingTaskAgeMillis()
    {
        long oldest = queue.oldestCreatedNanos();
        if (oldest == Long.MAX_VALUE)
            return 0;
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - oldest));
    }

    @Override
    public int getMaxPoolSize()
    {
        return poolSize;
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
        return totalBlocked.sum();
    }

    @Override
    public long getRejectedTasks()
    {
        return rejected.sum();
    }
}
