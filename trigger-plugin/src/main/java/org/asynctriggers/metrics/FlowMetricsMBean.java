package org.asynctriggers.metrics;

/** JMX view of one flow on this node: {@code org.asynctriggers:type=Flow,keyspace=..,table=..,flow=..}. */
public interface FlowMetricsMBean
{
    long getPendingTasks();

    long getActiveTasks();

    long getCompletedTasks();

    long getFailedTasks();

    long getRetriedTasks();

    /** tasks that became dead letters (also counted in {@link #getFailedTasks()}) */
    long getDeadLetteredTasks();

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

    /** tasks queued on this node from a replica backup map: takeover of a dead or restarted master, recovery, safety net */
    long getRecoveredTasks();

    /** recovered tasks that went on from a recorded fan-out resume position rather than from the start */
    long getResumedTasks();

    /** fan-out rows written or deleted by this node's workers */
    long getFanoutRowsWritten();

    /** backup entries this node wrote as a replica of source writes */
    long getBackupEntries();

    /** the flow is paused on this node ({@code ctl trigger pause}): its workers take no task, its new tasks wait in the backup maps */
    boolean isPaused();
}
