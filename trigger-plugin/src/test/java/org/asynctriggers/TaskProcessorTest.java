package org.asynctriggers;

import java.util.ArrayList;
import java.util.List;

import org.asynctriggers.api.Operation;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class TaskProcessorTest
{
    private final FakeGateway gateway = Fixtures.usersGateway();
    private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
    private final FlowMetrics metrics = new FlowMetrics(new BoundedFlowQueue(1), 1, () -> 0);
    private final List<Long> sleeps = new ArrayList<>();
    private final TaskProcessor processor = new TaskProcessor(spec.name, new FlowExecutor(spec, gateway, null, c -> null), metrics,
                                                              new RetryPolicy(3, 100, 150), sleeps::add);

    private Task insert()
    {
        return Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)), Fixtures.row("id", 1L, "name", "ann", "email", "a@x"));
    }

    @Test
    void shouldNotStartATaskBeforeItsStartDelay()
    {
        // created at 0 ns (Fixtures.task), now 5 ms later, delay 20 ms: waits the remaining 15 ms, then runs
        TaskProcessor delayed = new TaskProcessor(spec.name, new FlowExecutor(spec, gateway, null, c -> null), metrics,
                                                  new RetryPolicy(3, 100, 150), sleeps::add, () -> 5_000_000L, 20);
        delayed.accept(insert());
        assertEquals(List.of(16L), sleeps);
        assertEquals(1, gateway.rows("app", "users_by_name").size());
        // an older task starts at once
        TaskProcessor late = new TaskProcessor(spec.name, new FlowExecutor(spec, gateway, null, c -> null), metrics,
                                               new RetryPolicy(3, 100, 150), sleeps::add, () -> 30_000_000L, 20);
        late.accept(insert());
        assertEquals(List.of(16L), sleeps);
    }

    @Test
    void shouldRetryWithBackoffThenSucceed()
    {
        gateway.failNext = 2;
        processor.accept(insert());
        assertEquals(List.of(100L, 150L), sleeps);
        assertEquals(2, metrics.getRetriedTasks());
        assertEquals(1, metrics.getCompletedTasks());
        assertEquals(0, metrics.getFailedTasks());
        assertEquals(0, metrics.getActiveTasks());
        assertEquals(1, gateway.rows("app", "users_by_name").size());
    }

    @Test
    void shouldCountAFailureAfterTheLastAttempt()
    {
        gateway.failNext = 3;
        processor.accept(insert());
        assertEquals(2, metrics.getRetriedTasks());
        assertEquals(0, metrics.getCompletedTasks());
        assertEquals(1, metrics.getFailedTasks());
        assertEquals(0, metrics.getActiveTasks());
    }
}
