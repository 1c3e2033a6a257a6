package org.asynctriggers.flows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import org.asynctriggers.api.Operation;
import org.asynctriggers.execute.ExecutionResult;
import org.asynctriggers.queue.FullQueuePolicy;
import org.asynctriggers.queue.QueueFullException;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import org.asynctriggers.work.WorkerPool;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The four full-queue policies of docs/design.md, "Full queues", on a whole {@link Flow} with a slow executor. */
class OverflowPoliciesTest
{
    private static final long WAIT_MILLIS = 30_000;

    @TempDir
    Path spillRoot;

    private final TrackingThreadFactory threads = new TrackingThreadFactory();
    private final FakeGateway gateway = Fixtures.usersGateway();
    private final List<Flow> running = new ArrayList<>();
    /** the executors block here until a test opens it */
    private final CountDownLatch gate = new CountDownLatch(1);
    private final List<Long> executed = new CopyOnWriteArrayList<>();
    private final List<Long> started = new CopyOnWriteArrayList<>();

    @AfterEach
    void stopFlows() throws InterruptedException
    {
        gate.countDown();
        for (Flow flow : running)
            flow.stop(5_000);
        threads.assertAllEnded(5_000);
    }

    private Path spillDir()
    {
        return spillRoot.resolve("users_by_name");
    }

