package org.asynctriggers;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import javax.management.InstanceNotFoundException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.utils.FBUtilities;
import org.asynctriggers.api.FlowHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything the plugin runs on one node, one instance per class loader: the flows (queue, pool, executor, MBean
 * each), the config poller and the status reporter on one control thread.
 *
 * <p>{@code nodetool reloadtriggers} creates a new class loader and drops the old trigger instances without a close
 * hook. The new runtime therefore, on its control thread: (1) reads the flows and starts its own pools, so writes
 * routed to the new trigger class are queued at once; (2) finds the previous runtime's MBean and invokes its
 * {@code shutdown} through JMX, which closes its queues, drains them, joins its threads and unregisters its MBeans;
 * (3) registers its own MBeans under the now free names. A node ends with one worker pool per flow.
 */
public final class TriggerRuntime implements TriggerRuntimeMBean, FlowRegistry
{
    private static final Logger logger = LoggerFactory.getLogger(TriggerRuntime.class);

    public static final ObjectName NAME = objectName("org.asynctriggers:type=Runtime");
    static final long POLL_MILLIS = 2_000;
    static final int FANOUT_WRITERS = 32;
    static final long DRAIN_MILLIS = 30_000;
    static final String SPILL_DIRECTORY = "async_triggers_spill";
    static final long READY_WAIT_MILLIS = 10_000;

    private static volatile TriggerRuntime instance;

    private final String id = UUID.randomUUID().toString();
    private final CqlGateway gateway;
    private final MBeanServer mbeans;
    private final ThreadFactory threadFactory;
    /** Writes the rows of fan-out pages in parallel, for every flow of this node (FlowExecutor). */
    private final ExecutorService fanoutWriters;
    private final LongSupplier nanoClock;
    /** flow name to its spill directory (docs/design.md, "Full queues") */
    private final Function<String, java.nio.file.Path> spillDirs;
    private final RetryScheduler.Factory retrySchedulers;
    private final RetryPolicy.Jitter jitter;
    private final DeadLetters deadLetters;
    private final DeadLetterRetries deadLetterRetries;
    private final TaskProcessor.Sleeper sleeper;
    private final Function<FlowSpec, ColumnTypes> columnTypes;
    private final ClassLoader handlerLoader;
    private final long drainMillis;
    private final FlowConfigSource configSource;
    private final StatusReporter statusReporter;
    private final CountDownLatch ready = new CountDownLatch(1);
    private static final long REFRESH_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long REFRESH_WAIT_MILLIS = 1_000;
    /** one config poll at a time: the control thread's and a write's refresh */
    private final java.util.concurrent.locks.ReentrantLock refreshLock = new java.util.concurrent.locks.ReentrantLock();
    /** table to the last time a write on it, watched by no flow, made us read the flows */
    private final Map<String, Long> lastRefresh = new java.util.concurrent.ConcurrentHashMap<>();

    /** copy-on-write snapshots: augment reads them without locking */
    private volatile Map<String, Flow> flowsByName = Collections.emptyMap();
    private volatile Map<String, List<Flow>> flowsByTable = Collections.emptyMap();
    private volatile boolean shutdown;
    private ScheduledExecutorService control;
    private boolean tookOver;
    private final Supplier<String> nodeName;
    /** the flows' tasks with a backup entry, queued on this node and not done yet: a takeover scan skips them */
    private final java.util.Set<UUID> inFlight = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** the backup map a flow writes to, null for none; production: the companion table when it exists */
    private volatile Function<FlowSpec, BackupMap> backupMaps = spec -> null;
    /** null in unit tests (no gossip) */
    private volatile Takeover takeover;
    private long cycles;

    TriggerRuntime(CqlGateway gateway, MBeanServer mbeans, ThreadFactory threadFactory, LongSupplier nanoClock,
                   Function<String, java.nio.file.Path> spillDirs, RetryScheduler.Factory retrySchedulers, RetryPolicy.Jitter jitter,
                   TaskProcessor.Sleeper sleeper, Function<FlowSpec, ColumnTypes> columnTypes, ClassLoader handlerLoader,
                   Supplier<String> nodeName, LongSupplier wallClockMillis, long drainMillis)
    {
        this.gateway = gateway;
        this.mbeans = mbeans;
        this.threadFactory = threadFactory;
        this.fanoutWriters = fanoutWriters(threadFactory);
        this.nanoClock = nanoClock;
        this.spillDirs = spillDirs;
        this.retrySchedulers = retrySchedulers;
        this.jitter = jitter;
        this.sleeper = sleeper;
        this.columnTypes = columnTypes;
        this.handlerLoader = handlerLoader;
        this.drainMillis = drainMillis;
        this.nodeName = nodeName;
        this.configSource = new FlowConfigSource(gateway, this);
        this.statusReporter = new StatusReporter(gateway, () -> flowsByName.values(), nodeName, wallClockMillis);
        this.deadLetters = new DeadLetters(gateway, nodeName, wallClockMillis);
        this.deadLetterRetries = new DeadLetterRetries(gateway, nodeName, name -> flowsByName.get(name), nanoClock,
                                                       wallClockMillis);
    }

