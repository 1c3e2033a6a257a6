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
    private final Handover handover = new Handover(new Ownership(ring, null), held);

    @BeforeAll
    static void client()
    {
        DatabaseDescriptor.clientInitialization(false);
    }

    private static HeldTasks.EntryHere here(Set<String> stoodInFor)
    {
        return new HeldTasks.EntryHere("app", TOKEN, stoodInFor);
    }

    /** A task captured here as the row's first replica, its entry written here. */
    private Task captured()
    {
        Task task = Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)),
                                  Fixtures.row("id", 1L, "name", "ann", "email", "a@x"));
        held.entryHere(task, here(Set.of()));
        return task;
    }

    @Test
    void shouldRunHereWhatThisNodeStillExecutes()
    {
        assertFalse(handover.leaves(captured()));
    }

    @Test
    void shouldLeaveACapturedTaskToTheNodeThatExecutesItsRowNow()
    {
        executor = "127.0.0.4"; // a node bootstrapped or replaced before this one in the row's replica order
        assertTrue(handover.leaves(captured()));
    }

    @Test
    void shouldRunATaskReadBackFromItsEntryWhateverTheRingSays()
    {
        // an orphan adopted here: left to its executor, it would be adopted and left again at every scan
        executor = "127.0.0.4";
        assertFalse(handover.leaves(captured().recovered(0, 0, null)));
    }

    @Test
    void shouldRunATaskWhoseEntryIsNotKnownToBeHere()
    {
        executor = "127.0.0.4";
        Task task = Fixtures.task(spec, Operation.INSERT, 11, List.of(Fixtures.bigint(2)), Fixtures.row("id", 2L, "name", "bo"));
        assertFalse(handover.leaves(task), "captured without its entry here, parked, or spilled and adopted");
        held.hold(task, this);
        held.entryHere(task, here(Set.of()));
        assertTrue(handover.leaves(task));
        held.release(task);
        assertFalse(handover.leaves(task), "released: the record goes with it");
    }

    @Test
    void shouldRunATaskCapturedWhileTheNodeThatExecutesItsRowNowWasDown()
    {
        // this node stood in for 127.0.0.2 when it captured the task; 127.0.0.2 is back: it may not hold the write
        // until a hint brings it (or ever, with hints off or expired)
        executor = "127.0.0.2";
        Task task = captured();
        held.entryHere(task, here(Set.of("127.0.0.2")));
        assertFalse(handover.leaves(task));
        executor = "127.0.0.4";   // a node that replaced 127.0.0.2 at another address: it streamed the entry
        assertTrue(handover.leaves(task));
    }

    @Test
    void shouldRunHereWhenNoNodeIsKnownToExecuteTheRow()
    {
        executor = null;
        assertFalse(handover.leaves(captured()));
    }
}
