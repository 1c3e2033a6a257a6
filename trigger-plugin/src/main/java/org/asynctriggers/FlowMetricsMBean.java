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
}