    /** The runtime of this class loader, created and started on first use (the first augment after a (re)load). */
    public static TriggerRuntime get()
    {
        TriggerRuntime current = instance;
        return current != null ? current : create();
    }

    private static synchronized TriggerRuntime create()
    {
        if (instance == null)
        {
            TriggerRuntime runtime =
                new TriggerRuntime(new QueryProcessorGateway(), ManagementFactory.getPlatformMBeanServer(), Thread::new,
                                   System::nanoTime, TriggerRuntime::spillDir,
                                   RetryScheduler.onThreads(Thread::new), RetryPolicy.Jitter.RANDOM, Thread::sleep,
                                   spec -> ColumnTypes.fromSchema(spec.source.keyspace, spec.source.table),
                                   TriggerRuntime.class.getClassLoader(),
                                   () -> FBUtilities.getBroadcastAddressAndPort().getHostAddress(false),
                                   System::currentTimeMillis, DRAIN_MILLIS);
            runtime.backupMaps = TriggerRuntime::companionOf;
            runtime.takeover = new Takeover(runtime.takeoverView(), Thread::new);
            runtime.start();
            instance = runtime;
        }
        return instance;
    }

    /** The flow's backup map when it keeps one and its companion table exists (deployed by a ctl that makes it). */
    private static BackupMap companionOf(FlowSpec spec)
    {
        if (!spec.backup.enabled)
            return null;
        if (org.apache.cassandra.schema.Schema.instance.getTableMetadata(spec.source.keyspace, BackupMap.companionOf(spec.source.table)) == null)
        {
            logger.warn("Flow '{}': table {}.{} is missing, so the flow's tasks have no replica backup (redeploy the flow "
                        + "with ctl trigger deploy to create it)", spec.name, spec.source.keyspace, BackupMap.companionOf(spec.source.table));
            return null;
        }
        return new BackupMap(spec.source.keyspace, spec.source.table, spec.source.partitionKey.size(), new QueryProcessorGateway());
    }

    /** {@code <first data directory>/async_triggers_spill/<flow>} */
    static java.nio.file.Path spillDir(String flow)
    {
        java.nio.file.Path root = java.nio.file.Paths.get(DatabaseDescriptor.getAllDataFileLocations()[0], SPILL_DIRECTORY);
        return SpillStore.dirOf(root, flow);
    }

    private static ObjectName objectName(String name)
    {
        try
        {
            return new ObjectName(name);
        }
        catch (MalformedObjectNameException e)
        {
            throw new IllegalArgumentException(e);
        }
    }

