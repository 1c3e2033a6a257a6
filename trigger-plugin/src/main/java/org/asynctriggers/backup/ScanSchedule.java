package org.asynctriggers.backup;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * When the control thread has the backup maps scanned ({@link Takeover}): the safety net every minute; otherwise only
 * once captures have gone quiet (a scan reads the whole backup map, completed entries' tombstones included, so none
 * runs under steady load): once after the last capture, then again while entries are left and this node has nothing
 * queued or running (orphans, completions on their way). The entries of a paused flow wait on purpose: they call for
 * no rescan (its resume has the maps scanned).
 */
public final class ScanSchedule
{
    /** a scan after a burst of captures waits for this much quiet */
    static final long QUIET_MILLIS = 1_000;
    /** while some entry is left, scans repeat this often */
    static final long BACKLOG_RESCAN_MILLIS = 5_000;

    private final Takeover takeover;
    private final Backlog backlog;
    private final Ownership ownership;
    /** nothing queued, spilled, waiting for a retry or running here, in any flow */
    private final BooleanSupplier idle;
    /** whether the flow of this name is paused here */
    private final java.util.function.Predicate<String> paused;
    private final LongSupplier wallClockMillis;
    private final long cyclesPerSafetyNet;
    private long cycles;

    /** @param cycleMillis how often {@link #cycle} is called */
    public ScanSchedule(Takeover takeover, Backlog backlog, Ownership ownership, BooleanSupplier idle,
                        java.util.function.Predicate<String> paused, LongSupplier wallClockMillis, long cycleMillis)
    {
        this.paused = paused;
        this.takeover = takeover;
        this.backlog = backlog;
        this.ownership = ownership;
        this.idle = idle;
        this.wallClockMillis = wallClockMillis;
        this.cyclesPerSafetyNet = Takeover.SAFETY_NET_PERIOD_MILLIS / cycleMillis;
    }

    /** Once the flows were read: listens to gossip and scans this node's own entries. */
    public void start()
    {
        takeover.start();
    }

    public void stop()
    {
        takeover.stop();
    }

    /** A flow with a backup map was applied: its entries may wait here. */
    public void flowApplied(String flow)
    {
        takeover.scan("flow '" + flow + "' applied");
    }

    /** One control cycle. */
    public void cycle()
    {
        long now = wallClockMillis.getAsLong();
        if (backlog.anyLeft(paused))
            ownership.refreshPeers(); // only what orphan adoption needs, and only while this node holds entries
        if (++cycles % cyclesPerSafetyNet == 0)
        {
            takeover.safetyNet();
            return;
        }
        long lastCapture = backlog.lastCaptureMillis();
        if (lastCapture != Long.MIN_VALUE && now - lastCapture < QUIET_MILLIS)
            return;
        long lastScan = takeover.lastScanStartedMillis();
        if (lastCapture >= lastScan)
            takeover.scan("after captures");
        else if (backlog.anyLeft(paused) && idle.getAsBoolean() && now - lastScan >= BACKLOG_RESCAN_MILLIS)
            takeover.scan("entries left");
    }
}
