package org.asynctriggers.flows;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.asynctriggers.api.Operation;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.capture.ExpiringRows;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.spec.FollowSpecTest;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A following flow's deploy: the rows of its fan-out table held here that carry a TTL become its companion's tasks,
 * with backup entries, on the companion's first version on a serving node only.
 */
class FollowSweepTest
{
    @TempDir
    Path spillRoot;

    private final FakeGateway gateway = Fixtures.usersGateway()
                                                .table("tw", BackupTable.companionOf("followers"), List.of("key_0"), List.of("flow", "id"));
    /** the sweep's threads */
    private final TrackingThreadFactory threads = new TrackingThreadFactory();
    /** what the sweep handed the intake: per call, the tasks and those with entries */
    private final List<Map.Entry<List<Task>, List<Task>>> captured = new ArrayList<>();
    private final AtomicInteger reads = new AtomicInteger();

    private Flow flow(String spec, boolean entries)
    {
        FlowSpec parsed = FlowSpecParser.parse(spec, null, 1);
        FlowWorkers workers = new FlowWorkers(new TrackingThreadFactory(), System::nanoTime, RetryScheduler.onThreads(new TrackingThreadFactory()), (min, max) -> max,
                                              millis -> {}, new DeadLetters(gateway, () -> "127.0.0.1", () -> 1_000L));
        TaskProcessor.Executor executor = task -> { throw new AssertionError("not run"); };
        Flow flow = new Flow(parsed, executor, spillRoot.resolve(parsed.name), workers);
        if (entries)
            flow.backupTable = new BackupTable("tw", "followers", 1, gateway);
        flow.markFirstVersionHere();
        return flow;
    }

    private static ExpiringRows.Found follow(long user, long follower)
    {
        return new ExpiringRows.Found(null, List.of(bigint(user), bigint(follower)), 10 + follower);
    }

    /** A node's rows of a table that carry a TTL, in pages */
    private interface Pages
    {
        List<List<ExpiringRows.Found>> of(String keyspace, String table);
    }

    private FollowSweep sweep(Pages pages)
    {
        return new FollowSweep((keyspace, table, page) -> {
            reads.incrementAndGet();
            pages.of(keyspace, table).forEach(page);
        }, (keyspace, token, tasks, withEntries) -> {
            synchronized (captured)
            {
                captured.add(Map.entry(tasks, withEntries));
            }
        }, threads, System::nanoTime, () -> 5_000L, millis -> {});
    }

    @Test
    void shouldCaptureTheExpiringFanOutRowsWithTheirEntriesWhileCountingTheFlowActive() throws Exception
    {
        Flow companion = flow(FollowSpecTest.companion("[]"), true);
        CountDownLatch reading = new CountDownLatch(1), release = new CountDownLatch(1);
        FollowSweep sweep = sweep((keyspace, table) -> {
            assertEquals(List.of("tw", "followers"), List.of(keyspace, table));
            reading.countDown();
            await(release);
            return List.of(List.of(follow(1, 7)), List.of(follow(2, 8)));
        });
        sweep.applied(companion, true);
        assertTrue(reading.await(10, TimeUnit.SECONDS));
        assertEquals(1, companion.metrics.getActiveTasks(), "not drained while it reads");
        release.countDown();
        threads.assertAllEnded(10_000);
        assertEquals(0, companion.metrics.getActiveTasks());
        assertEquals(2, captured.size());
        for (Map.Entry<List<Task>, List<Task>> call : captured)
        {
            Task task = call.getKey().get(0);
            assertEquals("tl_follows", task.flow());
            assertEquals(Operation.INSERT, task.operation());
            assertEquals(call.getKey(), call.getValue(), "its backup entries were written");
        }
        assertEquals(List.of(bigint(1), bigint(7)), captured.get(0).getKey().get(0).key());
        Task first = captured.get(0).getKey().get(0);
        Task again = Task.captured("tl_follows", FollowSweep.changeOf(follow(1, 7), 1), 0);
        Task nextDeploy = Task.captured("tl_follows", FollowSweep.changeOf(follow(1, 7), 2), 0);
        assertEquals(first.id(), again.id(), "another replica's sweep of the same row makes the same task");
        assertTrue(!first.id().equals(nextDeploy.id()), "a later deploy's sweep makes a new one");
        assertEquals(2, gateway.rows("tw", BackupTable.companionOf("followers")).size());
    }

    @Test
    void shouldQueueATaskWithoutEntriesWhenTheyCannotBeWritten() throws Exception
    {
        Flow companion = flow(FollowSpecTest.companion("[]"), true);
        gateway.failNext = FollowSweep.ENTRY_ATTEMPTS;
        sweep((keyspace, table) -> List.of(List.of(follow(1, 7)))).applied(companion, true);
        threads.assertAllEnded(10_000);
        assertEquals(1, captured.size());
        assertEquals(List.of(), captured.get(0).getValue(), "no entry: the task goes to the intake alone");
        assertEquals(0, companion.metrics.getActiveTasks());
    }

    @Test
    void shouldSweepOnlyACompanionsFirstVersionOnAServingNode() throws Exception
    {
        FollowSweep sweep = sweep((keyspace, table) -> List.of(List.of(follow(1, 7))));
        Flow atRestart = flow(FollowSpecTest.companion("[]"), true);
        sweep.applied(atRestart, false);   // applied at the node's first read of the flows (a restart)
        sweep.applied(atRestart, true);    // then resumed: it was not the first time any more
        Flow notFollowing = flow(Fixtures.USERS_BY_NAME, true);
        sweep.applied(notFollowing, true);
        Flow redeployed = flow(FollowSpecTest.companion("[]"), true);
        redeployed.takeFirstVersionHere(); // Flows marks only a version that replaced none
        sweep.applied(redeployed, true);
        threads.assertAllEnded(10_000);
        assertEquals(0, reads.get());
        assertEquals(List.of(), captured);
    }

    private static void await(CountDownLatch latch)
    {
        try
        {
            latch.await(10, TimeUnit.SECONDS);
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }
}
