package org.asynctriggers.flows;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import javax.management.MBeanServer;

import org.asynctriggers.backup.HeldTasks;
import org.asynctriggers.metrics.CassandraMetrics;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.spec.FlowRegistry;
import org.asynctriggers.spec.FlowSpec;
import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.asynctriggers.capture.EntrySize;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The flow versions running on this node, by name and by source table: started, replaced and stopped as the flows
 * table says ({@link org.asynctriggers.spec.FlowConfigSource}), each with its MBean and its metrics in Cassandra's
 * registry. A replaced version drains before it stops; its queued tasks still run with the version they were made for.
 * A new version's counts and lag histogram go on from the version it replaces.
 * <p>
 * A flow is paused by name ({@code async_triggers.flows.paused}, {@code ctl trigger pause}), whatever its version: a
 * version applied while its name is paused starts paused, so a redeploy of a paused flow stays paused.
 */
public final class Flows implements FlowRegistry
{
    private static final Logger logger = LoggerFactory.getLogger(Flows.class);

    private final FlowFactory factory;
    private final MBeanServer mbeans;
    private final CassandraMetrics cassandraMetrics;
    private final long drainMillis;
    private final HeldTasks held;
    /** told of every version started, once it is in place, and of every flow resumed: its tasks may wait in the backup maps */
    private final Consumer<Flow> applied;
    private final LongSupplier wallClockMillis;
    /** the names of the paused flows, as the flows table says */
    private final Set<String> paused = ConcurrentHashMap.newKeySet();
    /** copy-on-write snapshots: the write path reads them without locking */
    private volatile Map<String, Flow> byName = Collections.emptyMap();
    private volatile Map<String, List<Flow>> byTable = Collections.emptyMap();
    private volatile boolean shutdown;

    public Flows(FlowFactory factory, MBeanServer mbeans, CassandraMetrics cassandraMetrics, long drainMillis,
                 HeldTasks held, Consumer<Flow> applied, LongSupplier wallClockMillis)
    {
        this.wallClockMillis = wallClockMillis;
        this.factory = factory;
        this.mbeans = mbeans;
        this.cassandraMetrics = cassandraMetrics;
        this.drainMillis = drainMillis;
        this.held = held;
        this.applied = applied;
    }

    public Flow get(String name)
    {
        return byName.get(name);
    }

    public String[] names()
    {
        return byName.keySet().toArray(new String[0]);
    }

    /** flow name to its metrics, for the status rows */
    public Map<String, FlowMetrics> metrics()
    {
        Map<String, FlowMetrics> metrics = new LinkedHashMap<>();
        byName.forEach((name, flow) -> metrics.put(name, flow.metrics));
        return metrics;
    }

    /** The specs of the flows that keep backup entries. */
    public Collection<FlowSpec> backedUp()
    {
        List<FlowSpec> specs = new ArrayList<>();
        for (Flow flow : byName.values())
            if (flow.backupTable != null)
                specs.add(flow.spec);
        return specs;
    }

    /** True when some applied flow watches the table; cheap, no allocation. */
    public boolean watches(String keyspace, String table)
    {
        return byTable.containsKey(tableKey(keyspace, table));
    }

    /**
     * On the coordinator, before the write is sent to any replica (the trigger): holds it while the queue of a flow on
     * the table with the {@code block} policy is full. Throws only the policy's OVERLOADED.
     */
    public void admit(String keyspace, String table)
    {
        List<Flow> flows = byTable.get(tableKey(keyspace, table));
        if (flows == null)
            return;
        for (Flow flow : flows)
            if (!flow.isPaused()) // a paused flow's tasks wait in the backup maps: its queue never holds a write back
                flow.policy.admit(flow.spec.name, flow.queue, flow.metrics);
    }

    /**
     * On the coordinator (the trigger): refuses a write whose backup entries would not fit in one commit log record
     * ({@link EntrySize}), naming the flow whose entries take the most. Throws InvalidRequestException.
     */
    public void checkEntrySize(Partition update, long limit)
    {
        List<Flow> flows = byTable.get(tableKey(update.metadata().keyspace, update.metadata().name));
        if (flows == null)
            return;
        long total = 0;
        String largest = null;
        long largestBytes = -1;
        for (Flow flow : flows)
        {
            if (!flow.spec.backup.enabled)
                continue;
            long bytes = EntrySize.of(update, List.of(new EntrySize.FlowColumns(flow.spec.name, flow.spec.capturedColumns())));
            total += bytes;
            if (bytes > largestBytes)
            {
                largestBytes = bytes;
                largest = flow.spec.name;
            }
        }
        if (total > limit)
            throw new InvalidRequestException(EntrySize.refusal(update.metadata().keyspace, update.metadata().name, largest, total, limit));
    }

