package org.asynctriggers.metrics;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.asynctriggers.queue.BoundedFlowQueue;
import org.asynctriggers.queue.FlowQueue;
import org.asynctriggers.queue.FlowQueueContractTest;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class FlowMetricsTest
{
    private final AtomicLong now = new AtomicLong();
    private final FlowQueue queue = new BoundedFlowQueue(10);
    private final FlowMetrics metrics = new FlowMetrics(queue, 4, now::get);

    @Test
    void shouldReportTheAgeOfTheOldestPendingTask()
    {
        assertEquals(0, metrics.getOldestPendingTaskAgeMillis());
        queue.offer(FlowQueueContractTest.task(TimeUnit.MILLISECONDS.toNanos(100)));
        now.set(TimeUnit.MILLISECONDS.toNanos(350));
        assertEquals(250, metrics.getOldestPendingTaskAgeMillis());
        assertEquals(1, metrics.getPendingTasks());
    }

    private static int drain(FlowQueue q)
    {
        try
        {
            return q.poll(0, TimeUnit.MILLISECONDS) == null ? 0 : 1;
        }
        catch (InterruptedException e)
        {
            throw new AssertionError(e);
        }
    }

    @Test
    void shouldKeepCountingAcrossARedeployOfTheFlow()
    {
        metrics.taskStarted();
        metrics.taskFinished(true);
        queue.offer(FlowQueueContractTest.task(0));                 // still queued in the old version
        FlowMetrics next = new FlowMetrics(new BoundedFlowQueue(10), 4, now::get);
        next.continueFrom(metrics);
        assertEquals(1, next.getCompletedTasks());
        assertEquals(1, next.getPendingTasks());
        metrics.taskStarted();                                       // the old version drains its queue
        assertEquals(1, drain(queue));
        metrics.taskFinished(true);
        assertEquals(2, next.getCompletedTasks());
        next.absorbPrevious();                                       // the old version stopped
        next.taskStarted();
        next.taskFinished(true);
        assertEquals(3, next.getCompletedTasks());
        assertEquals(0, next.getPendingTasks());
    }

    @Test
    void shouldCountOutcomes()
    {
        metrics.taskStarted();
        metrics.taskStarted();
        metrics.taskStarted();
        assertEquals(3, metrics.getActiveTasks());
        metrics.taskFinished(true);
        metrics.taskFinished(false);
        metrics.taskRetrying();
        assertEquals(0, metrics.getActiveTasks());
        metrics.retryAbandoned();
        assertEquals(1, metrics.getCompletedTasks());
        assertEquals(2, metrics.getFailedTasks());
        assertEquals(1, metrics.getRetriedTasks());
        assertEquals(4, metrics.getMaxPoolSize());
        assertEquals(10, metrics.getQueueCapacity());
    }

    @Test
    void shouldQuoteObjectNameValues()
    {
        javax.management.ObjectName name = FlowMetrics.objectName("ks", "t", "a,b=c");
        assertEquals("org.asynctriggers", name.getDomain());
        assertEquals("Flow", name.getKeyProperty("type"));
        assertEquals("a,b=c", javax.management.ObjectName.unquote(name.getKeyProperty("flow")));
        assertEquals("ks", javax.management.ObjectName.unquote(name.getKeyProperty("keyspace")));
    }
}
