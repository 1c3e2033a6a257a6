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

    /**
     * Whether a worker leaves this task, queued here when this node executed its row, to the node that executes the
     * row now (docs/design.md, "Who executes a task": handover): its entry stays, that node's scan runs it, and this
     * node forgets it held it. Never a task read back from an entry (an orphan adopted here would be left again and
     * again), nor one whose entry could not be written here.
     */
    default boolean leaves(Task task)
    {
        return false;
    }

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
