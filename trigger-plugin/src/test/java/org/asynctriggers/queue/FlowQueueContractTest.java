package org.asynctriggers.queue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.asynctriggers.api.Operation;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The contract every {@link FlowQueue} implementation meets; one subclass per implementation. */
public abstract class FlowQueueContractTest
{
    abstract FlowQueue create(int capacity);

    public static Task task(long created)
    {
        return new Task("f", 1, List.of(Fixtures.bigint(created)), Operation.INSERT, created, Map.of(), created);
    }

    @Test
    void shouldHandOutTasksInArrivalOrder() throws InterruptedException
    {
        FlowQueue queue = create(3);
        Task a = task(1), b = task(2);
        assertTrue(queue.offer(a));
        assertTrue(queue.offer(b));
        assertSame(a, queue.poll(0, TimeUnit.MILLISECONDS));
        assertSame(b, queue.poll(0, TimeUnit.MILLISECONDS));
        assertNull(queue.poll(10, TimeUnit.MILLISECONDS));
    }

    @Test
    void shouldRefuseBeyondCapacity() throws InterruptedException
    {
        FlowQueue queue = create(2);
        assertTrue(queue.offer(task(1)));
        assertTrue(queue.offer(task(2)));
        assertFalse(queue.offer(task(3)));
        assertFalse(queue.offer(task(3), 20, TimeUnit.MILLISECONDS));
        assertEquals(2, queue.size());
        assertEquals(2, queue.capacity());
    }

    @Test
    void shouldReportTheOldestTask() throws InterruptedException
    {
        FlowQueue queue = create(3);
        assertEquals(Long.MAX_VALUE, queue.oldestCreatedNanos());
        queue.offer(task(5));
        queue.offer(task(9));
        assertEquals(5, queue.oldestCreatedNanos());
        queue.poll(0, TimeUnit.MILLISECONDS);
        assertEquals(9, queue.oldestCreatedNanos());
    }

    @Test
    void shouldRefuseNewTasksButDrainOnceClosed() throws InterruptedException
    {
        FlowQueue queue = create(3);
        Task a = task(1);
        queue.offer(a);
        queue.close();
        assertTrue(queue.isClosed());
        assertFalse(queue.offer(task(2)));
        assertFalse(queue.offer(task(2), 10, TimeUnit.MILLISECONDS));
        assertSame(a, queue.poll(0, TimeUnit.MILLISECONDS));
    }

    @Test
    void shouldAcceptAfterSpaceIsFreedWhileWaiting() throws Exception
    {
        FlowQueue queue = create(1);
        queue.offer(task(1));
        Thread consumer = new Thread(() -> {
            try
            {
                Thread.sleep(50);
                queue.poll(0, TimeUnit.MILLISECONDS);
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        });
        consumer.start();
        assertTrue(queue.offer(task(2), 5, TimeUnit.SECONDS));
        consumer.join();
    }
}
