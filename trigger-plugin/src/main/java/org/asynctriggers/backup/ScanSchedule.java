package org.asynctriggers.backup;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * When the control thread has the backup maps scanned ({@link Takeover}): the safety net every minute; otherwise only
 * once captures have gone quiet (a scan reads the whole backup map, completed entries' tombstones included, so none
 * runs under steady load): once after the last capture, once more when the orphan grace of those captures is over
 * (below), then again while entries are left and this node has nothing queued or running (orphans, completions on
 * their way). The entries of a paused flow wait on purpose: they call for no rescan (its resume has the maps scanned).
 * <p>
 * The grace scan is for the other replicas. A replica captures what the write changed in its own copy of the row
 * (Cassandra hands an index the difference to what the replica held), so two replicas that applied two writes of
 * a row in different orders, or one of them after a flush, can capture one write as two different tasks, and one
 * replica then holds an entry its row's executor never had. That replica adopts the entry once the executor,
 * idle, has scanned {@link Ownership#ORPHAN_GRACE_MILLIS} after the capture ({@link Ownership#orphaned}); without
 * this scan the executor's next one could be the safety net's, up to a minute later, and the task and every drain
 * would wait that long.
 */
public final class ScanSchedule
{
    /** a scan after a burst of captures waits for this much quiet */
    static final long QUIET_MILLIS = 1_000;
    /** while some entry is left, scans repeat this often */
    static final long BACKLOG_RESCAN_MILLIS = 5_000;
    /** the grace scan waits this much beyond the orphan grace: another replica applies a write a little later */
    static final long GRACE_MARGIN_MILLIS = 2_000;

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
        else if (lastCapture != Long.MIN_VALUE && graceOver(lastCapture, lastScan, now) && idle.getAsBoolean())
            takeover.scan("orphan grace over");
        else if (backlog.anyLeft(paused) && idle.getAsBoolean() && now - lastScan >= BACKLOG_RESCAN_MILLIS)
            takeover.scan("entries left");
    }

    /** The captures' orphan grace (and its margin) is over and no scan started since it ended. */
    private static boolean graceOver(long lastCapture, long lastScan, long now)
    {
        long over = lastCapture + Ownership.ORPHAN_GRACE_MILLIS + GRACE_MARGIN_MILLIS;
        return now >= over && lastScan < over;
    }
}
