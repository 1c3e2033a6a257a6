package org.asynctriggers.metrics;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.InternalConsistency;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes each flow's counters to {@code async_triggers.flow_status} (one row per flow and node, TTL 30 s), with what
 * the last scan of this node's backup maps found, and whether the flow is paused here (a table made by an older deploy
 * has no {@code paused} column: the rows then go without it).
 */
public final class StatusReporter
{
    /** The backup-map side of a flow's status on this node. */
    public static final class Extra
    {
        /** live entries of the flow on this node, at the last complete scan */
        final long backlog;
        /** wall-clock millis of the last capture on this node, of the last scan's start (Long.MIN_VALUE: never) */
        final long lastCaptureMillis, lastScanMillis;

        public Extra(long backlog, long lastCaptureMillis, long lastScanMillis)
        {
            this.backlog = backlog;
            this.lastCaptureMillis = lastCaptureMillis;
            this.lastScanMillis = lastScanMillis;
        }
    }

    private static final Logger logger = LoggerFactory.getLogger(StatusReporter.class);

    private final CqlGateway gateway;
    private final Supplier<Map<String, FlowMetrics>> flows;
    private final Supplier<String> node;
    private final LongSupplier wallClockMillis;
    private final java.util.function.Function<String, Extra> extra;
    private CqlGateway.Prepared insert;
    private boolean insertsPaused;

    public StatusReporter(CqlGateway gateway, Supplier<Map<String, FlowMetrics>> flows, Supplier<String> node, LongSupplier wallClockMillis,
                   java.util.function.Function<String, Extra> extra)
    {
        this.extra = extra;
        this.gateway = gateway;
        this.flows = flows;
        this.node = node;
        this.wallClockMillis = wallClockMillis;
    }

    /** Never throws. */
    public void report()
    {
        try
        {
            Map<String, FlowMetrics> current = flows.get();
            if (current.isEmpty())
                return;
            if (insert == null || !insertsPaused)
                prepareInsert(); // until a deploy or ctl trigger pause adds the column, tried again every report
            ByteBuffer nodeBytes = text(node.get());
            ByteBuffer updated = bigint(wallClockMillis.getAsLong());
            for (Map.Entry<String, FlowMetrics> flow : current.entrySet())
            {
                FlowMetrics m = flow.getValue();
                Extra x = extra.apply(flow.getKey());
                List<ByteBuffer> values = new ArrayList<>(Arrays.asList(text(flow.getKey()), nodeBytes, bigint(m.getPendingTasks()),
                                              bigint(m.getActiveTasks()), bigint(m.getCompletedTasks()),
                                              bigint(m.getFailedTasks()), bigint(m.getRetriedTasks()),
                                              bigint(m.getOldestPendingTaskAgeMillis()), integer(m.getMaxPoolSize()),
                                              integer(m.getQueueCapacity()), bigint(m.getSpilledTasks()),
                                              bigint(m.getDiscardedTasks()), bigint(m.getRecoveredTasks()),
                                              bigint(m.getResumedTasks()), bigint(m.getFanoutRowsWritten()),
                                              bigint(x.backlog), millis(x.lastCaptureMillis), millis(x.lastScanMillis)));
                if (insertsPaused)
                    values.add(ByteBuffer.wrap(new byte[]{ (byte) (m.isPaused() ? 1 : 0) }));
                values.add(updated);
                gateway.execute(insert, InternalConsistency.STATUS, values);
            }
        }
        catch (RuntimeException e)
        {
            insert = null;
            logger.debug("Could not write async_triggers.flow_status: {}", e.getMessage());
        }
    }

    private void prepareInsert()
    {
        try
        {
            insert = gateway.prepare(Cql.statusInsert(true));
            insertsPaused = true;
        }
        catch (RuntimeException e)
        {
            if (insert == null)
                insert = gateway.prepare(Cql.statusInsert(false));
            insertsPaused = false;
        }
    }

    private static ByteBuffer text(String s)
    {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static ByteBuffer bigint(long v)
    {
        return ByteBuffer.allocate(8).putLong(0, v);
    }

    /** a timestamp, or null for never */
    private static ByteBuffer millis(long v)
    {
        return v == Long.MIN_VALUE ? null : bigint(v);
    }

    private static ByteBuffer integer(int v)
    {
        return ByteBuffer.allocate(4).putInt(0, v);
    }
}
