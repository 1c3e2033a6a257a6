package org.asynctriggers.metrics;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.Metric;
import com.codahale.metrics.MetricRegistry;
import org.apache.cassandra.metrics.CassandraMetricsRegistry;
import org.apache.cassandra.metrics.DefaultNameFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Each flow's figures in Cassandra's own metrics registry, where operators already look: JMX beans
 * {@code org.apache.cassandra.metrics:type=AsyncTriggers,scope=<flow>,name=<Metric>} beside Cassandra's
 * {@code type=ThreadPools}, which the JMX exporters people run pick up. They read through the flow's
 * {@link FlowMetrics} (nothing is counted twice), so the counts go on across a redeploy like the MBean's.
 *
 * <p>One set of names per flow: {@link #register} replaces whatever a flow's name holds (Cassandra's registry would
 * silently keep the old metric under a duplicate name), and {@link #release} removes a version's names only while
 * they are still that version's. Never throws: registration runs on the control thread.
 */
public final class CassandraMetrics
{
    /** the {@code type} key of our beans, beside Cassandra's {@code ThreadPools}, {@code Table}, ... */
    public static final String TYPE = "AsyncTriggers";

    /** gauges: what a flow holds now */
    public static final String PENDING_TASKS = "PendingTasks";
    public static final String ACTIVE_TASKS = "ActiveTasks";
    public static final String OLDEST_PENDING_TASK_AGE = "OldestPendingTaskAgeMillis";
    public static final String WORKERS = "Workers";
    public static final String QUEUE_CAPACITY = "QueueCapacity";
    public static final String BACKLOG = "Backlog";
    /** 1 while the flow is paused on this node (its backlog and lag then grow by design), else 0 */
    public static final String PAUSED = "Paused";
    /** counters: totals since the node started (or since the flow was first applied on it) */
    public static final String COMPLETED_TASKS = "CompletedTasks";
    public static final String FAILED_TASKS = "FailedTasks";
    public static final String RETRIED_TASKS = "RetriedTasks";
    public static final String DEAD_LETTERED_TASKS = "DeadLetteredTasks";
    public static final String SPILLED_TASKS = "SpilledTasks";
    public static final String DISCARDED_TASKS = "DiscardedTasks";
    public static final String RECOVERED_TASKS = "RecoveredTasks";
    /** histogram, milliseconds: from the source write's timestamp to the task's completion */
    public static final String PROPAGATION_LAG = "PropagationLagMillis";

    /** Where metrics go: Cassandra's registry in a node, a plain one in tests. */
    public interface Registry
    {
        void register(CassandraMetricsRegistry.MetricName name, Metric metric);

        void remove(CassandraMetricsRegistry.MetricName name);

        /** Cassandra's registry, which also registers each metric's JMX bean. */
        static Registry cassandra()
        {
            return new Registry()
            {
                @Override
                public void register(CassandraMetricsRegistry.MetricName name, Metric metric)
                {
                    CassandraMetricsRegistry.Metrics.register(name, metric);
                }

                @Override
                public void remove(CassandraMetricsRegistry.MetricName name)
                {
                    CassandraMetricsRegistry.Metrics.remove(name);
                }
            };
        }

        /** A plain Dropwizard registry, keyed by the metrics' dotted names (no JMX). */
        static Registry plain(MetricRegistry registry)
        {
            return new Registry()
            {
                @Override
                public void register(CassandraMetricsRegistry.MetricName name, Metric metric)
                {
                    registry.register(name.getMetricName(), metric);
                }

                @Override
                public void remove(CassandraMetricsRegistry.MetricName name)
                {
                    registry.remove(name.getMetricName());
                }
            };
        }
    }

    private static final Logger logger = LoggerFactory.getLogger(CassandraMetrics.class);

    private final Registry registry;
    /** live backup entries of a flow on this node, at the last complete scan */
    private final ToLongFunction<String> backlog;
    /** flow name to the version whose metrics its names hold now */
    private final Map<String, FlowMetrics> owners = new LinkedHashMap<>();

    public CassandraMetrics(Registry registry, ToLongFunction<String> backlog)
    {
        this.registry = registry;
        this.backlog = backlog;
    }

    public static CassandraMetricsRegistry.MetricName nameOf(String flow, String metric)
    {
        return DefaultNameFactory.createMetricName(TYPE, metric, flow);
    }

    /** Every metric name a flow has, in registration order. */
    public static List<String> metricNames()
    {
        return List.of(PENDING_TASKS, ACTIVE_TASKS, OLDEST_PENDING_TASK_AGE, WORKERS, QUEUE_CAPACITY, BACKLOG, PAUSED,
                       COMPLETED_TASKS, FAILED_TASKS, RETRIED_TASKS, DEAD_LETTERED_TASKS, SPILLED_TASKS,
                       DISCARDED_TASKS, RECOVERED_TASKS, PROPAGATION_LAG);
    }

    /** The flow's names now show this version's metrics (a redeploy's new version replaces the old one's). */
    public synchronized void register(String flow, FlowMetrics m)
    {
        removeAll(flow);
        Map<String, Metric> metrics = metricsOf(flow, m);
        List<String> done = new ArrayList<>();
        try
        {
            for (Map.Entry<String, Metric> metric : metrics.entrySet())
            {
                registry.register(nameOf(flow, metric.getKey()), metric.getValue());
                done.add(metric.getKey());
            }
            owners.put(flow, m);
        }
        catch (RuntimeException e)
        {
            logger.warn("Flow '{}': its metrics are not in Cassandra's registry: {}", flow, e.toString());
            for (String metric : done)
                remove(flow, metric);
        }
    }

    /** Removes the flow's names if they still show this version (a newer version may have taken them). */
    public synchronized void release(String flow, FlowMetrics m)
    {
        if (owners.get(flow) != m)
            return;
        removeAll(flow);
    }

    /** flows whose metrics are registered now */
    public synchronized List<String> flows()
    {
        return Collections.unmodifiableList(new ArrayList<>(owners.keySet()));
    }

    private void removeAll(String flow)
    {
        if (owners.remove(flow) == null)
            return;
        for (String metric : metricNames())
            remove(flow, metric);
    }

    private void remove(String flow, String metric)
    {
        try
        {
            registry.remove(nameOf(flow, metric));
        }
        catch (RuntimeException e)
        {
            logger.debug("Flow '{}': could not remove metric {}: {}", flow, metric, e.toString());
        }
    }

    private Map<String, Metric> metricsOf(String flow, FlowMetrics m)
    {
        Map<String, Metric> metrics = new LinkedHashMap<>();
        metrics.put(PENDING_TASKS, (Gauge<Long>) m::getPendingTasks);
        metrics.put(ACTIVE_TASKS, (Gauge<Long>) m::getActiveTasks);
        metrics.put(OLDEST_PENDING_TASK_AGE, (Gauge<Long>) m::getOldestPendingTaskAgeMillis);
        metrics.put(WORKERS, (Gauge<Integer>) m::getMaxPoolSize);
        metrics.put(QUEUE_CAPACITY, (Gauge<Integer>) m::getQueueCapacity);
        metrics.put(BACKLOG, (Gauge<Long>) () -> backlogOf(flow));
        metrics.put(PAUSED, (Gauge<Integer>) () -> m.isPaused() ? 1 : 0);
        metrics.put(COMPLETED_TASKS, new ReadThroughCounter(m::getCompletedTasks));
        metrics.put(FAILED_TASKS, new ReadThroughCounter(m::getFailedTasks));
        metrics.put(RETRIED_TASKS, new ReadThroughCounter(m::getRetriedTasks));
        metrics.put(DEAD_LETTERED_TASKS, new ReadThroughCounter(m::getDeadLetteredTasks));
        metrics.put(SPILLED_TASKS, new ReadThroughCounter(m::getSpilledTasks));
        metrics.put(DISCARDED_TASKS, new ReadThroughCounter(m::getDiscardedTasks));
        metrics.put(RECOVERED_TASKS, new ReadThroughCounter(m::getRecoveredTasks));
        metrics.put(PROPAGATION_LAG, m.propagationLag());
        return metrics;
    }

    private long backlogOf(String flow)
    {
        try
        {
            return backlog.applyAsLong(flow);
        }
        catch (RuntimeException e)
        {
            return 0;
        }
    }

    /**
     * A Dropwizard counter (a {@code Count} attribute over JMX, a counter to exporters) whose count is one of
     * {@link FlowMetrics}' totals: the flow counts once, in one place.
     */
    static final class ReadThroughCounter extends Counter
    {
        private final LongSupplier count;

        ReadThroughCounter(LongSupplier count)
        {
            this.count = count;
        }

        @Override
        public long getCount()
        {
            return count.getAsLong();
        }

        @Override
        public void inc(long n)
        {
            throw new UnsupportedOperationException("counted by the flow's FlowMetrics");
        }

        @Override
        public void dec(long n)
        {
            throw new UnsupportedOperationException("counted by the flow's FlowMetrics");
        }
    }
}