    /** Starts the control thread: first poll, takeover of a previous runtime, then polling, status and dead-letter retry requests every 2 s. */
    synchronized void start()
    {
        AtomicInteger n = new AtomicInteger();
        control = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = threadFactory.newThread(runnable);
            thread.setName("async-trigger-control-" + n.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        control.execute(this::firstCycle);
        control.scheduleWithFixedDelay(this::cycle, POLL_MILLIS, POLL_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** The steps of the control thread, callable directly by tests. */
    void firstCycle()
    {
        try
        {
            pollFlows();
        }
        finally
        {
            ready.countDown();
        }
        takeOver();
        registerFlowMBeans();
        Takeover t = takeover;
        if (t != null && !shutdown)
            t.start();
    }

    void cycle()
    {
        if (shutdown)
            return;
        try
        {
            pollFlows();
            registerFlowMBeans();
            statusReporter.report();
            deadLetterRetries.poll();
            Takeover t = takeover;
            if (t != null && ++cycles % (Takeover.SAFETY_NET_PERIOD_MILLIS / POLL_MILLIS) == 0)
                t.safetyNet();
        }
        catch (RuntimeException e)
        {
            logger.error("Unexpected error in the async trigger control thread", e);
        }
    }

    private void pollFlows()
    {
        refreshLock.lock();
        try
        {
            configSource.poll();
        }
        finally
        {
            refreshLock.unlock();
        }
    }

    /** Waits (once, after a load) until the flows were read, so no write slips through an empty runtime. */
    boolean awaitReady(long millis)
    {
        try
        {
            return ready.await(millis, TimeUnit.MILLISECONDS);
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    synchronized void takeOver()
    {
        if (tookOver || shutdown)
            return;
        tookOver = true;
        try
        {
            if (mbeans.isRegistered(NAME))
            {
                Object previous = mbeans.getAttribute(NAME, "Id");
                logger.info("Async trigger runtime {} taking over from runtime {} (reloadtriggers)", id, previous);
                mbeans.invoke(NAME, "shutdown", new Object[0], new String[0]);
            }
        }
        catch (InstanceNotFoundException e)
        {
            // it went away on its own between the two calls
        }
        catch (Exception e)
        {
            logger.error("Could not shut the previous async trigger runtime down; its threads may linger", e);
        }
        try
        {
            if (mbeans.isRegistered(NAME))
                mbeans.unregisterMBean(NAME);
            mbeans.registerMBean(this, NAME);
        }
        catch (Exception e)
        {
            logger.error("Could not register {}", NAME, e);
        }
    }

    private void registerFlowMBeans()
    {
        if (!tookOver)
            return;
        for (Flow flow : flowsByName.values())
        {
            if (flow.registered)
                continue;
            try
            {
                if (!mbeans.isRegistered(flow.objectName))
                {
                    mbeans.registerMBean(flow.metrics, flow.objectName);
                    flow.registered = true;
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

    // ---- FlowRegistry ----

    @Override
    public Map<String, Long> appliedVersions()
    {
        Map<String, Long> versions = new HashMap<>();
        flowsByName.forEach((name, flow) -> versions.put(name, flow.spec.version));
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
            FlowHandler handler = spec.handler == null ? null : instantiateHandler(spec);
            FlowExecutor executor = new FlowExecutor(spec, gateway, handler, columnTypes.apply(spec), fanoutWriters);
            started = new Flow(spec, executor, spillDirs.apply(spec.name), retrySchedulers, jitter, deadLetters, sleeper,
                               threadFactory, nanoClock);
            started.backupMap = backupMaps.apply(spec);
            if (started.backupMap != null)
                started.backups(backupsOf(started.backupMap));
            started.start();
        }
        Flow previous = swap(spec.name, started);
        if (previous != null)
        {
            started.metrics.continueFrom(previous.metrics);
            retire(previous);
            started.metrics.absorbPrevious();
        }
        registerFlowMBeans();
    }

    @Override
    public void remove(String name)
    {
        Flow previous = swap(name, null);
        if (previous != null)
            retire(previous);
    }

    private synchronized Flow swap(String name, Flow replacement)
    {
        Map<String, Flow> byName = new HashMap<>(flowsByName);
        Flow previous = replacement == null ? byName.remove(name) : byName.put(name, replacement);
        Map<String, List<Flow>> byTable = new HashMap<>();
        for (Flow flow : byName.values())
            byTable.computeIfAbsent(tableKey(flow.spec.source.keyspace, flow.spec.source.table), k -> new ArrayList<>()).add(flow);
        flowsByName = Collections.unmodifiableMap(byName);
        flowsByTable = Collections.unmodifiableMap(byTable);
        return previous;
    }

    /** Stops a replaced or removed flow version: its queued tasks still run, with the version they were made for. */
    private void retire(Flow flow)
    {
        flow.stop(drainMillis);
        unregister(flow);
    }

    private Backups backupsOf(BackupMap map)
    {
        return new Backups()
        {
            @Override
            public boolean isStored(Task task, boolean everywhere)
            {
                return map.isStored(task, everywhere ? org.apache.cassandra.db.ConsistencyLevel.ALL
                                                     : org.apache.cassandra.db.ConsistencyLevel.ONE);
            }

            @Override
            public void recordResume(Task task, int target, java.nio.ByteBuffer paging)
            {
                map.recordResume(task, target, paging);
            }

            @Override
            public void completed(Task task)
            {
                inFlight.remove(task.backupId());
                map.complete(task);
            }

            @Override
            public void abandoned(Task task)
            {
                inFlight.remove(task.backupId());
            }
        };
    }

    /** What the takeover sees of this runtime. */
    private Takeover.Runtime takeoverView()
    {
        return new Takeover.Runtime()
        {
            @Override
            public Collection<FlowSpec> backedUpFlows()
            {
                List<FlowSpec> specs = new ArrayList<>();
                for (Flow flow : flowsByName.values())
                    if (flow.backupMap != null)
                        specs.add(flow.spec);
                return specs;
            }

            @Override
            public boolean requeue(Task task, String why)
            {
                Flow flow = flowsByName.get(task.flow());
                if (flow == null || flow.backupMap == null || !inFlight.add(task.backupId()))
                    return false;
                FullQueuePolicy.Outcome outcome;
                try
                {
                    outcome = flow.enqueue(task);
                }
                catch (RuntimeException e) // block policy: the queue stayed full
                {
                    inFlight.remove(task.backupId());
                    return false;
                }
                if (outcome == FullQueuePolicy.Outcome.CLOSED || outcome == FullQueuePolicy.Outcome.DISCARDED)
                {
                    inFlight.remove(task.backupId());
                    return false;
                }
                flow.metrics.taskRecovered(task.resumePaging() != null);
                return true;
            }
        };
    }

    private FlowHandler instantiateHandler(FlowSpec spec)
    {
        try
        {
            Class<?> type = Class.forName(spec.handler, true, handlerLoader);
            if (!FlowHandler.class.isAssignableFrom(type))
                throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " does not implement " + FlowHandler.class.getName());
            return (FlowHandler) type.getConstructor().newInstance();
        }
        catch (ClassNotFoundException e)
        {
            throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " is not on the trigger class path");
        }
        catch (ReflectiveOperationException e)
        {
            throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " cannot be instantiated: " + e);
        }
    }

    private static String tableKey(String keyspace, String table)
    {
        return keyspace + '.' + table;
    }

    // ---- the write path ----

    /** True when some flow watches the table; cheap, no allocation. */
    boolean watches(String keyspace, String table)
    {
        return flowsByTable.containsKey(tableKey(keyspace, table));
    }

    /**
     * Maps the update to tasks of every flow on its table and queues them. Does no I/O; throws only what the
     * full-queue policy throws.
     */
    /**
     * Queues the update's tasks and returns the mutation of their backup entries, to be applied with the update
     * (docs/design.md, "Replica backup maps"); empty when no task has one.
     */
    Collection<org.apache.cassandra.db.Mutation> augment(Partition update)
    {
        List<Task> backedUp = enqueue(update);
        if (backedUp.isEmpty())
            return Collections.emptyList();
        org.apache.cassandra.db.Mutation entries = BackupMap.entries(update, backedUp, nodeName.get(), BackupMap.nowMicros());
        return entries == null ? Collections.emptyList() : Collections.singletonList(entries);
    }

    /** @return the queued tasks that have a backup entry to write */
    List<Task> enqueue(Partition update)
    {
        if (ready.getCount() > 0 && !awaitReady(READY_WAIT_MILLIS))
            logger.warn("Async trigger flows not loaded after {} ms; writes are not being queued yet", READY_WAIT_MILLIS);
        String keyspace = update.metadata().keyspace, table = update.metadata().name;
        if (!watches(keyspace, table) && !(refreshFor(keyspace, table) && watches(keyspace, table)))
            return Collections.emptyList();
        return enqueue(keyspace, table, TaskExtractor.extract(update));
    }

    /**
     * A write reached our trigger on a table no applied flow watches: `ctl trigger deploy` writes the flow before it
     * creates the trigger, so the flow is there to read now rather than at the next poll. Reads it once on the
     * control thread (at most once a second per table, so a trigger left on a table whose flows were dropped costs
     * little) and waits a bounded time for it.
     * @return true when a refresh ran
     */
    private boolean refreshFor(String keyspace, String table)
    {
        if (shutdown)
            return false;
        // on the writing thread, not queued behind the control thread's work (retiring a flow waits for its drain);
        // writes racing the first one wait for its read rather than pass unqueued
        try
        {
            if (!refreshLock.tryLock(REFRESH_WAIT_MILLIS, TimeUnit.MILLISECONDS))
            {
                logger.warn("Could not refresh the async trigger flows for {}.{} within {} ms", keyspace, table, REFRESH_WAIT_MILLIS);
                return false;
            }
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return false;
        }
        try
        {
            if (watches(keyspace, table))
                return true; // another write's refresh, or the control thread, read it meanwhile
            long now = nanoClock.getAsLong();
            String key = tableKey(keyspace, table);
            Long last = lastRefresh.get(key);
            if (last != null && now - last < REFRESH_INTERVAL_NANOS)
                return false; // a trigger whose flows were all dropped: read at most once a second
            lastRefresh.put(key, now);
            return configSource.poll();
        }
        finally
        {
            refreshLock.unlock();
        }
    }

    /** The seam below the extraction: queues the changes for every flow on the table that handles their event. */
    List<Task> enqueue(String keyspace, String table, List<SourceChange> changes)
    {
        List<Flow> flows = flowsByTable.get(tableKey(keyspace, table));
        if (flows == null)
            return Collections.emptyList();
        List<Task> backedUp = new ArrayList<>(0);
        for (Flow flow : flows)
            for (SourceChange change : changes)
                if (flow.spec.handles(change.operation))
                    enqueue(flow, change, backedUp);
        return backedUp;
    }

    private void enqueue(Flow flow, SourceChange change, List<Task> backedUp)
    {
        if (offer(flow, change, backedUp) != FullQueuePolicy.Outcome.CLOSED)
            return;
        // the flow was replaced between the lookup and the offer: hand the change to the new version
        Flow current = flowsByName.get(flow.spec.name);
        if (current != null && current != flow && offer(current, change, backedUp) != FullQueuePolicy.Outcome.CLOSED)
            return;
        logger.warn("Flow '{}' is stopping ({}); task not queued: {}", flow.spec.name,
                    shutdown ? "runtime replaced by reloadtriggers" : "flow removed", change);
    }

    /** Queues the change's task; one that was queued (or spilled) and has a backup entry is added to {@code backedUp}. */
    private FullQueuePolicy.Outcome offer(Flow flow, SourceChange change, List<Task> backedUp)
    {
        Task task = Task.of(flow.spec, change, nanoClock.getAsLong());
        if (flow.backupMap != null)
        {
            task = task.withBackup(BackupMap.newId());
            inFlight.add(task.backupId());
        }
        FullQueuePolicy.Outcome outcome;
        try
        {
            outcome = flow.enqueue(task);
        }
        catch (RuntimeException e)
        {
            if (task.backupId() != null)
                inFlight.remove(task.backupId());
            throw e;
        }
        if (task.backupId() == null)
            return outcome;
        if (outcome == FullQueuePolicy.Outcome.CLOSED || outcome == FullQueuePolicy.Outcome.DISCARDED)
        {
            inFlight.remove(task.backupId());
        }
        else
        {
            backedUp.add(task);
            flow.metrics.backupEntriesWritten(1);
        }
        return outcome;
    }

    // ---- TriggerRuntimeMBean ----

    @Override
    public void shutdown()
    {
        ScheduledExecutorService toStop;
        synchronized (this)
        {
            if (shutdown)
                return;
            shutdown = true;
            toStop = control;
        }
        logger.info("Async trigger runtime {} shutting down", id);
        ready.countDown();
        Takeover t = takeover;
        if (t != null)
            t.stop();
        if (toStop != null)
        {
            toStop.shutdownNow();
            try
            {
                if (!toStop.awaitTermination(DRAIN_MILLIS, TimeUnit.MILLISECONDS))
                    logger.warn("Async trigger control thread did not stop");
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
        Collection<Flow> flows = new ArrayList<>(flowsByName.values());
        for (Flow flow : flows)
            flow.queue.close();
        for (Flow flow : flows)
            retire(flow);
        flowsByName = Collections.emptyMap();
        flowsByTable = Collections.emptyMap();
        try
        {
            if (mbeans.isRegistered(NAME) && id.equals(mbeans.getAttribute(NAME, "Id")))
                mbeans.unregisterMBean(NAME);
        }
        catch (Exception e)
        {
            logger.debug("Could not unregister {}: {}", NAME, e.getMessage());
        }
        fanoutWriters.shutdown();
        logger.info("Async trigger runtime {} stopped", id);
    }

    /** Threads that write fan-out rows: a page of {@code FANOUT_WRITERS} rows is written in about one round trip. */
    static ExecutorService fanoutWriters(ThreadFactory threadFactory)
    {
        AtomicInteger n = new AtomicInteger();
        return Executors.newFixedThreadPool(FANOUT_WRITERS, runnable -> {
            Thread thread = threadFactory.newThread(runnable);
            thread.setName("async-trigger-fanout-" + n.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
    }

    @Override
    public String[] getFlowNames()
    {
        return flowsByName.keySet().toArray(new String[0]);
    }

    @Override
    public boolean isReady()
    {
        return ready.getCount() == 0;
    }

    @Override
    public String getId()
    {
        return id;
    }

    boolean isShutdown()
    {
        return shutdown;
    }

    Collection<Flow> flows()
    {
        return flowsByName.values();
    }
}
