package org.asynctriggers.backup;

import java.nio.ByteBuffer;

import org.asynctriggers.task.Task;

/**
 * The end of a backup entry's life, for the tasks of one flow version: resume positions are recorded in its backup
 * table and a finished task's entry is deleted on every replica; either way the node forgets it held the task.
 */
public final class EntryCompletion implements TaskEntries
{
    /** null when the flow keeps no backup entries */
    private final BackupTable table;
    private final HeldTasks held;

    public EntryCompletion(BackupTable table, HeldTasks held)
    {
        this.table = table;
        this.held = held;
    }

    @Override
    public void recordResume(Task task, int target, ByteBuffer paging)
    {
        if (table != null)
            table.recordResume(task, target, paging);
    }

    @Override
    public void completed(Task task)
    {
        try
        {
            if (table != null)
                table.complete(task);
        }
        finally
        {
            held.done(task);
        }
    }

    @Override
    public boolean holdsTasks()
    {
        return table != null;
    }

    @Override
    public void released(Task task)
    {
        held.release(task);
    }
}
