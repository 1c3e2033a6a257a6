package org.asynctriggers.flows;

import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.cassandra.dht.Token;
import org.asynctriggers.backup.Backlog;
import org.asynctriggers.backup.HeldTasks;
import org.asynctriggers.backup.Ownership;
import org.asynctriggers.capture.CaptureSink;
import org.asynctriggers.queue.FullQueuePolicy;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where captured and recovered tasks enter their flow on this node. Tasks of rows this node executes are queued (or
 * spilled) unless held here already; those of a flow not applied here yet are parked until it is; the others only sit
 * in the backup maps until a scan finds that this node executes them now. A paused flow's tasks are not queued
 * either: their backup entries keep them, and the scan that follows its resume queues them.
 */
public final class Intake implements CaptureSink
{
    private static final Logger logger = LoggerFactory.getLogger(Intake.class);
    /** tasks captured for flows not applied here yet, kept in memory until they are (their entries hold them too) */
    static final int PARK_LIMIT = 100_000;

    private final Flows flows;
    private final HeldTasks held;
    private final Ownership ownership;
    private final Backlog backlog;
    private final ControlLoop control;
    /** flow name to the tasks captured for it before it was applied here */
    private final Map<String, Queue<Task>> parked = new ConcurrentHashMap<>();
    private final AtomicInteger parkedCount = new AtomicInteger();
    /** flows whose tasks found the park full (warned once) */
    private final Set<String> parkFullWarned = ConcurrentHashMap.newKeySet();

    public Intake(Flows flows, HeldTasks held, Ownership ownership, Backlog backlog, ControlLoop control)
    {
        this.flows = flows;
        this.held = held;
        this.ownership = ownership;
        this.backlog = backlog;
        this.control = control;
    }

    /**
     * On a replica, as it applies a write (the capture index), after the tasks' backup entries were written here:
     * queues the tasks when this node executes the row. Never waits, never throws.
     */
    @Override
    public void captured(String keyspace, Token token, List<Task> tasks, List<Task> withEntries)
    {
        backlog.captured();
        for (Task task : withEntries)
        {
            Flow flow = flows.get(task.flow());
            if (flow != null && flow.backupTable != null)
                flow.metrics.backupEntriesWritten(1);
        }
        // before the flows were read (commit log replay at boot, say) the ring is not known either: the entries
        // wait for the scan that starts once they are
        if (tasks.isEmpty() || !control.isReady() || !ownership.executes(keyspace, token))
            return;
        java.util.Set<String> stoodInFor = withEntries.isEmpty() ? null : ownership.standingInFor(keyspace, token);
        for (Task task : tasks)
        {
            Flow flow = flows.get(task.flow());
            if (flow == null)
            {
                park(task);
                continue;
            }
            // recorded before a worker can take it: only a task whose entry is here may be left to another node
            boolean entryHere = stoodInFor != null && flow.backupTable != null && withEntries.contains(task);
            if (entryHere)
                held.entryHere(task, new HeldTasks.EntryHere(keyspace, token, stoodInFor));
            if (!offer(flow, task, false) && entryHere && !held.isHeld(task))
                held.release(task);
        }
    }

    /**
     * A task read back from a backup entry by a scan.
     * @return true when queued (false: already queued here, recently done, its flow is gone or paused)
     */
    public boolean requeue(Task task)
    {
        Flow flow = flows.get(task.flow());
        if (flow == null || held.recentlyDone(task))
            return false;
        if (!offer(flow, task, true))
            return false;
        flow.metrics.taskRecovered(task.resumePaging() != null);
        return true;
    }

    /** Its entry keeps the task while the flow is paused; a flow without entries queues it all the same. */
    private static boolean waitsInBackup(Flow flow)
    {
        return flow.isPaused() && flow.backupTable != null;
    }

    /**
     * Queues (or spills) the task unless it is held here already or its flow is paused.
     * @param recovered read back from its backup entry: never discarded (the entry keeps it for a later scan)
     * @return whether it was taken
     */
    private boolean offer(Flow flow, Task task, boolean recovered)
    {
        if (waitsInBackup(flow) || !held.hold(task, flow))
            return false;
        FullQueuePolicy.Outcome outcome = recovered ? flow.policy.offerRecovered(flow.spec.name, flow.queue, task, flow.metrics)
                                                    : flow.policy.offer(flow.spec.name, flow.queue, task, flow.metrics);
        if (outcome == FullQueuePolicy.Outcome.CLOSED)
        {
            // the flow was replaced between the lookup and the offer: hand the task to the new version
            Flow current = flows.get(flow.spec.name);
            if (current != null && current != flow && waitsInBackup(current))
            {
                held.release(task);
                return false;
            }
            if (current != null && current != flow)
            {
                held.moveTo(task, current);
                outcome = recovered ? current.policy.offerRecovered(current.spec.name, current.queue, task, current.metrics)
                                    : current.policy.offer(current.spec.name, current.queue, task, current.metrics);
            }
        }
        switch (outcome)
        {
            case ACCEPTED:
            case SPILLED:
                return true;
            case DISCARDED:
                completeLater(flow, task);
                return false;
            case CLOSED:
                held.release(task);
                if (!flows.isShutdown())
                    park(task);
                return false;
            default: // LEFT: its entry holds it until a scan
                held.release(task);
                return false;
        }
    }

    /** A discarded task's entry goes too, off the write path. */
    private void completeLater(Flow flow, Task task)
    {
        Runnable complete = () -> {
            try
            {
                flow.entries().completed(task);
            }
            catch (RuntimeException e)
            {
                logger.debug("Flow '{}': entry of discarded task {} not removed: {}", flow.spec.name, task, e.toString());
            }
        };
        if (!control.run(complete))
            held.done(task);
    }

    /** Keeps a task for a flow not applied here yet; beyond the limit its entry alone holds it (a scan finds it). */
    private void park(Task task)
    {
        if (parkedCount.incrementAndGet() > PARK_LIMIT)
        {
            parkedCount.decrementAndGet();
            if (parkFullWarned.add(task.flow()))
                logger.warn("Flow '{}' is not applied on this node yet and {} captured tasks already wait; the others "
                            + "are left to their backup entries until it is", task.flow(), PARK_LIMIT);
            return;
        }
        Queue<Task> waiting = parked.computeIfAbsent(task.flow(), name -> new ConcurrentLinkedQueue<>());
        boolean first = waiting.isEmpty();
        waiting.add(task);
        if (first && !flows.isShutdown() && control.isReady())
        {
            // a new flow's first tasks: read the flows now, not at the next poll
            control.pollNow(() -> {
                Flow flow = flows.get(task.flow());
                if (flow != null)
                    unpark(flow);
            });
        }
    }

    /** Queues what was parked for a flow just applied. */
    public void unpark(Flow flow)
    {
        parkFullWarned.remove(flow.spec.name);
        Queue<Task> waiting = parked.get(flow.spec.name);
        if (waiting == null)
            return;
        Task task;
        while ((task = waiting.poll()) != null)
        {
            parkedCount.decrementAndGet();
            offer(flow, task, false);
        }
    }

    public int parked()
    {
        return parkedCount.get();
    }
}
