package org.asynctriggers;

/** JMX view of one flow on this node: {@code org.asynctriggers:type=Flow,keyspace=..,table=..,flow=..}. */
public interface FlowMetricsMBean
{
    long getPendingTasks();

    long getActiveTasks();

    long getCompletedTasks();

    long getFailedTasks();

    long getRetriedTasks();

    long getOldestPendingTaskAgeMillis();

    int getMaxPoolSize();

    int getQueueCapacity();

    long getCurrentlyBlockedTasks();

    long getTotalBlockedTasks();

    long getRejectedTasks();

    /** tasks written to the spill file since the flow started (spill policy) */
    long getSpilledTasks();

    /** spilled tasks on disk now, not yet back in the queue; also counted in {@link #getPendingTasks()} */
    long getSpilledPending();

    /** tasks dropped on a full queue (discard policy) */
    long getDiscardedTasks();
}
