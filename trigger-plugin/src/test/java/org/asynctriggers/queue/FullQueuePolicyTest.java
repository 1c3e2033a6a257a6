package org.asynctriggers.queue;

import java.nio.file.Path;

import org.asynctriggers.metrics.FlowMetrics;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.asynctriggers.queue.FlowQueueContractTest.task;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The block policy's two halves: the coordinator's admit waits and fails; a replica's offer never waits. */
class FullQueuePolicyTest
{
    @TempDir
    Path spillDir;

    private final FlowQueue queue = new BoundedFlowQueue(1);
    private final FlowMetrics metrics = new FlowMetrics(queue, 1, () -> 0);

    private FullQueuePolicy block()
    {
        return new FullQueuePolicy.BlockThenFail(new SpillStore("f", spillDir, System::nanoTime), 20, System::nanoTime);
    }

    @Test
    void shouldAdmitWhileThereIsSpace()
    {
        block().admit("f", queue, metrics);
        assertEquals(FullQueuePolicy.Outcome.ACCEPTED, block().offer("f", queue, task(1), metrics));
        assertEquals(0, metrics.getTotalBlockedTasks());
    }

    @Test
    void shouldHoldTheWriteThenFailItWithAClearMessageAndCountIt()
    {
        FullQueuePolicy policy = block();
        policy.offer("f", queue, task(1), metrics);
        QueueFullException e = assertThrows(QueueFullException.class, () -> policy.admit("f", queue, metrics));
        assertEquals("async trigger queue of flow 'f' is full (capacity 1) after waiting 20 ms; the write was not applied: "
                     + "raise 'queue.workers' or 'queue.capacity', or slow the writers down", e.getMessage());
        assertEquals(1, metrics.getTotalBlockedTasks());
        assertEquals(0, metrics.getCurrentlyBlockedTasks());
        assertEquals(1, metrics.getRejectedTasks());
    }

    @Test
    void shouldSpillOnAReplicaInsteadOfWaiting()
    {
        FullQueuePolicy policy = block();
        policy.offer("f", queue, task(1), metrics);
        assertEquals(FullQueuePolicy.Outcome.SPILLED, policy.offer("f", queue, task(2), metrics));
        assertEquals(0, metrics.getTotalBlockedTasks());
    }

    @Test
    void shouldReportAClosedQueueInsteadOfWaiting()
    {
        queue.close();
        block().admit("f", queue, metrics);
        assertEquals(FullQueuePolicy.Outcome.CLOSED, block().offer("f", queue, task(1), metrics));
        assertEquals(0, metrics.getTotalBlockedTasks());
    }
}
