package org.asynctriggers.work;

import java.util.ArrayList;
import java.util.List;

import org.asynctriggers.api.Operation;
import org.asynctriggers.backup.TaskEntries;
import org.asynctriggers.execute.FlowExecutor;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.queue.BoundedFlowQueue;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.ManualRetryScheduler;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class TaskProcessorTest
{
    private final FakeGateway gateway = Fixtures.usersGateway();
    private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
    private final BoundedFlowQueue queue = new BoundedFlowQueue(1);
    private final FlowMetrics metrics = new FlowMetrics(queue, 1, () -> 0);
    private final List<Long> sleeps = new ArrayList<>();

    private Task insert()
    {
        return gateway.applied("app", "users", Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)),
                                                             Fixtures.row("id", 1L, "name", "ann", "email", "a@x")));
    }

    private final ManualRetryScheduler scheduler = new ManualRetryScheduler();

    private TaskProcessor processor(long nowNanos)
    {
        Retries retries = new Retries(spec.name, spec.retry, RetryPolicy.Jitter.RANDOM, scheduler, queue,
                                      metrics, new DeadLetters(gateway, () -> "n", () -> 0L), () -> nowNanos);
        return new TaskProcessor(new FlowExecutor(spec, gateway, null, c -> null), metrics, retries,
                                 sleeps::add, () -> nowNanos, 20);
    }

    /** Records what the workers did with the backup entries. */
    private static class RecordingEntries implements TaskEntries
    {
        final List<java.util.UUID> completed = new ArrayList<>();
        final List<Integer> resumedAt = new ArrayList<>();

        @Override
        public void recordResume(Task task, int target, java.nio.ByteBuffer paging)
        {
            resumedAt.add(target);
        }

        @Override
        public void completed(Task task)
        {
            completed.add(task.id());
        }

        @Override
        public void released(Task task)
        {
            throw new AssertionError("released " + task);
        }
    }

    @Test
    void shouldRunATaskAtOnceAndThenCompleteItsEntry()
    {
        RecordingEntries entries = new RecordingEntries();
        Task task = insert();
        TaskProcessor processor = processor(30_000_000L);
        processor.entries(entries);
        processor.accept(task);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
        assertEquals(List.of(task.id()), entries.completed);
        assertEquals(List.of(), scheduler.delays, "no wait for anything: the replica that captured it applied its write");
        assertEquals(1, metrics.getCompletedTasks());
        assertEquals(0, metrics.getPendingTasks());
    }

    @Test
    void shouldLeaveATaskItsEntriesHandOverWithoutRunningOrCompletingIt()
    {
        List<Task> left = new ArrayList<>();
        RecordingEntries entries = new RecordingEntries()
        {
            @Override
            public boolean leaves(Task task)
            {
                left.add(task);
                return true;
            }
        };
        Task task = insert();
        TaskProcessor processor = processor(30_000_000L);
        processor.entries(entries);
        processor.accept(task);
        assertEquals(List.of(task), left);
        assertEquals(0, gateway.rows("app", "users_by_name").size(), "not run here");
        assertEquals(List.of(), entries.completed, "its entry stays for the row's executor");
        assertEquals(0, metrics.getCompletedTasks());
    }

    @Test
    void shouldStartATaskReadBackFromABackupMapWithoutItsStartDelay()
    {
        processor(5_000_000L).accept(insert().recovered(5_000_000L, 0, null));
        assertEquals(List.of(), sleeps);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
    }

    @Test
    void shouldNotStartATaskBeforeItsStartDelay()
    {
        // created at 0 ns (Fixtures.task), now 5 ms later, delay 20 ms: waits the remaining 15 ms, then runs
        processor(5_000_000L).accept(insert());
        assertEquals(List.of(16L), sleeps);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
        // an older task starts at once
        processor(30_000_000L).accept(insert());
        assertEquals(List.of(16L), sleeps);
        assertEquals(2, metrics.getCompletedTasks());
    }
}
