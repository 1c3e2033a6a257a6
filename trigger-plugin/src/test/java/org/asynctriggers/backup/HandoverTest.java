package org.asynctriggers.backup;

import java.util.List;

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

    private Task captured()
    {
        return Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)),
                             Fixtures.row("id", 1L, "name", "ann", "email", "a@x"));
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
    void shouldRunATaskWhoseEntryCouldNotBeWrittenHere()
    {
        executor = "127.0.0.4";
        Task task = captured();
        held.hold(task, this);
        held.unbacked(task);
        assertFalse(handover.leaves(table, task), "its queue may be its only copy");
        held.release(task);
        assertTrue(handover.leaves(table, task), "released: the mark goes with it");
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
