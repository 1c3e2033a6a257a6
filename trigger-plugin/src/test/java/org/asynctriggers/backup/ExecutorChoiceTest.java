package org.asynctriggers.backup;

import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Who executes a row's tasks: the first live natural replica, computed alike by every node that sees the same ring. */
class ExecutorChoiceTest
{
    private static InetAddressAndPort a, b, c;
    private static Range<Token> range;

    @BeforeAll
    static void addresses() throws UnknownHostException
    {
        DatabaseDescriptor.clientInitialization(false);
        a = InetAddressAndPort.getByName("127.0.0.1");
        b = InetAddressAndPort.getByName("127.0.0.2");
        c = InetAddressAndPort.getByName("127.0.0.3");
        range = new Range<>(new Murmur3Partitioner.LongToken(0), new Murmur3Partitioner.LongToken(100));
    }

    private static List<Replica> replicas(InetAddressAndPort... order)
    {
        List<Replica> out = new ArrayList<>();
        for (InetAddressAndPort endpoint : order)
            out.add(Replica.fullReplica(endpoint, range));
        return out;
    }

    /** How many of the live nodes, each with the same view of who is alive, take themselves for the executor. */
    private static int executors(List<Replica> replicas, Set<InetAddressAndPort> alive)
    {
        int n = 0;
        for (InetAddressAndPort node : alive)
            if (node.equals(ExecutorChoice.firstLive(replicas, node, alive::contains)))
                n++;
        return n;
    }

    @Test
    void shouldLetExactlyTheFirstReplicaExecuteWhileAllAreWell()
    {
        List<Replica> replicas = replicas(b, c);
        assertEquals(b, ExecutorChoice.firstLive(replicas, b, Set.of(a, b, c)::contains));
        assertNotEquals(c, ExecutorChoice.firstLive(replicas, c, Set.of(a, b, c)::contains));
        assertNotEquals(a, ExecutorChoice.firstLive(replicas, a, Set.of(a, b, c)::contains), "not a replica: holds no entry");
        assertEquals(1, executors(replicas, Set.of(a, b, c)));
    }

    @Test
    void shouldHandTheRowToTheNextReplicaWhenTheFirstDies()
    {
        List<Replica> replicas = replicas(a, b, c);
        assertEquals(b, ExecutorChoice.firstLive(replicas, b, Set.of(b, c)::contains));
        assertEquals(1, executors(replicas, Set.of(b, c)));
        assertEquals(c, ExecutorChoice.firstLive(replicas, c, Set.of(c)::contains), "a and b down: c");
    }

    @Test
    void shouldCountItselfAliveWhateverItsFailureDetectorSays()
    {
        // a node running this is alive; it may not have marked itself so yet at boot
        assertEquals(a, ExecutorChoice.firstLive(replicas(a, b), a, Set.of()::contains));
    }

    @Test
    void shouldRunNothingWhenNoReplicaIsLive()
    {
        assertNull(ExecutorChoice.firstLive(replicas(a, b), c, Set.of(c)::contains));
        assertEquals(0, executors(replicas(a, b), Set.of(c)));
    }
}
