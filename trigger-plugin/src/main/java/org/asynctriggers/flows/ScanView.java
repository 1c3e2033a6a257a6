package org.asynctriggers.flows;

import java.util.Collection;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

import org.apache.cassandra.dht.Token;
import org.asynctriggers.backup.Backlog;
import org.asynctriggers.backup.Ownership;
import org.asynctriggers.backup.Takeover;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/** What a scan of the backup maps sees of this node: its flows, which rows it runs, where recovered tasks go. */
public final class ScanView implements Takeover.NodeView
{
    /**
     * After a flow is resumed here, its entries are not adopted from other executors for this long: each executor
     * resumes within a poll of the others, and until its next status report after its own resume scan it still
     * looks idle (it was paused), though it is about to run them.
     */
    static final long NO_ADOPTION_AFTER_RESUME_MILLIS = 15_000;

    private final Flows flows;
    private final LongSupplier wallClockMillis;
    private final Ownership ownership;
    private final Backlog backlog;
    private final Predicate<Task> requeue;

    /** @param requeue queues a recovered task ({@link Intake#requeue}) */
    public ScanView(Flows flows, Ownership ownership, Backlog backlog, Predicate<Task> requeue, LongSupplier wallClockMillis)
    {
        this.wallClockMillis = wallClockMillis;
        this.flows = flows;
        this.ownership = ownership;
        this.backlog = backlog;
        this.requeue = requeue;
    }

    @Override
    public Collection<FlowSpec> backedUpFlows()
    {
        return flows.backedUp();
    }

    @Override
    public boolean executes(String keyspace, Token token)
    {
        return ownership.executes(keyspace, token);
    }

    @Override
    public boolean replicates(String keyspace, Token token)
    {
        return ownership.replicates(keyspace, token);
    }

    @Override
    public boolean orphaned(String keyspace, Token token, String flow, long capturedMillis)
    {
        Flow running = flows.get(flow);
        if (running != null && (running.isPaused() || resumedRecently(running)))
            return false;
        return ownership.orphaned(keyspace, token, flow, capturedMillis);
    }

    /** Resumed less than NO_ADOPTION_AFTER_RESUME_MILLIS ago (never resumed: no; no subtraction from MIN_VALUE). */
    boolean resumedRecently(Flow running)
    {
        long resumed = running.resumedAtMillis();
        return resumed != Long.MIN_VALUE && wallClockMillis.getAsLong() - resumed < NO_ADOPTION_AFTER_RESUME_MILLIS;
    }

    @Override
    public long ageCountsFrom(String flow)
    {
        Flow running = flows.get(flow);
        return running == null ? Long.MIN_VALUE : running.resumedAtMillis();
    }

    @Override
    public boolean requeue(Task task, String why)
    {
        return requeue.test(task);
    }

    @Override
    public void backlog(Map<String, Long> entriesByFlow, long startedMillis)
    {
        backlog.scanned(entriesByFlow, startedMillis);
    }
}
