package org.asynctriggers.backup;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.cassandra.dht.Token;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** When the control thread has the backup maps scanned, cycle by cycle on a clock the test moves. */
class ScanScheduleTest
{
    private static final long CYCLE = 2_000;

    private final AtomicLong now = new AtomicLong(1_000_000);
    private final AtomicBoolean idle = new AtomicBoolean(true);
    private final FlowSpec users = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
    /** the wall-clock millis at which each scan started */
    private final List<Long> scans = java.util.Collections.synchronizedList(new ArrayList<>());
    /** live entries each scan reports for the flow */
    private volatile long liveEntries;
    private final Backlog backlog = new Backlog(now::get);

    private final Takeover.NodeView node = new Takeover.NodeView()
    {
        @Override
        public Collection<FlowSpec> backedUpFlows()
        {
            return List.of(users);
        }

        @Override
        public boolean executes(String keyspace, Token token)
        {
            return false;
        }

        @Override
        public boolean orphaned(String keyspace, Token token, String flow, long capturedMillis)
        {
            return false;
        }

        @Override
        public boolean requeue(Task task, String why)
        {
            return false;
        }

        @Override
        public void backlog(Map<String, Long> entriesByFlow, long startedMillis)
        {
            backlog.scanned(Map.of(users.name, liveEntries), startedMillis);
        }
    };

    private final Takeover takeover = new Takeover(node, (keyspace, table, visitor) -> scans.add(now.get()),
                                                   Thread::new, now::get, false);
    private final ScanSchedule schedule = new ScanSchedule(takeover, backlog,
                                                           new Ownership(ExecutorChoice.SELF, new PeerStatus(null, now::get)),
                                                           idle::get, flow -> false, now::get, CYCLE);

    /** Runs control cycles for {@code millis}; a scan a cycle asks for has run before the clock moves on. */
    private void run(long millis) throws InterruptedException
    {
        for (long t = 0; t < millis; t += CYCLE)
        {
            int before = scans.size();
            schedule.cycle();
            for (int i = 0; i < 100 && scans.size() == before; i++)
                Thread.sleep(1);
            now.addAndGet(CYCLE);
        }
    }

    private List<Long> scansSince(long start)
    {
        List<Long> out = new ArrayList<>();
        for (Long at : new ArrayList<>(scans))
            out.add(at - start);
        return out;
    }

    @Test
    void shouldScanOnceAfterCapturesAndOnceMoreWhenTheirOrphanGraceIsOver() throws InterruptedException
    {
        long start = now.get();
        backlog.captured();
        run(30_000);
        long grace = Ownership.ORPHAN_GRACE_MILLIS + ScanSchedule.GRACE_MARGIN_MILLIS;
        List<Long> at = scansSince(start);
        assertEquals(2, at.size(), "one after the captures went quiet, one after their grace: " + at);
        assertEquals(CYCLE, at.get(0), "the first cycle after a second of quiet");
        assertEquals(true, at.get(1) >= grace && at.get(1) < grace + CYCLE,
                     "the first cycle after the grace, so another replica's entry of the same write can be adopted: " + at);
    }

    @Test
    void shouldWaitForTheGraceScanUntilThisNodeIsIdle() throws InterruptedException
    {
        long start = now.get();
        backlog.captured();
        idle.set(false);
        run(20_000);
        assertEquals(1, scans.size(), "busy: only the scan after the captures " + scansSince(start));
        idle.set(true);
        run(CYCLE);
        assertEquals(2, scans.size(), "idle again: the grace scan " + scansSince(start));
    }

    @Test
    void shouldRescanEveryFewSecondsWhileEntriesAreLeftAndNodeIsIdle() throws InterruptedException
    {
        long start = now.get();
        liveEntries = 1;
        backlog.captured();
        run(30_000);
        List<Long> at = scansSince(start);
        assertEquals(true, at.size() >= 5, "after the captures, after their grace, and every "
                                           + ScanSchedule.BACKLOG_RESCAN_MILLIS + " ms while entries are left: " + at);
        idle.set(false);
        int before = scans.size();
        run(Takeover.SAFETY_NET_PERIOD_MILLIS - 30_000 - CYCLE);
        assertEquals(before, scans.size(), "busy: entries left wait for the safety net");
        run(CYCLE);
        assertEquals(before + 1, scans.size(), "the safety net's minute");
    }
}
