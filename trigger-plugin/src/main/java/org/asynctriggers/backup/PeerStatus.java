package org.asynctriggers.backup;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.InternalConsistency;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the other nodes last reported in {@code async_triggers.flow_status}: per flow and node, whether it had
 * anything queued or running, and when its last scan of the backup maps started. Read at LOCAL_ONE (cql/InternalConsistency); a failed read keeps the
 * previous view, and a report older than the caller's limit counts as no report.
 */
public final class PeerStatus
{
    private static final Logger logger = LoggerFactory.getLogger(PeerStatus.class);

    private static final class Report
    {
        final long busy;
        final long lastScanMillis;
        final long updatedMillis;

        Report(long busy, long lastScanMillis, long updatedMillis)
        {
            this.busy = busy;
            this.lastScanMillis = lastScanMillis;
            this.updatedMillis = updatedMillis;
        }
    }

    private final CqlGateway gateway;
    private final LongSupplier wallClockMillis;
    private CqlGateway.Prepared select;
    private volatile Map<String, Report> reports = Map.of();

    public PeerStatus(CqlGateway gateway, LongSupplier wallClockMillis)
    {
        this.gateway = gateway;
        this.wallClockMillis = wallClockMillis;
    }

    private static String key(String flow, String node)
    {
        return flow + '@' + node;
    }

    /** Never throws. */
    public void refresh()
    {
        try
        {
            if (select == null)
                select = gateway.prepare("SELECT \"flow\", \"node\", \"pending\", \"active\", \"last_scan\", \"updated\" FROM "
                                         + Cql.table(Cql.KEYSPACE, "flow_status"));
            Map<String, Report> fresh = new HashMap<>();
            for (Map<String, ByteBuffer> row : gateway.execute(select, InternalConsistency.STATUS, List.of()))
            {
                String flow = text(row.get("flow")), node = text(row.get("node"));
                if (flow == null || node == null)
                    continue;
                fresh.put(key(flow, node), new Report(number(row.get("pending")) + number(row.get("active")),
                                                      timestamp(row.get("last_scan")), timestamp(row.get("updated"))));
            }
            reports = fresh;
        }
        catch (RuntimeException e)
        {
            select = null;
            logger.debug("Could not read async_triggers.flow_status: {}", e.getMessage());
        }
    }

    /**
     * The node reported the flow, within {@code maxAgeMillis}, with nothing queued or running, from a scan that
     * started at or after {@code scannedAfterMillis}.
     */
    public boolean idleAndScannedSince(String flow, String node, long scannedAfterMillis, long maxAgeMillis)
    {
        Report report = reports.get(key(flow, node));
        return report != null && wallClockMillis.getAsLong() - report.updatedMillis <= maxAgeMillis
               && report.busy == 0 && report.lastScanMillis >= scannedAfterMillis;
    }

    private static String text(ByteBuffer b)
    {
        return b == null ? null : StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }

    private static long number(ByteBuffer b)
    {
        return b == null || b.remaining() != 8 ? 0 : b.getLong(b.position());
    }

    private static long timestamp(ByteBuffer b)
    {
        return b == null || b.remaining() != 8 ? Long.MIN_VALUE : b.getLong(b.position());
    }
}
