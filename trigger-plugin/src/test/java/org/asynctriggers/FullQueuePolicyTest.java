package org.asynctriggers;

import org.junit.jupiter.api.Test;

import static org.asynctriggers.FlowQueueContractTest.task;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class FullQueuePolicyTest
{
    private final FlowQueue queue = new BoundedFlowQueue(1);
    private final FlowMetrics metrics = new FlowMetrics(queue, 1, () -> 0);
    private final FullQueuePolicy policy = new FullQueuePolicy.BlockThenFail(20);

    @Test
    void shouldAcceptWhileThereIsSpace()
    {
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, policy.enqueue("f", queue, task(1), metrics));
        assertEquals(0, metrics.getTotalBlockedTasks());
    }

    @Test
    void shouldBlockThenFailWithAClearMessageAndCountIt()
    {
        policy.enqueue("f", queue, task(1), metrics);
        QueueFullException e = assertThrows(QueueFullException.class, () -> policy.enqueue("f", queue, task(2), metrics));
        assertEquals("async trigger queue of flow 'f' is full (capacity 1) after waiting 20 ms; the write was not applied: "
                     + "raise 'queue.workers' or 'queue.capacity', or slow the writers down", e.getMessage());
        assertEquals(1, metrics.getTotalBlockedTasks());
        assertEquals(0, metrics.getCurrentlyBlockedTasks());
        assertEquals(1, metrics.getRejectedTasks());
    }

    @Test
    void shouldReportAClosedQueueInsteadOfBlocking()
    {
        queue.close();
        assertEquals(FullQueuePolicy.Outcome.CLOSED, policy.enqueue("f", queue, task(1), metrics));
        assertEquals(0, metrics.getTotalBlockedTasks());
    }
}