    /** Nothing queued, spilled, waiting for a retry or running here, in any flow that is not paused. */
    public boolean idle()
    {
        for (Flow flow : byName.values())
            if (!flow.isPaused() && flow.metrics.getPendingTasks() + flow.metrics.getActiveTasks() > 0)
                return false;
        return true;
    }

    boolean isShutdown()
    {
        return shutdown;
    }

    @Override
    public Map<String, Long> appliedVersions()
    {
        Map<String, Long> versions = new HashMap<>();
        byName.forEach((name, flow) -> versions.put(name, flow.spec.version));
        return versions;
    }

    @Override
    public void apply(FlowSpec spec)
    {
        Flow started;
        synchronized (this)
        {
            if (shutdown)
                return;
            Flow current = byName.get(spec.name);
            started = factory.start(spec, current == null ? null : current.metrics, paused.contains(spec.name));
        }
        Flow previous = swap(spec.name, started);
        if (previous == null)
            started.markFirstVersionHere();
        else
        {
            started.metrics.continueFrom(previous.metrics);
            retire(previous);
            started.metrics.absorbPrevious();
        }
        registerMBeans();
        applied.accept(started);
    }

    @Override
    public void paused(String name, boolean pause)
    {
        boolean changed = pause ? paused.add(name) : paused.remove(name);
        Flow flow = byName.get(name);
        if (!changed || flow == null)
            return;
        if (pause)
        {
            flow.pause();
            if (flow.backupTable == null)
                logger.warn("Flow '{}' paused, but it keeps no backup entries: its new tasks wait in its queue (and spill) "
                            + "on this node, and are lost if the node stops", name);
            logger.info("Flow '{}' paused: its tasks wait in the backup maps until it is resumed", name);
        }
        else
        {
            flow.resume(wallClockMillis.getAsLong());
            logger.info("Flow '{}' resumed", name);
            applied.accept(flow);
        }
    }

    /** Whether the flow of this name is paused (false for one not applied here). */
    public boolean isPaused(String name)
    {
        Flow flow = byName.get(name);
        return flow != null && flow.isPaused();
    }

    @Override
    public void remove(String name)
    {
        paused.remove(name);
        Flow previous = swap(name, null);
        if (previous != null)
            retire(previous);
    }

    private synchronized Flow swap(String name, Flow replacement)
    {
        Map<String, Flow> names = new HashMap<>(byName);
        Flow previous = replacement == null ? names.remove(name) : names.put(name, replacement);
        Map<String, List<Flow>> tables = new HashMap<>();
        for (Flow flow : names.values())
            tables.computeIfAbsent(tableKey(flow.spec.source.keyspace, flow.spec.source.table), k -> new ArrayList<>()).add(flow);
        byName = Collections.unmodifiableMap(names);
        byTable = Collections.unmodifiableMap(tables);
        return previous;
    }

    /** Stops a replaced or removed flow version: its queued tasks still run, with the version they were made for. */
    private void retire(Flow flow)
    {
        flow.stop(drainMillis);
        unregister(flow);
        held.forget(flow);
    }

    /**
     * Registers the MBean of every flow that has none yet (a name still held by a retiring version waits), and with
     * it the flow's metrics in Cassandra's registry.
     */
    public void registerMBeans()
    {
        for (Flow flow : byName.values())
        {
            if (flow.registered)
                continue;
            try
            {
                if (!mbeans.isRegistered(flow.objectName))
                {
                    mbeans.registerMBean(flow.metrics, flow.objectName);
                    flow.registered = true;
                    cassandraMetrics.register(flow.spec.name, flow.metrics);
                }
            }
            catch (Exception e)
            {
                logger.debug("Could not register {} yet: {}", flow.objectName, e.getMessage());
            }
        }
    }

    private void unregister(Flow flow)
    {
        cassandraMetrics.release(flow.spec.name, flow.metrics);
        if (!flow.registered)
            return;
        try
        {
            mbeans.unregisterMBean(flow.objectName);
        }
        catch (Exception e)
        {
            logger.debug("Could not unregister {}: {}", flow.objectName, e.getMessage());
        }
        flow.registered = false;
    }

    /** No flow starts from now on. @return false when shutting down already */
    public synchronized boolean beginShutdown()
    {
        if (shutdown)
            return false;
        shutdown = true;
        return true;
    }

    /** Closes every queue, then stops every flow, and the fan-out writers they shared. */
    public void stopAll()
    {
        Collection<Flow> flows = new ArrayList<>(byName.values());
        for (Flow flow : flows)
            flow.queue.close();
        for (Flow flow : flows)
            retire(flow);
        byName = Collections.emptyMap();
        byTable = Collections.emptyMap();
        factory.shutdown();
    }

    private static String tableKey(String keyspace, String table)
    {
        return keyspace + '.' + table;
    }
}
