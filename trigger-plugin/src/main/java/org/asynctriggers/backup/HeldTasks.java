package org.asynctriggers.backup;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import org.asynctriggers.task.Task;

/**
 * The tasks this node holds: queued, spilled, waiting for a retry or running here, each with the flow version that
 * holds it, so a capture or a scan does not queue it twice; and the tasks finished lately, so a scan that read an
 * entry just before its delete does not run it again. A retired version's tasks are forgotten, so a scan finds any
 * it left behind.
 */
public final class HeldTasks
{
    /** how long a finished task is remembered */
    static final long RECENTLY_DONE_MILLIS = 60_000;

    private final Map<UUID, Object> holders = new ConcurrentHashMap<>();
    /** id to the wall-clock millis it finished at */
    private final Map<UUID, Long> recentlyDone = new ConcurrentHashMap<>();
    /**
     * tasks queued here at capture whose backup entry was written here, each with the replicas this node stood in for
     * then (backup/Handover); a task not in it is never left to another node
     */
    private final Map<UUID, EntryHere> entryHere = new ConcurrentHashMap<>();
    private final LongSupplier wallClockMillis;

    public HeldTasks(LongSupplier wallClockMillis)
    {
        this.wallClockMillis = wallClockMillis;
    }

    /** @return false when the task is held here already */
    public boolean hold(Task task, Object holder)
    {
        return holders.putIfAbsent(task.id(), holder) == null;
    }

    /** The task passed to another version of its flow. */
    public void moveTo(Task task, Object holder)
    {
        holders.put(task.id(), holder);
    }

    /** The task leaves this node's hands unfinished: its entry keeps it. */
    public void release(Task task)
    {
        holders.remove(task.id());
        entryHere.remove(task.id());
    }

    /**
     * A task captured here with its backup entry: its row (the token the capture had) and the replicas this node
     * executed it for ({@code stoodInFor}: down then; empty when it was the row's first replica).
     */
    public static final class EntryHere
    {
        final String keyspace;
        final org.apache.cassandra.dht.Token token;
        final java.util.Set<String> stoodInFor;

        public EntryHere(String keyspace, org.apache.cassandra.dht.Token token, java.util.Set<String> stoodInFor)
        {
            this.keyspace = keyspace;
            this.token = token;
            this.stoodInFor = stoodInFor;
        }
    }

    public void entryHere(Task task, EntryHere capture)
    {
        entryHere.put(task.id(), capture);
    }

    /** What {@link #entryHere} recorded; null when the task's entry is not known to be here. */
    public EntryHere entryHere(Task task)
    {
        return entryHere.get(task.id());
    }

    /** The task finished here (done, a dead letter, or discarded). */
    public void done(Task task)
    {
        recentlyDone.put(task.id(), wallClockMillis.getAsLong());
        holders.remove(task.id());
        entryHere.remove(task.id());
    }

    /** Whether the task is queued, spilled, waiting for a retry or running here. */
    public boolean isHeld(Task task)
    {
        return holders.containsKey(task.id());
    }

    public boolean recentlyDone(Task task)
    {
        return recentlyDone.containsKey(task.id());
    }

    /** A retired flow version holds nothing any more. */
    public void forget(Object holder)
    {
        holders.entrySet().removeIf(e -> {
            boolean gone = e.getValue() == holder;
            if (gone)
                entryHere.remove(e.getKey());
            return gone;
        });
    }

    /** Forgets the tasks that finished longer ago than {@link #RECENTLY_DONE_MILLIS}. */
    public void expire()
    {
        long now = wallClockMillis.getAsLong();
        recentlyDone.values().removeIf(at -> now - at > RECENTLY_DONE_MILLIS);
    }

    public int size()
    {
        return holders.size();
    }
}
