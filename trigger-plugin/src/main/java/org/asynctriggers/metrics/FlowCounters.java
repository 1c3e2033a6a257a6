package org.asynctriggers.metrics;

/**
 * What the queue and the workers of one flow count as tasks pass through them; {@link FlowMetrics} keeps the counts
 * and shows them over JMX. Never throws: it is called on the write path and on every task.
 */
public interface FlowCounters
{
    void taskStarted();

    /** An execution ended, successfully or for good (a dead letter). */
    void taskFinished(boolean success);

    /** One chunk of a fan-out done, the rest queued again: no longer active, still pending. */
    void taskYielded();

    void fanoutRowsWritten(long rows);

    /** A task completed; its source write had this timestamp (microseconds): the propagation lag. */
    void propagated(long sourceWriteMicros);

    /** A task became a dead letter. */
    void deadLettered();

    /** A task waiting for its retry is back in the queue. */
    void retryQueued();

    /** A task waiting for its retry became a dead letter (its flow stopped): it failed without being active. */
    void retryAbandoned();

    /**
     * A task waiting for its retry, or the rest of a fan-out, was left to its backup entry when its flow version
     * stopped: not failed, not done here; the next scan (the new version's, or the node's after a restart) runs it.
     */
    void retryReleased();

    /** An execution failed and the task waits for its retry: no longer active, not finished either. */
    void taskRetrying();

    /** A task that found its queue full went to the spill. */
    void spilled();

    /** A task that found its queue full was dropped ({@code discard}). */
    void discarded();

    long getDiscardedTasks();

    /** A coordinator's write is held while the queue is full ({@code block}). */
    void blockStarted();

    void blockEnded();

    /** A held write failed with OVERLOADED. */
    void rejected();
}
