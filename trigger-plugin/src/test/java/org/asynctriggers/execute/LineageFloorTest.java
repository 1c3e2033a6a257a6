package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.OnReplica;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A direct lineage target's cells keep their own timestamps, raised only above the floor (the newest deletion the
 * convergence made of an image's rows): the histories here are the differential test's, where a raise to the image's
 * timestamp left a derived cell the source had deleted, or lost a cell of a write that raced a newer image.
 */
class LineageFloorTest
{
    private final FlowSpec spec = FlowSpecParser.parse(LineageStaleReplicaTest.SPEC, null, 1);
    private final FakeGateway cluster = KvByA.cluster();
    /** the executor's own replica of the source, which a task reads back its missing cells from */
    private final FakeGateway replica = KvByA.replica();
    private final FlowExecutor executor = new FlowExecutor(spec, new OnReplica(cluster, replica), null, c -> null);

    /** A write of row k=1, applied to the cluster and, when {@code replicaHas}, to the executor's replica. */
    private Task write(Operation op, long ts, Map<String, ByteBuffer> values, boolean replicaHas)
    {
        Task task = Fixtures.task(spec, op, ts, List.of(bigint(1)), values);
        return replicaHas ? KvByA.applied(cluster, task, replica) : KvByA.applied(cluster, task);
    }

    private Set<String> byA()
    {
        return KvByA.byA(cluster);
    }

    @Test
    void shouldDeleteAnOlderCellWhenTheSourceRowIsDeletedBetweenItAndANewerImage()
    {
        // b at 1000; the image a1 at 9000 (an LWT's clock); a row deletion at 5000 deletes b, not a1
        assertSuccess(runAll(executor, write(Operation.INSERT, 1000, row("k", 1L, "b", "b1"), true)));
        assertSuccess(runAll(executor, write(Operation.UPDATE, 9000, row("k", 1L, "a", "a1"), true)));
        assertEquals(Set.of("a1/1 b=b1"), byA());
        assertSuccess(runAll(executor, write(Operation.DELETE, 5000, row("k", 1L), true)));
        assertEquals(Set.of("a1/1 b=null"), byA(), "the source row is (k=1, a=a1, b=null)");
    }