    private Flow flow(String options, TaskProcessor.Executor executor, long idleWorkerMillis)
    {
        FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME.replace("\"targets\"", options + ", \"targets\""), null, 1);
        FlowWorkers workers = new FlowWorkers(threads, System::nanoTime, RetryScheduler.onThreads(threads), (min, max) -> max,
                                              millis -> {}, new DeadLetters(gateway, () -> "127.0.0.1", () -> 1_000L));
        Flow flow = new Flow(spec, executor, spillDir(), workers.idleWorkerMillis(idleWorkerMillis));
        flow.start();
        running.add(flow);
        return flow;
    }

    /** Records the task, then waits for the gate; an interrupted wait (the flow stopping) keeps the interrupt. */
    private ExecutionResult gated(Task task)
    {
        started.add(task.timestamp());
        try
        {
            gate.await();
            executed.add(task.timestamp());
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        return ExecutionResult.success();
    }

    /** What the intake does with a captured task. */
    private static FullQueuePolicy.Outcome offer(Flow flow, Task task)
    {
        return flow.policy.offer(flow.spec.name, flow.queue, task, flow.metrics);
    }

    /** What the trigger does on the coordinator. */
    private static void admit(Flow flow)
    {
        flow.policy.admit(flow.spec.name, flow.queue, flow.metrics);
    }

    private static Task task(long n)
    {
        return new Task("users_by_name", 1, List.of(bigint(n)), Operation.INSERT, n, Map.of(), System.nanoTime());
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > deadline)
                throw new AssertionError("timed out waiting for " + what);
            Thread.sleep(5);
        }
    }

    private List<Path> spillFiles() throws IOException
    {
        if (!Files.exists(spillDir()))
            return List.of();
        try (Stream<Path> files = Files.list(spillDir()))
        {
            return files.collect(Collectors.toList());
        }
    }

    private static List<Long> range(long from, long to)
    {
        return LongStream.range(from, to).boxed().collect(Collectors.toList());
    }

    @Test
    void shouldSpillTenThousandTasksAndRunThemAllInOrder() throws Exception
    {
        Flow flow = flow("\"queue\": {\"capacity\": 100, \"workers\": 1}", this::gated, WorkerPool.DEFAULT_IDLE_MILLIS);
        for (long n = 0; n < 10_000; n++)
            assertNotEquals(FullQueuePolicy.Outcome.CLOSED, offer(flow, task(n)));

        assertTrue(flow.metrics.getSpilledTasks() > 0);
        assertEquals(0, flow.metrics.getRejectedTasks());
        assertEquals(0, flow.metrics.getTotalBlockedTasks());
        long onDisk = flow.metrics.getSpilledPending();
        assertTrue(onDisk >= 10_000 - 101, "on disk: " + onDisk);
        waitFor(() -> flow.metrics.getPendingTasks() + flow.metrics.getActiveTasks() == 10_000,
                "pending (spilled included) and active to add up to every task");
        assertEquals(1, spillFiles().size());

        gate.countDown();
        waitFor(() -> executed.size() == 10_000, "10,000 executions");
        assertEquals(range(0, 10_000), executed);
        assertEquals(0, flow.metrics.getSpilledPending());
        waitFor(() -> flow.metrics.getPendingTasks() == 0 && flow.metrics.getCompletedTasks() == 10_000, "completion");
        assertEquals(List.of(), spillFiles(), "drained spill files are deleted");

        // drained: tasks go straight to the queue again
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(10_000)));
        waitFor(() -> executed.size() == 10_001, "one more execution");
    }

    @Test
    void shouldReadBackTheSpillOfAStoppedFlowWhenTheFlowStartsAgain() throws Exception
    {
        Flow first = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}", this::gated, WorkerPool.DEFAULT_IDLE_MILLIS);
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(first, task(0)));
        waitFor(() -> started.size() == 1, "the worker to take task 0");
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(first, task(1)));
        for (long n = 2; n < 6; n++)
            assertEquals(FullQueuePolicy.Outcome.SPILLED, offer(first, task(n)));
        assertEquals(4, first.metrics.getSpilledPending());

        // the worker stuck on task 0 is interrupted; task 1 (in memory) is lost, tasks 2..5 stay on disk
        assertEquals(1, first.stop(50));
        running.remove(first);
        assertEquals(1, spillFiles().size());
        assertEquals(FullQueuePolicy.Outcome.CLOSED, offer(first, task(6)));

        List<Long> ran = new CopyOnWriteArrayList<>();
        Flow second = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}", t -> {
            ran.add(t.timestamp());
            return ExecutionResult.success();
        }, WorkerPool.DEFAULT_IDLE_MILLIS);
        waitFor(() -> ran.size() == 4, "the spilled tasks to run");
        assertEquals(range(2, 6), ran);
        waitFor(() -> second.metrics.getPendingTasks() == 0, "nothing pending");
        assertEquals(List.of(), spillFiles());
    }

    @Test
    void shouldDiscardAndCountTasksOnAFullQueue() throws Exception
    {
        Flow flow = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}, \"overflow\": {\"policy\": \"discard\"}",
                         this::gated, WorkerPool.DEFAULT_IDLE_MILLIS);
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(0)));
        waitFor(() -> started.size() == 1, "the worker to take task 0");
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(1)));
        for (long n = 2; n < 5; n++)
            assertEquals(FullQueuePolicy.Outcome.DISCARDED, offer(flow, task(n)));
        assertEquals(3, flow.metrics.getDiscardedTasks());
        assertEquals(0, flow.metrics.getRejectedTasks());
        assertEquals(0, flow.metrics.getTotalBlockedTasks());

        gate.countDown();
        waitFor(() -> executed.size() == 2, "the accepted tasks");
        assertEquals(List.of(0L, 1L), executed);
        assertEquals(List.of(), spillFiles());
    }

    @Test
    void shouldGrowTheElasticPoolToItsMaximumThenShrinkBackWhenIdle() throws Exception
    {
        Flow flow = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}, "
                         + "\"overflow\": {\"policy\": \"elastic\", \"max_workers\": 3, \"block_timeout_ms\": 1000}",
                         this::gated, 200);
        assertEquals(1, flow.metrics.getMaxPoolSize());
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(0)));
        waitFor(() -> started.size() == 1, "the worker to take task 0");
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(1)));
        // full: a replica never waits; the task spills and one more worker joins
        assertEquals(FullQueuePolicy.Outcome.SPILLED, offer(flow, task(2)));
        waitFor(() -> flow.metrics.getMaxPoolSize() == 2, "a second worker");
        waitFor(() -> started.size() == 2, "the second worker to take task 1");
        waitFor(() -> flow.metrics.getSpilledPending() == 0, "task 2 to leave the spill for the queue");
        assertEquals(FullQueuePolicy.Outcome.SPILLED, offer(flow, task(3)));
        waitFor(() -> flow.metrics.getMaxPoolSize() == 3, "a third worker");
        // at the maximum: spills, no more workers
        waitFor(() -> started.size() == 3 && flow.metrics.getSpilledPending() == 0, "the third worker busy, task 3 queued");
        assertEquals(FullQueuePolicy.Outcome.SPILLED, offer(flow, task(4)));
        assertEquals(3, flow.metrics.getMaxPoolSize());
        assertEquals(0, flow.metrics.getRejectedTasks());
        assertEquals(List.of("async-trigger-users_by_name-worker-1", "async-trigger-users_by_name-worker-2",
                             "async-trigger-users_by_name-worker-3"),
                     threads.threads.stream().map(Thread::getName).filter(n -> n.contains("-worker-")).collect(Collectors.toList()));

        gate.countDown();
        waitFor(() -> executed.size() == 5, "every task");
        waitFor(() -> flow.metrics.getMaxPoolSize() == 1, "the idle workers to leave");
        waitFor(() -> threads.threads.stream().filter(t -> t.getName().contains("-worker-") && t.isAlive()).count() == 1,
                "one worker thread left");
        Thread.sleep(400); // idle past the timeout again: never below queue.workers
        assertEquals(1, flow.metrics.getMaxPoolSize());
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(5)));
        waitFor(() -> executed.size() == 6, "a task on the shrunk pool");
    }

    @Test
    void shouldHoldTheCoordinatorsWriteThenFailWithTheOverloadedMessageWhileReplicasSpill() throws Exception
    {
        Flow flow = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}, "
                         + "\"overflow\": {\"policy\": \"block\", \"block_timeout_ms\": 50}",
                         this::gated, WorkerPool.DEFAULT_IDLE_MILLIS);
        admit(flow);
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(0)));
        waitFor(() -> started.size() == 1, "the worker to take task 0");
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(1)));
        QueueFullException e = assertThrows(QueueFullException.class, () -> admit(flow));
        assertEquals("async trigger queue of flow 'users_by_name' is full (capacity 1) after waiting 50 ms; the write was "
                     + "not applied: raise 'queue.workers' or 'queue.capacity', or slow the writers down", e.getMessage());
        assertEquals(1, flow.metrics.getTotalBlockedTasks());
        assertEquals(0, flow.metrics.getCurrentlyBlockedTasks());
        assertEquals(1, flow.metrics.getRejectedTasks());
        // a replica has applied its write already: it spills rather than wait
        assertEquals(FullQueuePolicy.Outcome.SPILLED, offer(flow, task(2)));
        gate.countDown();
        waitFor(() -> executed.size() == 3, "every task");
        admit(flow); // room again: the next write goes through at once
    }

    @Test
    void shouldLeaveATaskToItsBackupEntryWhenTheSpillCannotBeWritten() throws Exception
    {
        Files.writeString(spillDir(), "a file where the spill directory should be");
        Flow flow = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}", this::gated, WorkerPool.DEFAULT_IDLE_MILLIS);
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(0)));
        waitFor(() -> started.size() == 1, "the worker to take task 0");
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, offer(flow, task(1)));
        assertEquals(FullQueuePolicy.Outcome.LEFT, offer(flow, task(2)));
        assertEquals(0, flow.metrics.getSpilledTasks());
        assertEquals(0, flow.metrics.getRejectedTasks());
        assertTrue(Files.isRegularFile(spillDir()));
    }

    @Test
    void shouldReadBackOnlyTheUndrainedRestOfAPartlyDrainedSpill() throws Exception
    {
        java.util.concurrent.Semaphore permits = new java.util.concurrent.Semaphore(0);
        Flow first = flow("\"queue\": {\"capacity\": 1, \"workers\": 1}", t -> {
            try
            {
                permits.acquire();
                executed.add(t.timestamp());
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
            return ExecutionResult.success();
        }, WorkerPool.DEFAULT_IDLE_MILLIS);
        for (long n = 0; n < 10; n++)
            assertNotEquals(FullQueuePolicy.Outcome.CLOSED, offer(first, task(n)));
        permits.release(3);
        waitFor(() -> executed.size() == 3 && first.metrics.getSpilledPending() == 5, "tasks 0..2 to run, 3 and 4 to leave the spill");
        assertEquals(List.of(0L, 1L, 2L), executed);
        first.stop(50); // 3 is interrupted, 4 (in memory) is lost; 5..9 stay on disk
        running.remove(first);

        List<Long> ran = new CopyOnWriteArrayList<>();
        flow("\"queue\": {\"capacity\": 1, \"workers\": 1}", t -> {
            ran.add(t.timestamp());
            return ExecutionResult.success();
        }, WorkerPool.DEFAULT_IDLE_MILLIS);
        waitFor(() -> ran.size() == 5, "the undrained spilled tasks to run");
        Thread.sleep(100);
        assertEquals(range(5, 10), ran);
        waitFor(() -> {
            try
            {
                return spillFiles().isEmpty();
            }
            catch (IOException e)
            {
                return false;
            }
        }, "the spill files to go");
    }
}
