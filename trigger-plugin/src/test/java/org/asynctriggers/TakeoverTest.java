package org.asynctriggers;

import java.net.UnknownHostException;
import java.util.List;
import java.util.Set;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.asynctriggers.api.Operation;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Who runs a backup entry: exactly one node, the first live replica in ring order, the lost master excluded. */
class TakeoverTest
{
    private static InetAddressAndPort a, b, c;

    @BeforeAll
    static void addresses() throws UnknownHostException
    {
        DatabaseDescriptor.clientInitialization(false);
        a = InetAddressAndPort.getByName("127.0.0.1");
        b = InetAddressAndPort.getByName("127.0.0.2");
        c = InetAddressAndPort.getByName("127.0.0.3");
    }

    private static Takeover.Entry entry(InetAddressAndPort... ringOrder)
    {
        FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        Task task = Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)), Fixtures.row("id", 1L, "name", "a", "email", "e"));
        return new Takeover.Entry(task.withBackup(BackupMap.newId()), "127.0.0.1", List.of(ringOrder), null);
    }

    private static int runners(Takeover.Entry entry, Set<InetAddressAndPort> excluded, Set<InetAddressAndPort> alive)
    {
        int n = 0;
        for (InetAddressAndPort node : List.of(a, b, c))
            if (alive.contains(node) && Takeover.shouldExecute(entry, excluded, alive::contains, node))
                n++;
        return n;
    }

    @Test
    void shouldLetTheFirstLiveReplicaInRingOrderRunAnEntryOfADeadMaster()
    {
        Takeover.Entry entry = entry(a, b);
        // the master (a) died: b, the next replica, runs it; c holds no copy and does not
        assertTrue(Takeover.shouldExecute(entry, Set.of(a), Set.of(b, c)::contains, b));
        assertFalse(Takeover.shouldExecute(entry, Set.of(a), Set.of(b, c)::contains, c));
        assertEquals(1, runners(entry, Set.of(a), Set.of(b, c)));
    }

    @Test
    void shouldSkipAReplicaThatIsDownToo()
    {
        Takeover.Entry entry = entry(a, b, c);
        assertTrue(Takeover.shouldExecute(entry, Set.of(a), Set.of(c)::contains, c), "b is down as well: c runs it");
        assertEquals(1, runners(entry, Set.of(a), Set.of(c)));
    }

    @Test
    void shouldExcludeAMasterThatRestartedEvenThoughItIsAliveAgain()
    {
        Takeover.Entry entry = entry(a, b, c);
        // a restarted before it was convicted (onRestart): it is alive but lost its queue; b runs the entry once
        assertEquals(1, runners(entry, Set.of(a), Set.of(a, b, c)));
        assertTrue(Takeover.shouldExecute(entry, Set.of(a), Set.of(a, b, c)::contains, b));
    }

    @Test
    void shouldRunNothingWhenNoReplicaIsLeft()
    {
        assertEquals(0, runners(entry(a, b), Set.of(a), Set.of(c)));
    }
}
