package org.asynctriggers.backup;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a scan of the backup maps queues here, and the backlog it reports. */
class TakeoverTest
{
    private static final long NOW = 1_000_000;
    private static final long SAFETY_NET = 300_000;

    @BeforeAll
    static void partitioner()
    {
        DatabaseDescriptor.clientInitialization(false);
        DatabaseDescriptor.setPartitionerUnsafe(Murmur3Partitioner.instance);
    }

    private final FlowSpec users = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
    private final List<BackupTable.Entry> entries = new ArrayList<>();
    /** tokens of the rows this node executes */
    private final Set<Token> mine = new java.util.HashSet<>();
    /** tokens of rows whose executor elsewhere is idle and scanned since their capture */
    private final Set<Token> orphans = new java.util.HashSet<>();
    /** tokens of rows this node no longer replicates (a range movement left their entries here) */
    private final Set<Token> movedAway = new java.util.HashSet<>();
    private final List<Task> queued = new ArrayList<>();
    private final Set<java.util.UUID> inFlight = new java.util.HashSet<>();
    private Map<String, Long> backlog;

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
            return mine.contains(token);
        }

        @Override
        public boolean replicates(String keyspace, Token token)
        {
            return !movedAway.contains(token);
        }

        @Override
        public boolean orphaned(String keyspace, Token token, String flow, long capturedMillis)
        {
            return orphans.contains(token);
        }

        @Override
        public boolean requeue(Task task, String why)
        {
            if (!inFlight.add(task.id()))
                return false;
            queued.add(task);
            return true;
        }

        @Override
        public void backlog(Map<String, Long> entriesByFlow, long startedMillis)
        {
            backlog = new HashMap<>(entriesByFlow);
        }
    };

    private final Takeover takeover = new Takeover(node, (keyspace, table, visitor) -> entries.forEach(visitor::visit),
                                                   Thread::new, () -> NOW, false);

    private BackupTable.Entry entry(String flow, long id, long capturedMillis, boolean executedHere)
    {
        SourceChange change = new SourceChange(Operation.INSERT, List.of(Fixtures.bigint(id)), 10,
                                               Fixtures.row("id", id, "name", "n" + id, "email", "e"));
        BackupTable.Entry entry = new BackupTable.Entry(Task.captured(flow, change, 0),
                                                    Murmur3Partitioner.instance.decorateKey(Fixtures.bigint(id)),
                                                    capturedMillis, null);
        if (executedHere)
            mine.add(entry.key.getToken());
        entries.add(entry);
        return entry;
    }

    @Test
    void shouldQueueTheEntriesThisNodeExecutesOnceAndCountThemAll()
    {
        entry("users_by_name", 1, NOW, true);
        entry("users_by_name", 2, NOW, false);
        entry("users_by_name", 3, NOW, true);
        takeover.run("start", Map.of());
        assertEquals(List.of(1L, 3L), queued.stream().map(t -> t.key().get(0).getLong(0)).collect(java.util.stream.Collectors.toList()));
        assertEquals(true, queued.get(0).isRecovered(), "read back from a backup map: no start delay");
        assertEquals(Map.of("users_by_name", 3L), backlog);

        takeover.run("again", Map.of());
        assertEquals(2, queued.size(), "already queued here");
    }

    @Test
    void shouldAdoptAnEntryItsIdleExecutorDoesNotHold()
    {
        entry("users_by_name", 1, NOW, false);
        BackupTable.Entry orphan = entry("users_by_name", 2, NOW, false);
        orphans.add(orphan.key.getToken());
        takeover.run("entries left", Map.of());
        assertEquals(List.of(2L), queued.stream().map(t -> t.key().get(0).getLong(0)).collect(java.util.stream.Collectors.toList()));
        assertEquals(Map.of("users_by_name", 2L), backlog);
    }

    @Test
    void shouldNeitherRunNorCountEntriesOfRowsARangeMovementTookAway()
    {
        // left behind until nodetool cleanup: their executor (idle) completed them on the row's replicas, not here
        BackupTable.Entry orphan = entry("users_by_name", 1, NOW, false);
        orphans.add(orphan.key.getToken());
        movedAway.add(orphan.key.getToken());
        BackupTable.Entry old = entry("users_by_name", 2, NOW - 10 * Takeover.SAFETY_NET_PERIOD_MILLIS, false);
        movedAway.add(old.key.getToken());
        entry("users_by_name", 3, NOW, true);
        takeover.run("entries left", Map.of("users_by_name", Takeover.SAFETY_NET_PERIOD_MILLIS));
        assertEquals(List.of(3L), queued.stream().map(t -> t.key().get(0).getLong(0)).collect(java.util.stream.Collectors.toList()),
                     "neither adopted as an orphan nor run by the safety net");
        assertEquals(Map.of("users_by_name", 1L), backlog, "not counted: a drain does not wait for them");
    }

    @Test
    void shouldSkipAndNotCountEntriesOfFlowsNotAppliedHere()
    {
        entry("dropped_flow", 1, NOW, true);
        takeover.run("start", Map.of());
        assertEquals(List.of(), queued);
        assertEquals(Map.of("users_by_name", 0L), backlog);
    }

    @Test
    void shouldLetTheSafetyNetRunStaleEntriesWhoeverExecutesThem()
    {
        entry("users_by_name", 1, NOW - SAFETY_NET - 1, false);       // stale once: still its executor's
        entry("users_by_name", 2, NOW - 2 * SAFETY_NET - 1, false);   // stale twice: whoever holds it
        entry("users_by_name", 3, NOW - SAFETY_NET - 1, true);        // this node's
        takeover.run("safety net", Map.of("users_by_name", SAFETY_NET));
        assertEquals(Set.of(2L, 3L), queued.stream().map(t -> t.key().get(0).getLong(0)).collect(java.util.stream.Collectors.toSet()));
    }

    @Test
    void shouldResumeAFanOutFromItsRecordedPosition()
    {
        SourceChange change = new SourceChange(Operation.INSERT, List.of(Fixtures.bigint(7)), 10, Fixtures.row("id", 7L));
        BackupTable.Entry entry = new BackupTable.Entry(Task.captured("users_by_name", change, 0),
                                                    Murmur3Partitioner.instance.decorateKey(Fixtures.bigint(7)), NOW,
                                                    Map.entry(1, new byte[]{ 9, 9 }));
        mine.add(entry.key.getToken());
        entries.add(entry);
        takeover.run("node 127.0.0.2 died", Map.of());
        assertEquals(1, queued.get(0).resumeTarget());
        assertEquals(java.nio.ByteBuffer.wrap(new byte[]{ 9, 9 }), queued.get(0).resumePaging());
    }
}
