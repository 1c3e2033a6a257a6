package org.asynctriggers.backup;

import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.NetworkTopologyStrategy;
import org.apache.cassandra.locator.RackInferringSnitch;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.TokenMetadata;
import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who executes a row's tasks on a ring of two data centers of three nodes each (dc "1": 127.1.0.x, dc "2":
 * 127.2.0.x, as RackInferringSnitch reads the addresses), eight vnodes per node, a keyspace replicated 3 + 3 by
 * Cassandra's own NetworkTopologyStrategy: every node replicates every row and captures its tasks. Each node decides
 * with {@link ExecutorChoice} from its own view of who is alive, and its scans ({@link Takeover}) queue what it finds.
 */
class TwoDataCenterExecutorTest
{
    private static final int ROWS = 300;
    private static final List<InetAddressAndPort> DC1 = new ArrayList<>(), DC2 = new ArrayList<>();
    private static NetworkTopologyStrategy strategy;
    private static final FlowSpec FLOW = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);

    @BeforeAll
    static void ring() throws UnknownHostException
    {
        DatabaseDescriptor.clientInitialization(false);
        DatabaseDescriptor.setPartitionerUnsafe(Murmur3Partitioner.instance);
        IEndpointSnitch snitch = new RackInferringSnitch();
        TokenMetadata ring = new TokenMetadata(snitch);
        Random random = new Random(42);
        for (int i = 1; i <= 3; i++)
        {
            DC1.add(InetAddressAndPort.getByName("127.1.0." + i));
            DC2.add(InetAddressAndPort.getByName("127.2.0." + i));
        }
        for (InetAddressAndPort node : all())
            for (int v = 0; v < 8; v++)
                ring.updateNormalToken(new Murmur3Partitioner.LongToken(random.nextLong()), node);
        strategy = new NetworkTopologyStrategy("app", ring, snitch, Map.of("1", "3", "2", "3"));
    }

    private static List<InetAddressAndPort> all()
    {
        List<InetAddressAndPort> all = new ArrayList<>(DC1);
        all.addAll(DC2);
        return all;
    }

    private static DecoratedKey key(long id)
    {
        return Murmur3Partitioner.instance.decorateKey(Fixtures.bigint(id));
    }

    /** The choice of {@code node} when it holds {@code alive} alive (itself always). */
    private static ExecutorChoice choiceOf(InetAddressAndPort node, Set<InetAddressAndPort> alive)
    {
        return ExecutorChoice.of(node, keyspace -> strategy, alive::contains);
    }

    /** Per row, the nodes among {@code up} that take themselves for its executor, each seeing {@code viewOf} alive. */
    private static Map<Long, List<InetAddressAndPort>> executors(Collection<InetAddressAndPort> up,
                                                                 java.util.function.Function<InetAddressAndPort, Set<InetAddressAndPort>> viewOf)
    {
        Map<Long, List<InetAddressAndPort>> out = new LinkedHashMap<>();
        for (long id = 0; id < ROWS; id++)
        {
            Token token = key(id).getToken();
            List<InetAddressAndPort> executing = new ArrayList<>();
            for (InetAddressAndPort node : up)
                if (choiceOf(node, viewOf.apply(node)).isExecutor("app", token))
                    executing.add(node);
            out.put(id, executing);
        }
        return out;
    }

    private static Set<InetAddressAndPort> set(List<InetAddressAndPort> nodes)
    {
        return new HashSet<>(nodes);
    }

    @Test
    void shouldListTheReplicasOfBothDataCentersMixedInRingOrder()
    {
        Set<Set<InetAddressAndPort>> firstTwo = new HashSet<>();
        for (long id = 0; id < ROWS; id++)
        {
            List<InetAddressAndPort> order = new ArrayList<>();
            for (Replica replica : strategy.getNaturalReplicasForToken(key(id).getToken()))
                order.add(replica.endpoint());
            assertEquals(set(all()), set(order), "3 + 3: every node replicates every row");
            firstTwo.add(Set.of(order.get(0), order.get(1)));
        }
        assertTrue(firstTwo.stream().anyMatch(pair -> pair.stream().map(n -> DC1.contains(n)).distinct().count() == 2),
                   "the order interleaves the data centers");
    }

    @Test
    void shouldNameTheReplicasTheExecutorStandsInFor()
    {
        Set<InetAddressAndPort> dc2Up = set(DC2);
        for (long id = 0; id < ROWS; id++)
        {
            Token token = key(id).getToken();
            List<InetAddressAndPort> order = new ArrayList<>();
            for (Replica replica : strategy.getNaturalReplicasForToken(token))
                order.add(replica.endpoint());
            assertEquals(Set.of(), choiceOf(order.get(0), set(all())).skipped("app", token), "the first replica stands in for none");
            // dc1 down: a dc2 node executes, for every dc1 replica before it in order
            InetAddressAndPort executor = order.stream().filter(DC2::contains).findFirst().orElseThrow();
            Set<String> expected = new HashSet<>();
            for (InetAddressAndPort node : order.subList(0, order.indexOf(executor)))
                expected.add(node.getHostAddress(false));
            assertEquals(expected, choiceOf(executor, dc2Up).skipped("app", token));
        }
    }

    @Test
    void shouldLetExactlyOneNodeOfEitherDataCenterExecuteEachRowWhileAllAreUp()
    {
        Map<Long, List<InetAddressAndPort>> executors = executors(all(), node -> set(all()));
        Map<InetAddressAndPort, Integer> rowsPerNode = new HashMap<>();
        for (List<InetAddressAndPort> executing : executors.values())
        {
            assertEquals(1, executing.size(), "exactly one executor: " + executing);
            rowsPerNode.merge(executing.get(0), 1, Integer::sum);
        }
        assertEquals(set(all()), rowsPerNode.keySet(), "every node of both data centers executes some rows: " + rowsPerNode);
    }

    @Test
    void shouldHandTheRowsOfADataCenterThatIsDownToExactlyOneNodeOfTheOther()
    {
        Map<Long, List<InetAddressAndPort>> before = executors(all(), node -> set(all()));
        Map<Long, List<InetAddressAndPort>> during = executors(DC2, node -> set(DC2));
        for (long id = 0; id < ROWS; id++)
        {
            assertEquals(1, during.get(id).size(), "row " + id + ": " + during.get(id));
            if (DC2.contains(before.get(id).get(0)))
                assertEquals(before.get(id), during.get(id), "dc2's own rows stay where they were");
        }
    }

    /** One node's scans over its own backup map, deciding with its own choice. */
    private static final class ScanningNode
    {
        final List<BackupTable.Entry> entries = new ArrayList<>();
        final List<Task> queued = new ArrayList<>();
        final Takeover takeover;

        ScanningNode(InetAddressAndPort node, Set<InetAddressAndPort> alive, Set<UUID> heldHere)
        {
            ExecutorChoice choice = choiceOf(node, alive);
            takeover = new Takeover(new Takeover.NodeView()
            {
                @Override
                public Collection<FlowSpec> backedUpFlows()
                {
                    return List.of(FLOW);
                }

                @Override
                public boolean executes(String keyspace, Token token)
                {
                    return choice.isExecutor(keyspace, token);
                }

                @Override
                public boolean orphaned(String keyspace, Token token, String flow, long capturedMillis)
                {
                    return false;
                }

                @Override
                public boolean requeue(Task task, String why)
                {
                    if (!heldHere.add(task.id()))
                        return false;
                    queued.add(task);
                    return true;
                }

                @Override
                public void backlog(Map<String, Long> entriesByFlow, long startedMillis)
                {
                }
            }, (keyspace, table, visitor) -> entries.forEach(visitor::visit), Thread::new, () -> 1_000L, false);
        }
    }

    private static BackupTable.Entry entry(long id)
    {
        SourceChange change = new SourceChange(Operation.INSERT, List.of(Fixtures.bigint(id)), 10,
                                               Fixtures.row("id", id, "name", "n" + id, "email", "e"));
        return new BackupTable.Entry(Task.captured(FLOW.name, change, 0), key(id), 1_000L, null);
    }

    private static Map<UUID, Integer> queuedCounts(Collection<ScanningNode> nodes)
    {
        Map<UUID, Integer> counts = new HashMap<>();
        for (ScanningNode node : nodes)
            for (Task task : node.queued)
                counts.merge(task.id(), 1, Integer::sum);
        return counts;
    }

    @Test
    void shouldTakeOverEveryEntryOnceWhenADataCenterGoesDownAndHandBackCleanlyWhenItReturns()
    {
        // dc1 goes down with entries on every replica, dc1's rows not run yet: each dc2 node scans on onDead
        Map<InetAddressAndPort, ScanningNode> dc2 = new LinkedHashMap<>();
        for (InetAddressAndPort node : DC2)
            dc2.put(node, new ScanningNode(node, set(DC2), new HashSet<>()));
        for (long id = 0; id < ROWS; id++)
            for (ScanningNode node : dc2.values())
                node.entries.add(entry(id));
        for (ScanningNode node : dc2.values())
            node.takeover.run("node 127.1.0.1 died", Map.of());
        Map<UUID, Integer> takenOver = queuedCounts(dc2.values());
        assertEquals(ROWS, takenOver.size(), "no entry left behind");
        assertTrue(takenOver.values().stream().allMatch(n -> n == 1), "each queued by one dc2 node only");

        // dc1 is back before dc2 finished: its nodes restart with their own entries (the completions of what dc2
        // finished are on their way as hints) and scan at start; dc2's nodes keep what they queued, and scan nothing
        Map<InetAddressAndPort, ScanningNode> dc1 = new LinkedHashMap<>();
        for (InetAddressAndPort node : DC1)
        {
            ScanningNode replica = new ScanningNode(node, set(all()), new HashSet<>());
            for (long id = 0; id < ROWS; id++)
                replica.entries.add(entry(id));
            replica.takeover.run("start", Map.of());
            dc1.put(node, replica);
        }
        Map<UUID, Integer> handedBack = queuedCounts(dc1.values());
        Map<Long, List<InetAddressAndPort>> executors = executors(all(), node -> set(all()));
        Set<Long> dc1Rows = executors.entrySet().stream().filter(e -> DC1.contains(e.getValue().get(0)))
                                     .map(Map.Entry::getKey).collect(Collectors.toSet());
        // each of dc1's rows on one dc1 node; those dc2 had not finished run twice meanwhile (at least once)
        assertEquals(dc1Rows.size(), handedBack.size());
        assertTrue(handedBack.values().stream().allMatch(n -> n == 1));
        // dc2's later scans leave dc1's rows alone: each row has one executor again, the one it had before
        for (InetAddressAndPort node : DC2)
        {
            ScanningNode rescanning = new ScanningNode(node, set(all()), new HashSet<>());
            for (long id = 0; id < ROWS; id++)
                rescanning.entries.add(entry(id));
            rescanning.takeover.run("entries left", Map.of());
            assertTrue(rescanning.queued.stream().noneMatch(t -> dc1Rows.contains(t.key().get(0).getLong(0))));
        }
    }

    @Test
    void shouldRunARowOnceOnEachSideWhileTheDataCentersAreCutOff()
    {
        // each side holds the other down: both execute the row (at least once; derived writes carry the source
        // timestamp, and lineage targets wait, as their writes need both sides)
        Map<Long, List<InetAddressAndPort>> executors = executors(all(), node -> DC1.contains(node) ? set(DC1) : set(DC2));
        for (List<InetAddressAndPort> executing : executors.values())
        {
            assertEquals(2, executing.size(), String.valueOf(executing));
            assertTrue(DC1.contains(executing.get(0)) && DC2.contains(executing.get(1)));
        }
    }
}
