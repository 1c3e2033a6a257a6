package org.asynctriggers.backup;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a backup entry's life, for the tasks of one flow version: resume positions are recorded in its backup
 * table and a finished task's entry is deleted on every replica; either way the node forgets it held the task.
 */
public final class EntryCompletion implements TaskEntries
{
    private static final Logger logger = LoggerFactory.getLogger(EntryCompletion.class);
    /** null when the flow keeps no backup entries */
    private final BackupTable table;
    private final HeldTasks held;
    /** null: every task queued here runs here */
    private final Handover handover;
    private final AtomicLong left = new AtomicLong();

    public EntryCompletion(BackupTable table, HeldTasks held)
    {
        this(table, held, null);
    }

    public EntryCompletion(BackupTable table, HeldTasks held, Handover handover)
    {
        this.table = table;
        this.held = held;
        this.handover = handover;
    }

    @Override
    public boolean leaves(Task task)
    {
        if (table == null || handover == null || !handover.leaves(task))
            return false;
        held.release(task);
        long n = left.incrementAndGet();
        if (n == 1 || n % 1000 == 0)
            logger.info("Flow '{}': {} queued task(s) left to their rows' executors since this node started (the ring changed): {}",
                        task.flow(), n, task);
        return true;
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