    @Test
    void shouldKeepAnOlderCellWhenItsImageComesBackAfterItsRowsWereDeleted()
    {
        assertSuccess(runAll(executor, write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "b", "b1"), true)));
        assertSuccess(runAll(executor, write(Operation.UPDATE, 2000, row("k", 1L, "a", "a2"), true)));
        assertEquals(Set.of("a2/1 b=b1"), byA());
        assertSuccess(runAll(executor, write(Operation.UPDATE, 3000, row("k", 1L, "a", "a1"), true)));
        assertEquals(Set.of("a1/1 b=b1"), byA(), "a1's row, deleted when the row moved to a2, is back with b at 1000");
    }

    @Test
    void shouldWriteTheCellsOfALosingImageIntoTheRowsOfTheWinnerWhenTheirWritesRaced()
    {
        assertSuccess(runAll(executor, write(Operation.INSERT, 1000, row("k", 1L, "a", "a0", "b", "b9"), true)));
        // two writes with one timestamp: a2 wins a's tie, b2 is the only b at 5000. Each task runs on a replica that
        // has its own write only (a replica restarted between them, hints on their way)
        FakeGateway other = KvByA.replica();
        other.applied("fuzz", "kv", Fixtures.task(spec, Operation.INSERT, 1000, List.of(bigint(1)), row("k", 1L, "a", "a0", "b", "b9")));
        Task winner = write(Operation.UPDATE, 5000, row("k", 1L, "a", "a2"), true);
        Task loser = write(Operation.UPDATE, 5000, row("k", 1L, "a", "a1", "b", "b2"), false);
        other.applied("fuzz", "kv", loser);
        assertSuccess(runAll(executor, winner));
        assertEquals(Set.of("a2/1 b=b2"), byA(), "the winner's task reads the row at ALL: the other write is there");
        assertSuccess(runAll(new FlowExecutor(spec, new OnReplica(cluster, other), null, c -> null), loser));
        assertEquals(Set.of("a2/1 b=b2"), byA(), "the source row is (k=1, a=a2, b=b2): b2 at 5000 is newer than b9 at 1000");
    }

    @Test
    void shouldWriteItsCellsAgainAboveAnOlderImagesDeletionThatRacedIt()
    {
        assertSuccess(runAll(executor, write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "b", "b1"), true)));
        Task a2 = write(Operation.UPDATE, 2000, row("k", 1L, "a", "a2"), true);
        Task back = write(Operation.UPDATE, 3000, row("k", 1L, "a", "a1"), false);
        // a2's task converges from a read that has not seen a1's return; before it deletes a1's rows (at 1999), the
        // return's task runs whole, its first read made before a2's entry was recorded (so b is not raised at once)
        Interleaved returning = new Interleaved(2, () -> {}, 1);
        Interleaved older = new Interleaved(2, () -> {
            replica.applied("fuzz", "kv", back);
            assertSuccess(runAll(new FlowExecutor(spec, returning, null, c -> null), back));
        }, 0);
        assertSuccess(runAll(new FlowExecutor(spec, older, null, c -> null), a2));
        assertEquals(Set.of("a1/1 b=b1"), byA(), "the return read a2's entry when it converged, and wrote b above it");
    }

    @Test
    void shouldRaiseTheCellsOfARowThatAnotherTargetOfItsTableDerivesFromAnotherImage()
    {
        // the author's own timeline row (a target without a fan-out) and the followers' rows (a fan-out) share the
        // timeline: author 100 follows 200, so (100, tweet) is also a row of the image "by 200"
        FlowSpec timeline = LineageConvergenceTest.spec(2);
        FakeGateway tw = LineageConvergenceTest.gateway();
        tw.insert("tw", "followers", row("user_id", 200L, "follower_id", 100L), 1);
        FlowExecutor onTw = new FlowExecutor(timeline, tw, null, c -> null);
        List<ByteBuffer> tweet = List.of(bigint(LineageConvergenceTest.TWEET));
        assertSuccess(runAll(onTw, tw.applied("tw", "tweets", Fixtures.task(timeline, Operation.INSERT, 1000, tweet,
                                                                                row("tweet_id", 1L, "author_id", 200L, "body", "hi")))));
        // the author changes alone, later: the body keeps its timestamp (1000), and the rows by 200 go at 1999
        assertSuccess(runAll(onTw, tw.applied("tw", "tweets", Fixtures.task(timeline, Operation.UPDATE, 2000, tweet,
                                                                                row("tweet_id", 1L, "author_id", 100L)))));
        assertEquals(Set.of("100/1 by 100: hi", "11/1 by 100: hi", "12/1 by 100: hi", "13/1 by 100: hi"),
                     LineageConvergenceTest.actual(tw, "timeline"));
    }

    @Test
    void shouldWriteAboveTheOlderImagesDeletionAtItsWrittenWhenTheReturnRacesIt()
    {
        assertSuccess(runAll(executor, write(Operation.INSERT, 1000, row("k", 1L, "a", "a1", "b", "b1"), true)));
        assertSuccess(runAll(executor, write(Operation.UPDATE, 2500, row("k", 1L, "b", "b9"), true))); // a1's written: 2500
        Task a2 = write(Operation.UPDATE, 2000, row("k", 1L, "a", "a2"), true); // out of order: older than b9
        Task back = write(Operation.UPDATE, 3000, row("k", 1L, "a", "a1"), false);
        for (int hide : new int[]{ 1, 0 }) // the return's first read made before a2's entry was recorded, or after
        {
            Interleaved returning = new Interleaved(2, () -> {}, hide);
            Interleaved older = new Interleaved(2, () -> {
                replica.applied("fuzz", "kv", back);
                assertSuccess(runAll(new FlowExecutor(spec, returning, null, c -> null), back));
            }, 0);
            assertSuccess(runAll(new FlowExecutor(spec, older, null, c -> null), a2));
            // a2's task deletes a1's rows at a1's written (2500): the return wrote b9 above it
            assertEquals(Set.of("a1/1 b=b9"), byA(), "source: (k=1, a=a1@3000, b=b9@2500)");
        }
    }

    /**
     * The executor's gateway, with a hook on its n-th read of the lineage (run after the read, before its answer is
     * used) and its first {@code hideFirst} reads answered without the entry recorded at 2000 (made before it was).
     */
    private final class Interleaved extends OnReplica
    {
        private final int at;
        private final Runnable hook;
        private int hidden;
        private int reads;

        Interleaved(int at, Runnable hook, int hideFirst)
        {
            super(cluster, replica);
            this.at = at;
            this.hook = hook;
            this.hidden = hideFirst;
        }

        @Override
        public List<Map<String, ByteBuffer>> execute(Prepared s, ConsistencyLevel cl, List<ByteBuffer> values)
        {
            List<Map<String, ByteBuffer>> rows = super.execute(s, cl, values);
            if (!s.cql.equals(Cql.lineageSelect()))
                return rows;
            if (hidden-- > 0)
                rows.removeIf(r -> r.get("ts") != null && longOf(r.get("ts")) == 2000);
            if (++reads == at)
                hook.run();
            return rows;
        }
    }
}
