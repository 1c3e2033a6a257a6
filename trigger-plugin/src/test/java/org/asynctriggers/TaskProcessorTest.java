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
    private final BoundedFlowQueue queue = new BoundedFlowQueue(1);
    private final FlowMetrics metrics = new FlowMetrics(queue, 1, () -> 0);
    private final List<Long> sleeps = new ArrayList<>();

    private Task insert()
    {
        return Fixtures.task(spec, Operation.INSERT, 10, List.of(Fixtures.bigint(1)), Fixtures.row("id", 1L, "name", "ann", "email", "a@x"));
    }

    private TaskProcessor processor(long nowNanos)
    {
        Retries retries = new Retries(spec.name, spec.retry, RetryPolicy.Jitter.RANDOM, new ManualRetryScheduler(), queue,
                                      metrics, new DeadLetters(gateway, () -> "n", () -> 0L), () -> nowNanos);
        return new TaskProcessor(new FlowExecutor(spec, gateway, null, c -> null), metrics, retries,
                                 sleeps::add, () -> nowNanos, 20);
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
