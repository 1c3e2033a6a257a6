package org.asynctriggers.backup;

import java.util.Collections;
import java.util.Map;
import java.util.function.LongSupplier;

import org.asynctriggers.metrics.StatusReporter;

/** What this node knows of its backup entries: the live entries per flow at the last complete scan, the last capture. */
public final class Backlog
{
    private final LongSupplier wallClockMillis;
    /** flow name to its live entries on this node, as the last complete scan found them */
    private volatile Map<String, Long> entries = Collections.emptyMap();
    private volatile long scannedMillis = Long.MIN_VALUE;
    private volatile long lastCaptureMillis = Long.MIN_VALUE;

    public Backlog(LongSupplier wallClockMillis)
    {
        this.wallClockMillis = wallClockMillis;
    }

    /** A write was captured on this replica now. */
    public void captured()
    {
        lastCaptureMillis = wallClockMillis.getAsLong();
    }

    /** Long.MIN_VALUE: nothing captured since the node started. */
    public long lastCaptureMillis()
    {
        return lastCaptureMillis;
    }

    /** The live entries per flow found by a complete scan that started at {@code startedMillis}. */
    public void scanned(Map<String, Long> entriesByFlow, long startedMillis)
    {
        entries = Map.copyOf(entriesByFlow);
        scannedMillis = startedMillis;
    }

    /** Some flow, {@code except} those, had live entries at the last complete scan. */
    public boolean anyLeft(java.util.function.Predicate<String> except)
    {
        return entries.entrySet().stream().anyMatch(e -> e.getValue() > 0 && !except.test(e.getKey()));
    }

    /** Live entries of the flow on this node at the last complete scan. */
    public long liveEntries(String flow)
    {
        Long n = entries.get(flow);
        return n == null ? 0 : n;
    }

    /** What the status row of a flow adds to its counters. */
    public StatusReporter.Extra statusOf(String flow)
    {
        Long n = entries.get(flow);
        return new StatusReporter.Extra(n == null ? 0 : n, lastCaptureMillis, scannedMillis);
    }
}
