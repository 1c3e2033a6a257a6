package org.asynctriggers.backup;

import java.util.List;
import java.util.Set;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which queued tasks a worker leaves to the row's executor after the ring changed, and which it always runs. */
class HandoverTest
{
    private static final Token TOKEN = new Murmur3Partitioner.LongToken(42);
    private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
    private final BackupTable table = new BackupTable("app", "users", 1, null);
    private final HeldTasks held = new HeldTasks(() -> 0L);
    /** who executes every row, as this node (127.0.0.1) sees the ring now */
    private String executor = "127.0.0.1";
    private final ExecutorChoice ring = new ExecutorChoice()
    {
        @Override
        public String executorOf(String keyspace, Token token)
        {
            return executor;
        }

        @Override
        public String self()
        {
            return "127.0.0.1";
        }
    };
    private final Handover handover = new Handover(new Ownership(ring, null), held, (t, task) -> TOKEN);

    @BeforeAll
    static void client()
    {
        DatabaseDescriptor.clientInitialization(false);
    }

    /** A task captured here as the row's first replica, its entry written here. */
    private Task captured()
    {
        Task task = Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)),
                                  Fixtures.row("id", 1L, "name", "ann", "email", "a@x"));
        held.entryHere(task, Set.of());
        return task;
    }

    @Test
    void shouldRunHereWhatThisNodeStillExecutes()
    {
        assertFalse(handover.leaves(table, captured()));
    }

    @Test
    void shouldLeaveACapturedTaskToTheNodeThatExecutesItsRowNow()
    {
        executor = "127.0.0.4"; // a node bootstrapped or replaced before this one in the row's replica order
        assertTrue(handover.leaves(table, captured()));
    }

    @Test
    void shouldRunATaskReadBackFromItsEntryWhateverTheRingSays()
    {
        // an orphan adopted here: left to its executor, it would be adopted and left again at every scan
        executor = "127.0.0.4";
        assertFalse(handover.leaves(table, captured().recovered(0, 0, null)));
    }

    @Test
    void shouldRunATaskWhoseEntryIsNotKnownToBeHere()
    {
        executor = "127.0.0.4";
        Task task = Fixtures.task(spec, Operation.INSERT, 11, List.of(Fixtures.bigint(2)), Fixtures.row("id", 2L, "name", "bo"));
        assertFalse(handover.leaves(table, task), "captured without its entry here, parked, or spilled and adopted");
        held.hold(task, this);
        held.entryHere(task, Set.of());
        assertTrue(handover.leaves(table, task));
        held.release(task);
        assertFalse(handover.leaves(table, task), "released: the record goes with it");
    }

    @Test
    void shouldRunATaskCapturedWhileTheNodeThatExecutesItsRowNowWasDown()
    {
        // this node stood in for 127.0.0.2 when it captured the task; 127.0.0.2 is back: it may not hold the write
        // until a hint brings it (or ever, with hints off or expired)
        executor = "127.0.0.2";
        Task task = captured();
        held.entryHere(task, Set.of("127.0.0.2"));
        assertFalse(handover.leaves(table, task));
        executor = "127.0.0.4";   // a node that replaced 127.0.0.2 at another address: it streamed the entry
        assertTrue(handover.leaves(table, task));
    }

    @Test
    void shouldRunHereWhenNoNodeIsKnownToExecuteTheRowOrItsKeyCannotBeRead()
    {
        executor = null;
        assertFalse(handover.leaves(table, captured()));
        executor = "127.0.0.4";
        Handover unreadable = new Handover(new Ownership(ring, null), held, (t, task) -> { throw new IllegalArgumentException("bad key"); });
        assertFalse(unreadable.leaves(table, captured()));
        Handover unknownTable = new Handover(new Ownership(ring, null), held, (t, task) -> null);
        assertFalse(unknownTable.leaves(table, captured()));
    }
}
