package org.asynctriggers.backup;

import java.nio.ByteBuffer;

import org.asynctriggers.task.Task;

/**
 * What the workers of one flow do with the backup entries of their tasks (docs/design.md, "Replica backup maps"):
 * record fan-out resume positions, and complete entries.
 */
public interface TaskEntries
{
    void recordResume(Task task, int target, ByteBuffer paging);

    /** done, a dead letter, or discarded: the entry goes */
    void completed(Task task);

    /**
     * The task leaves this node's hands unfinished (its dead letter could not be written): its entry stays, and the
     * node forgets it was queued, so the next scan runs it again from the entry.
     */
    void released(Task task);

    /** Whether a backup entry holds each task (false: the flow keeps none, its queue is the only copy). */
    default boolean holdsTasks()
    {
        return false;
    }

    /** For tests: nothing is recorded. */
    TaskEntries NONE = new TaskEntries()
    {
        @Override
        public void recordResume(Task task, int target, ByteBuffer paging)
        {
        }

        @Override
        public void completed(Task task)
        {
        }

        @Override
        public void released(Task task)
        {
        }
    };
}
