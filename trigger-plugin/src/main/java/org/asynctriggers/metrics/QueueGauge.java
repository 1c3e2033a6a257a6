package org.asynctriggers.metrics;

/** What {@link FlowMetrics} reads of a flow's queue. */
public interface QueueGauge
{
    int size();

    int capacity();

    /** {@link System#nanoTime} at which the oldest queued task was created; {@code Long.MAX_VALUE} when empty. */
    long oldestCreatedNanos();
}
