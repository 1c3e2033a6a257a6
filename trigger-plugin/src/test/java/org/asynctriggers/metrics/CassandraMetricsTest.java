package org.asynctriggers.metrics;

import java.lang.management.ManagementFactory;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import com.codahale.metrics.Histogram;
import org.asynctriggers.queue.BoundedFlowQueue;
import org.asynctriggers.queue.FlowQueue;
import org.asynctriggers.queue.FlowQueueContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Against Cassandra's own registry and the platform MBean server, where a node's JMX exporter reads them. */
class CassandraMetricsTest
{
    private static final String FLOW = "metrics_test_flow";
    private static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();

    private final AtomicLong wallMillis = new AtomicLong(5_000);
    private final FlowQueue queue = new BoundedFlowQueue(10);
    private final FlowMetrics v1 = new FlowMetrics(queue, 2, () -> 0, wallMillis::get, FlowMetrics.newLagHistogram());
    private final CassandraMetrics metrics = new CassandraMetrics(CassandraMetrics.Registry.cassandra(), flow -> 42);

    private static ObjectName bean(String name) throws Exception
    {
        return new ObjectName("org.apache.cassandra.metrics:type=AsyncTriggers,scope=" + FLOW + ",name=" + name);
    }

    private static Set<ObjectName> beans() throws Exception
    {
        return JMX.queryNames(new ObjectName("org.apache.cassandra.metrics:type=AsyncTriggers,scope=" + FLOW + ",*"), null);
    }

    @AfterEach
    void releaseEverything()
    {
        for (String flow : metrics.flows())
            metrics.release(flow, v1);
    }

    @Test
    void shouldShowEveryMetricOfAFlowAsACassandraMetricsBean() throws Exception
    {
        queue.offer(FlowQueueContractTest.task(0));
        v1.taskStarted();
        v1.propagated(TimeUnit.MILLISECONDS.toMicros(4_000));
        v1.taskFinished(true);
        v1.deadLettered();

        metrics.register(FLOW, v1);

        assertEquals(CassandraMetrics.metricNames().size(), beans().size());
        assertEquals(1L, JMX.getAttribute(bean("PendingTasks"), "Value"));
        assertEquals(0L, JMX.getAttribute(bean("ActiveTasks"), "Value"));
        assertEquals(2, JMX.getAttribute(bean("Workers"), "Value"));
        assertEquals(10, JMX.getAttribute(bean("QueueCapacity"), "Value"));
        assertEquals(42L, JMX.getAttribute(bean("Backlog"), "Value"));
        assertEquals(0, JMX.getAttribute(bean("Paused"), "Value"));
        assertEquals(1L, JMX.getAttribute(bean("CompletedTasks"), "Count"));
        assertEquals(1L, JMX.getAttribute(bean("DeadLetteredTasks"), "Count"));
        assertEquals(0L, JMX.getAttribute(bean("SpilledTasks"), "Count"));
        assertEquals(1L, JMX.getAttribute(bean("PropagationLagMillis"), "Count"));
        double median = (Double) JMX.getAttribute(bean("PropagationLagMillis"), "50thPercentile");
        assertTrue(median >= 1_000 && median < 1_300, "1 s lag, within a bucket of Cassandra's reservoir: " + median);
    }

    @Test
    void shouldReplaceTheNamesOfARedeployedFlowAndRemoveThemWithTheLastVersion() throws Exception
    {
        metrics.register(FLOW, v1);
        FlowMetrics v2 = new FlowMetrics(new BoundedFlowQueue(7), 3, () -> 0, wallMillis::get, v1.propagationLag());
        v2.continueFrom(v1);
        v1.taskStarted();
        v1.taskFinished(true);

        metrics.register(FLOW, v2);                 // no duplicate: the names now read the new version
        assertEquals(CassandraMetrics.metricNames().size(), beans().size());
        assertEquals(3, JMX.getAttribute(bean("Workers"), "Value"));
        assertEquals(1L, JMX.getAttribute(bean("CompletedTasks"), "Count"), "counts go on across the redeploy");

        metrics.release(FLOW, v1);                  // the old version stops after the new one took the names
        assertEquals(3, JMX.getAttribute(bean("Workers"), "Value"));

        metrics.release(FLOW, v2);
        assertEquals(Set.of(), beans());
        assertFalse(org.apache.cassandra.metrics.CassandraMetricsRegistry.Metrics.getNames()
                    .contains(CassandraMetrics.nameOf(FLOW, "PendingTasks").getMetricName()));
    }

    @Test
    void shouldMeasureThePropagationLagFromTheSourceWritesTimestamp()
    {
        Histogram lag = v1.propagationLag();
        v1.propagated(TimeUnit.MILLISECONDS.toMicros(4_750));        // written 250 ms ago
        v1.propagated(TimeUnit.MILLISECONDS.toMicros(9_000));        // a client clock ahead of ours: no lag, not negative
        assertEquals(2, lag.getCount());
        assertEquals(0, lag.getSnapshot().getMin());
        assertTrue(lag.getSnapshot().getMax() >= 250 && lag.getSnapshot().getMax() < 300, "" + lag.getSnapshot().getMax());
    }

    @Test
    void shouldNotLetAnyoneCountTwice()
    {
        CassandraMetrics.ReadThroughCounter completed = new CassandraMetrics.ReadThroughCounter(v1::getCompletedTasks);
        assertThrows(UnsupportedOperationException.class, completed::inc);
    }
}
