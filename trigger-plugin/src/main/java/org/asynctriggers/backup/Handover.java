package org.asynctriggers.backup;

import org.asynctriggers.task.Task;

/**
 * When a worker leaves a queued task to another node (docs/design.md, "Who executes a task": handover). A node
 * queues a task as it captures the write when it executes the row. If the ring changes before a worker takes the task (a node joined
 * before it in the row's replica order, a replacement took its place, a node it stood in for came back), the row's
 * executor now is another live node, which holds the task's entry (it is a replica: streaming or the write itself
 * brought it) and runs it from its scans. Running it here as well would run it twice: a node that bootstraps or
 * replaces another while the executor has a backlog would repeat the whole backlog of its rows.
 * <p>
 * Left only: a task captured here with its entry written here (recorded in {@link HeldTasks} as it is queued, with
 * its row's token as the capture computed it; a task spilled and adopted by a new flow version, parked, or queued
 * again from a dead letter has no such record, and runs here), to a node this one did not stand in for when it captured the task. So never left: a task read
 * back from an entry (a takeover, an adopted orphan, the safety net; left, an orphan would be adopted and left again
 * at every scan); one whose entry could not be written here (its queue may be its only copy); and one captured
 * while the node that executes its row now was down (it came back, and may not hold the write until a hint brings
 * it, or ever, if hints were off or expired: running it here repeats it at worst). A node that joins the ring
 * (bootstrap, replacement at a new address) was sent the write while it joined, or streamed it.
 */
public final class Handover
{
    private final Ownership ownership;
    private final HeldTasks held;

    public Handover(Ownership ownership, HeldTasks held)
    {
        this.ownership = ownership;
        this.held = held;
    }

    /** Whether a worker leaves this task to its row's executor now. */
    public boolean leaves(Task task)
    {
        HeldTasks.EntryHere here = task.isRecovered() ? null : held.entryHere(task);
        if (here == null)
            return false;
        String executor = ownership.executorElsewhere(here.keyspace, here.token);
        return executor != null && !here.stoodInFor.contains(executor);
    }
}
