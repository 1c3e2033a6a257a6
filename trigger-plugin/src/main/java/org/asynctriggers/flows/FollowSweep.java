package org.asynctriggers.flows;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadFactory;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import org.asynctriggers.api.Operation;
import org.asynctriggers.capture.CaptureSink;
import org.asynctriggers.capture.ExpiringRows;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.work.TaskProcessor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a node does when a following flow is deployed (docs/design.md, "A fan-out that follows its table"): every row
 * of the fan-out table it holds that carries a TTL becomes a task of the flow's companion, captured as if the row were
 * written now (its backup entries on the row's replicas, queued on the node that executes it). A backfill copies the
 * fan-out table by CQL, which reads no TTL of a row marker; the companion's task of such a row reads it whole and
 * gives the copy, and each target row through it, the row's expiry. Replicas holding the same row make the same task
 * (one entry, run once), and each deploy a new one. Only a companion's first version on a node already serving is swept: a restart or a
 * redeploy finds the copy kept by the tasks of the writes since.
 */
public final class FollowSweep
{
    private static final Logger logger = LoggerFactory.getLogger(FollowSweep.class);
    static final int ENTRY_ATTEMPTS = 10;
    static final long RETRY_MILLIS = 1_000;
    /** the value a sweep's task carries besides the row's key: the deploy's flow version (no column of the table) */
    static final String DEPLOY_VALUE = "async_deploy_version";

    /** The rows of a table this node holds that carry a TTL, a page at a time ({@link ExpiringRows#of} on a node). */
    public interface Rows
    {
        void expiring(String keyspace, String table, Consumer<List<ExpiringRows.Found>> page);
    }

    private final Rows rows;
    private final CaptureSink sink;
    private final ThreadFactory threadFactory;
    private final LongSupplier nanoClock;
    private final LongSupplier wallClockMillis;
    private final TaskProcessor.Sleeper sleeper;

    public FollowSweep(Rows rows, CaptureSink sink, ThreadFactory threadFactory, LongSupplier nanoClock, LongSupplier wallClockMillis,
                       TaskProcessor.Sleeper sleeper)
    {
        this.rows = rows;
        this.sink = sink;
        this.threadFactory = threadFactory;
        this.nanoClock = nanoClock;
        this.wallClockMillis = wallClockMillis;
        this.sleeper = sleeper;
    }

    /**
     * A flow version started here ({@code serving}: after the node's first read of the flows): a companion's first
     * version here is swept on a thread of its own, counted as an active task of the flow until it is done.
     */
    public void applied(Flow flow, boolean serving)
    {
        if (!flow.takeFirstVersionHere() || !serving || flow.spec.follows == null)
            return;
        flow.metrics.sweeping(true);
        Thread thread = threadFactory.newThread(() -> sweep(flow));
        thread.setName("async-trigger-" + flow.spec.name + "-sweep");
        thread.setDaemon(true);
        thread.start();
    }

    void sweep(Flow flow)
    {
        String keyspace = flow.spec.source.keyspace;
        long[] found = new long[1];
        try
        {
            rows.expiring(keyspace, flow.spec.source.table, page -> {
                for (ExpiringRows.Found row : page)
                {
                    Task task = Task.captured(flow.spec.name, changeOf(row, flow.spec.version), nanoClock.getAsLong());
                    boolean kept = keep(flow, task);
                    sink.captured(keyspace, row.token, List.of(task), kept ? List.of(task) : List.of());
                }
                found[0] += page.size();
            });
            if (found[0] > 0)
                logger.info("Flow '{}': {} rows of {}.{} held here carry a TTL: their tasks give the copy of the fan-out "
                            + "table their expiry", flow.spec.name, found[0], keyspace, flow.spec.source.table);
        }
        catch (RuntimeException e)
        {
            logger.error("Flow '{}': the rows of {}.{} carrying a TTL could not be read here; a backfill copies them "
                         + "without their expiry", flow.spec.name, keyspace, flow.spec.source.table, e);
        }
        finally
        {
            flow.metrics.sweeping(false);
        }
    }

    /**
     * The row as a change: an insert of its key at its newest timestamp, with the deploy's version among its values,
     * so that its task's id is the same on every replica of the row and new at each deploy (a sweep of an earlier
     * deploy of the flow, completed, must not hide this one's).
     */
    static SourceChange changeOf(ExpiringRows.Found row, long version)
    {
        ByteBuffer deploy = ByteBuffer.allocate(8).putLong(0, version);
        return new SourceChange(Operation.INSERT, row.key, row.timestamp, Map.of(DEPLOY_VALUE, deploy));
    }

    /**
     * Writes the task's backup entries on its row's replicas, trying again a second apart; false when the flow keeps
     * none or every attempt failed (the task then runs only if this node executes it and the flow is not paused:
     * another replica's sweep makes the same task, and its entries).
     */
    private boolean keep(Flow flow, Task task)
    {
        if (flow.backupTable == null)
            return false;
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                flow.keepInBackup(task, wallClockMillis.getAsLong());
                return true;
            }
            catch (RuntimeException e)
            {
                if (attempt == ENTRY_ATTEMPTS)
                {
                    logger.error("Flow '{}': backup entries of {} not written after {} attempts ({}); the copy of the fan-out "
                                 + "table may keep that row past its expiry unless another replica's sweep wrote them",
                                 flow.spec.name, task, ENTRY_ATTEMPTS, e.toString());
                    return false;
                }
                try
                {
                    sleeper.sleep(RETRY_MILLIS);
                }
                catch (InterruptedException interrupted)
                {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
    }
}
