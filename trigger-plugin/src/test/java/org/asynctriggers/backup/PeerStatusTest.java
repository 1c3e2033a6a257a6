package org.asynctriggers.backup;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.testing.FakeGateway;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Orphan adoption reads the other nodes' status rows: idle, fresh, and scanned after the entry was captured. */
class PeerStatusTest
{
    private long now = 100_000;
    private final FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace();
    private final PeerStatus peers = new PeerStatus(gateway, () -> now);

    private void report(String node, long pending, long active, long lastScan, long updated)
    {
        gateway.insert(Cql.KEYSPACE, "flow_status", row("flow", "f", "node", node, "pending", pending, "active", active,
                                                         "last_scan", lastScan, "updated", updated), updated);
    }

    @Test
    void shouldSayIdleOnlyForAFreshIdleReportFromAScanAfterTheGivenTime()
    {
        report("10.0.0.1", 0L, 0L, 95_000L, 99_000L);   // idle, scanned at 95 s, reported at 99 s
        report("10.0.0.2", 3L, 0L, 95_000L, 99_000L);   // busy
        report("10.0.0.3", 0L, 0L, 80_000L, 99_000L);   // idle, but its scan is older
        report("10.0.0.4", 0L, 0L, 95_000L, 50_000L);   // idle, but the report is old
        peers.refresh();
        assertTrue(peers.idleAndScannedSince("f", "10.0.0.1", 90_000, 10_000));
        assertFalse(peers.idleAndScannedSince("f", "10.0.0.2", 90_000, 10_000), "busy");
        assertFalse(peers.idleAndScannedSince("f", "10.0.0.3", 90_000, 10_000), "scanned before the capture");
        assertFalse(peers.idleAndScannedSince("f", "10.0.0.4", 90_000, 10_000), "no fresh report");
        assertFalse(peers.idleAndScannedSince("f", "10.0.0.9", 90_000, 10_000), "no report");
        assertFalse(peers.idleAndScannedSince("other", "10.0.0.1", 90_000, 10_000), "another flow");
        now = 200_000;
        assertFalse(peers.idleAndScannedSince("f", "10.0.0.1", 90_000, 10_000), "the report has aged");
    }
}
