package org.asynctriggers;

import org.asynctriggers.backup.BackupMap;
import org.asynctriggers.backup.Backups;
import org.asynctriggers.backup.ExecutorChoice;
import org.asynctriggers.backup.PeerStatus;
import org.asynctriggers.backup.Takeover;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.QueryProcessorGateway;
import org.asynctriggers.execute.FlowExecutor;
import org.asynctriggers.execute.HandlerClassLoader;
import org.asynctriggers.metrics.StatusReporter;
import org.asynctriggers.queue.FullQueuePolicy;
import org.asynctriggers.queue.SpillStore;
import org.asynctriggers.spec.FlowConfigSource;
import org.asynctriggers.spec.FlowRegistry;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecException;
import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.task.Task;
import org.asynctriggers.work.DeadLetterRetries;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.FBUtilities;
import org.asynctriggers.api.FlowHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything the plugin runs on one node, one instance per JVM (the plugin is on the node's class path): the flows
 * (queue, pool, executor, MBean each), the config poller, the status reporter and the scans of the backup maps.
 *
 * <p>Tasks arrive from the capture index on this node ({@link #captured}, on the write path: it never waits and never
 * throws): those of rows this node executes are queued, the others only sit in the backup maps until a scan finds
 * that this node executes them now. The trigger on the coordinator calls {@link #admit} before a write is sent.
 */
public final class TriggerRuntime implements TriggerRuntimeMBean, FlowRegistry
{
    private static final Logger logger = LoggerFactory.getLogger(TriggerRuntime.class);

    public static final ObjectName NAME = objectName("org.asynctriggers:type=Runtime");
    static final long POLL_MILLIS = 2_000;
    static final int FANOUT_WRITERS = 32;
    static final long DRAIN_MILLIS = 30_000;
    static final String SPILL_DIRECTORY = "async_triggers_spill";
    /** tasks captured for flows not applied here yet, kept in memory until they are (their entries hold them too) */
    static final int PARK_LIMIT = 100_000;
    /** a finished task is remembered this long, so a scan that read its entry just before the delete does not rerun it */
    static final long RECENTLY_DONE_MILLIS = 60_000;
    /** a scan after a burst of captures waits for this much quiet */
    static final long QUIET_MILLIS = 1_000;
    /** while some entry is left, scans repeat this often */
    static final long BACKLOG_RESCAN_MILLIS = 5_000;
    /**
     * An entry is adopted from an idle executor that scanned at least this long after the entry was captured here
     * (the margin covers clock skew and a completion on its way to this replica)
     */
    static final long ORPHAN_GRACE_MILLIS = 10_000;
    /** a peer's status report older than this says nothing about it now */
    static final long PEER_REPORT_MAX_AGE_MILLIS = 10_000;

    private static volatile TriggerRuntime instance;

    private final String id = UUID.randomUUID().toString();
    private final CqlGateway gateway;
    private final MBeanServer mbeans;
    private final ThreadFactory threadFactory;
    /** Writes the rows of fan-out pages in parallel, for every flow of this node (FlowExecutor). */
    private final ExecutorService fanoutWriters;
    private final LongSupplier nanoClock;
    private final LongSupplier wallClockMillis;
    private final Function<String, java.nio.file.Path> spillDirs;
    private final RetryScheduler.Factory retrySchedulers;
    private final RetryPolicy.Jitter jitter;
    private final DeadLetters deadLetters;
    private final DeadLetterRetries deadLetterRetries;
    private final TaskProcessor.Sleeper sleeper;
    private final Function<FlowSpec, ColumnTypes> columnTypes;
    private final Supplier<ClassLoader> handlerLoader;
    private final long drainMillis;
    private final FlowConfigSource configSource;
    private final StatusReporter statusReporter;
    private final ExecutorChoice executors;
    private final BooleanSupplier nodeReady;
    /** the backup map a flow completes entries in; null for none */
    private final Function<FlowSpec, BackupMap> backupMaps;
    /** null when the runtime scans no backup maps (unit tests without Cassandra) */
    private final Takeover takeover;
    private final CountDownLatch ready = new CountDownLatch(1);

    /** copy-on-write snapshots: the write path reads them without locking */
    private volatile Map<String, Flow> flowsByName = Collections.emptyMap();
    private volatile Map<String, List<Flow>> flowsByTable = Collections.emptyMap();
    private volatile boolean shutdown;
    private ScheduledExecutorService control;
    private long cycles;

    /**
     * ids of the tasks queued, spilled or running here, to the flow version that holds them: a capture or a scan skips
     * them; a retired version's are forgotten, so a scan finds any it left behind
     */
    private final Map<UUID, Flow> inFlight = new ConcurrentHashMap<>();
    /** flows whose tasks found the park full (warned once) */
    private final Set<String> parkFullWarned = ConcurrentHashMap.newKeySet();
    /** id to the wall-clock millis it finished at (see RECENTLY_DONE_MILLIS) */
    private final Map<UUID, Long> recentlyDone = new ConcurrentHashMap<>();
    /** flow name to the tasks captured for it before it was applied here */
    private final Map<String, Queue<Task>> parked = new ConcurrentHashMap<>();
    private final AtomicInteger parkedCount = new AtomicInteger();
    private volatile long lastCaptureMillis = Long.MIN_VALUE;
    /** flow name to its live entries on this node, as the last complete scan found them */
    private volatile Map<String, Long> backlog = Collections.emptyMap();
    private volatile long backlogScannedMillis = Long.MIN_VALUE;
    /** the other nodes' status rows as last read, for orphan adoption */
    private final PeerStatus peers;

    private TriggerRuntime(Builder b)
    {
        this.gateway = b.gateway;
        this.mbeans = b.mbeans;
        this.threadFactory = b.threadFactory;
        this.fanoutWriters = fanoutWriters(threadFactory);
        this.nanoClock = b.nanoClock;
        this.wallClockMillis = b.wallClockMillis;
        this.spillDirs = b.spillDirs;
        this.retrySchedulers = b.retrySchedulers;
        this.jitter = b.jitter;
        this.sleeper = b.sleeper;
        this.columnTypes = b.columnTypes;
        this.handlerLoader = b.handlerLoader;
        this.drainMillis = b.drainMillis;
        this.executors = b.executors;
        this.nodeReady = b.nodeReady;
        this.backupMaps = b.backupMaps;
        this.configSource = new FlowConfigSource(gateway, this);
        this.statusReporter = new StatusReporter(gateway, () -> flowsByName.values(), b.nodeName, wallClockMillis, this::reportOf);
        this.deadLetters = new DeadLetters(gateway, b.nodeName, wallClockMillis);
        this.deadLetterRetries = new DeadLetterRetries(gateway, b.nodeName, name -> flowsByName.get(name), nanoClock,
                                                       wallClockMillis);
        this.peers = new PeerStatus(gateway, wallClockMillis);
        this.takeover = b.scanner == null ? null : new Takeover(scanView(), b.scanner, threadFactory, wallClockMillis, b.gossip);
    }

    /** How a runtime is put together; the defaults suit a unit test on one thread set (no ring, no gossip). */
    static final class Builder
    {
        private final CqlGateway gateway;
        private MBeanServer mbeans = ManagementFactory.getPlatformMBeanServer();
        private ThreadFactory threadFactory = Thread::new;
        private LongSupplier nanoClock = System::nanoTime;
        private LongSupplier wallClockMillis = System::currentTimeMillis;
        private Function<String, java.nio.file.Path> spillDirs;
        private RetryScheduler.Factory retrySchedulers;
        private RetryPolicy.Jitter jitter = RetryPolicy.Jitter.RANDOM;
        private TaskProcessor.Sleeper sleeper = Thread::sleep;
        private Function<FlowSpec, ColumnTypes> columnTypes = spec -> column -> null;
        private Supplier<ClassLoader> handlerLoader = TriggerRuntime.class::getClassLoader;
        private Supplier<String> nodeName = () -> "127.0.0.1";
        private long drainMillis = DRAIN_MILLIS;
        private ExecutorChoice executors = ExecutorChoice.SELF;
        private BooleanSupplier nodeReady = () -> true;
        private Function<FlowSpec, BackupMap> backupMaps = spec -> null;
        private Takeover.Scanner scanner;
        private boolean gossip;

        Builder(CqlGateway gateway)
        {
            this.gateway = gateway;
        }

        Builder mbeans(MBeanServer v) { mbeans = v; return this; }
        Builder threads(ThreadFactory v) { threadFactory = v; return this; }
        Builder nanoClock(LongSupplier v) { nanoClock = v; return this; }
        Builder wallClock(LongSupplier v) { wallClockMillis = v; return this; }
        Builder spillDirs(Function<String, java.nio.file.Path> v) { spillDirs = v; return this; }
        Builder retrySchedulers(RetryScheduler.Factory v) { retrySchedulers = v; return this; }
        Builder jitter(RetryPolicy.Jitter v) { jitter = v; return this; }
        Builder sleeper(TaskProcessor.Sleeper v) { sleeper = v; return this; }
        Builder columnTypes(Function<FlowSpec, ColumnTypes> v) { columnTypes = v; return this; }
        Builder handlerLoader(Supplier<ClassLoader> v) { handlerLoader = v; return this; }
        Builder nodeName(Supplier<String> v) { nodeName = v; return this; }
        Builder drainMillis(long v) { drainMillis = v; return this; }
        Builder executors(ExecutorChoice v) { executors = v; return this; }
        Builder nodeReady(BooleanSupplier v) { nodeReady = v; return this; }
        Builder backupMaps(Function<FlowSpec, BackupMap> v) { backupMaps = v; return this; }
        Builder scanner(Takeover.Scanner v) { scanner = v; return this; }
        Builder gossip(boolean v) { gossip = v; return this; }

        TriggerRuntime build()
        {
            if (retrySchedulers == null)
                retrySchedulers = RetryScheduler.onThreads(threadFactory);
            if (spillDirs == null)
                throw new IllegalStateException("spillDirs is required");
            return new TriggerRuntime(this);
        }
    }

    static Builder builder(CqlGateway gateway)
    {
        return new Builder(gateway);
    }

    /** The node's runtime, created and started on first use (a capture index or the trigger loaded). */
    public static TriggerRuntime get()
    {
        TriggerRuntime current = instance;
        return current != null ? current : create();
    }

    private static synchronized TriggerRuntime create()
    {
        if (instance == null)
        {
            TriggerRuntime runtime = builder(new QueryProcessorGateway())
                .spillDirs(TriggerRuntime::spillDir)
                .columnTypes(spec -> ColumnTypes.fromSchema(spec.source.keyspace, spec.source.table))
                .handlerLoader(HandlerClassLoader::fromTriggersDirectory)
                .nodeName(() -> FBUtilities.getBroadcastAddressAndPort().getHostAddress(false))
                .executors(ExecutorChoice.ofRing())
                .nodeReady(TriggerRuntime::nodeServes)
                .backupMaps(TriggerRuntime::companionOf)
                .scanner(BackupMap::scan)
                .gossip(true)
                .build();
            runtime.start();
            instance = runtime;
        }
        return instance;
    }

    /** The node has started: it is in the ring and can run distributed queries. */
    private static boolean nodeServes()
    {
        return StorageService.instance.isInitialized() && !StorageService.instance.isStarting();
    }

    /** The flow's backup map when it keeps one and its companion table exists. */
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

    /** Starts the control thread: waits for the node to serve, reads the flows, then every 2 s: poll, status, scans. */
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
        while (!shutdown && !nodeReady.getAsBoolean())
        {
            try
            {
                Thread.sleep(500);
            }
            catch (InterruptedException e)
            {
                return;
            }
        }
        if (shutdown)
            return;
        register();
        try
        {
            configSource.poll();
        }
        catch (Throwable e)
        {
            // the next cycle polls again: the node must still become ready, or it would drop every capture
            logger.error("Async trigger: could not read the flows at start", e);
        }
        ready.countDown();
        registerFlowMBeans();
        if (takeover != null && !shutdown)
            takeover.start();
    }

    void cycle()
    {
        if (shutdown || ready.getCount() > 0)
            return;
        try
        {
            configSource.poll();
            registerFlowMBeans();
            statusReporter.report();
            deadLetterRetries.poll();
            long now = wallClockMillis.getAsLong();
            recentlyDone.values().removeIf(at -> now - at > RECENTLY_DONE_MILLIS);
            if (takeover != null)
            {
                if (backlog.values().stream().anyMatch(n -> n > 0))
                    peers.refresh(); // only what orphan adoption needs, and only while this node holds entries
                scheduleScans(now);
            }
        }
        catch (RuntimeException | LinkageError e)
        {
            // an exception would cancel the schedule for good: log it, the next cycle tries again
            logger.error("Unexpected error in the async trigger control thread", e);
        }
    }

    /**
     * The safety net every minute; otherwise only once captures have gone quiet (a scan reads the whole backup map,
     * completed entries' tombstones included, so none runs under steady load): once after the last capture, then
     * again while entries are left and this node has nothing queued or running (orphans, completions on their way).
     */
    private void scheduleScans(long now)
    {
        if (++cycles % (Takeover.SAFETY_NET_PERIOD_MILLIS / POLL_MILLIS) == 0)
        {
            takeover.safetyNet();
            return;
        }
        long lastCapture = lastCaptureMillis;
        if (lastCapture != Long.MIN_VALUE && now - lastCapture < QUIET_MILLIS)
            return;
        long lastScan = takeover.lastScanStartedMillis();
        if (lastCapture >= lastScan)
            takeover.scan("after captures");
        else if (backlog.values().stream().anyMatch(n -> n > 0) && idle() && now - lastScan >= BACKLOG_RESCAN_MILLIS)
            takeover.scan("entries left");
    }

    /** Nothing queued, spilled, waiting for a retry or running here, in any flow. */
    private boolean idle()
    {
        for (Flow flow : flowsByName.values())
            if (flow.metrics.getPendingTasks() + flow.metrics.getActiveTasks() > 0)
                return false;
        return true;
    }

    /** Waits until the flows were read (tests). */
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

    private void register()
    {
        try
        {
            if (!mbeans.isRegistered(NAME))
                mbeans.registerMBean(this, NAME);
        }
        catch (Exception e)
        {
            logger.error("Could not register {}", NAME, e);
        }
    }

    private void registerFlowMBeans()
    {
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
            started.backups(backupsOf(started));
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
        unpark(started);
        if (takeover != null && started.backupMap != null && ready.getCount() == 0)
            takeover.scan("flow '" + spec.name + "' applied");
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
        inFlight.values().removeIf(holder -> holder == flow);
    }

    /** Completion forgets the task here and deletes its entry on every replica. */
    private Backups backupsOf(Flow flow)
    {
        return new Backups()
        {
            @Override
            public void recordResume(Task task, int target, ByteBuffer paging)
            {
                BackupMap map = flow.backupMap;
                if (map != null)
                    map.recordResume(task, target, paging);
            }

            @Override
            public void completed(Task task)
            {
                try
                {
                    BackupMap map = flow.backupMap;
                    if (map != null)
                        map.complete(task);
                }
                finally
                {
                    done(task);
                }
            }

            @Override
            public void released(Task task)
            {
                inFlight.remove(task.id());
            }
        };
    }

    private void done(Task task)
    {
        recentlyDone.put(task.id(), wallClockMillis.getAsLong());
        inFlight.remove(task.id());
    }

    /** What a scan sees of this runtime. */
    private Takeover.Runtime scanView()
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
            public boolean executes(String keyspace, Token token)
            {
                return executes0(keyspace, token);
            }

            @Override
            public boolean orphaned(String keyspace, Token token, String flow, long capturedMillis)
            {
                String executor;
                try
                {
                    executor = executors.executorOf(keyspace, token);
                }
                catch (RuntimeException e)
                {
                    return false;
                }
                return executor != null && !executor.equals(executors.self())
                       && peers.idleAndScannedSince(flow, executor, capturedMillis + ORPHAN_GRACE_MILLIS, PEER_REPORT_MAX_AGE_MILLIS);
            }

            @Override
            public boolean requeue(Task task, String why)
            {
                Flow flow = flowsByName.get(task.flow());
                if (flow == null || recentlyDone.containsKey(task.id()))
                    return false;
                if (!offer(flow, task))
                    return false;
                flow.metrics.taskRecovered(task.resumePaging() != null);
                return true;
            }

            @Override
            public void backlog(Map<String, Long> entriesByFlow, long startedMillis)
            {
                backlog = Map.copyOf(entriesByFlow);
                backlogScannedMillis = startedMillis;
            }
        };
    }

    private boolean executes0(String keyspace, Token token)
    {
        try
        {
            return executors.isExecutor(keyspace, token);
        }
        catch (RuntimeException e)
        {
            // the ring is not known yet (commit log replay at boot): the start scan decides later
            return false;
        }
    }

    /** What the status row of a flow adds to its counters: the backup maps as the last scan found them. */
    private StatusReporter.Extra reportOf(String flow)
    {
        Long entries = backlog.get(flow);
        return new StatusReporter.Extra(entries == null ? 0 : entries, lastCaptureMillis, backlogScannedMillis);
    }

    private FlowHandler instantiateHandler(FlowSpec spec)
    {
        try
        {
            Class<?> type = Class.forName(spec.handler, true, handlerLoader.get());
            if (!FlowHandler.class.isAssignableFrom(type))
                throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " does not implement " + FlowHandler.class.getName());
            return (FlowHandler) type.getConstructor().newInstance();
        }
        catch (ClassNotFoundException e)
        {
            throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " is not in the triggers directory");
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

    /** True when some applied flow watches the table; cheap, no allocation. */
    boolean watches(String keyspace, String table)
    {
        return flowsByTable.containsKey(tableKey(keyspace, table));
    }

    /**
     * On the coordinator, before the write is sent to any replica (the trigger): holds it while the queue of a flow on
     * the table with the {@code block} policy is full. Throws only the policy's OVERLOADED.
     */
    void admit(String keyspace, String table)
    {
        List<Flow> flows = flowsByTable.get(tableKey(keyspace, table));
        if (flows == null)
            return;
        for (Flow flow : flows)
            flow.admit();
    }

    /**
     * On a replica, as it applies a write (the capture index), after the tasks' backup entries were written here:
     * queues the tasks when this node executes the row. Never waits, never throws.
     * @param entriesWritten how many of the tasks got a backup entry here (counted per flow)
     */
    void captured(String keyspace, Token token, List<Task> tasks, int entriesWritten)
    {
        lastCaptureMillis = wallClockMillis.getAsLong();
        if (entriesWritten > 0)
            for (Task task : tasks)
            {
                Flow flow = flowsByName.get(task.flow());
                if (flow != null && flow.backupMap != null)
                    flow.metrics.backupEntriesWritten(1);
            }
        // before the flows were read (commit log replay at boot, say) the ring is not known either: the entries
        // wait for the scan that starts once they are
        if (tasks.isEmpty() || ready.getCount() > 0 || !executes0(keyspace, token))
            return;
        for (Task task : tasks)
        {
            Flow flow = flowsByName.get(task.flow());
            if (flow == null)
                park(task);
            else
                offer(flow, task);
        }
    }

    /**
     * Queues (or spills) the task unless it is in flight here already.
     * @return whether it was taken
     */
    private boolean offer(Flow flow, Task task)
    {
        if (inFlight.putIfAbsent(task.id(), flow) != null)
            return false;
        FullQueuePolicy.Outcome outcome = flow.offer(task);
        if (outcome == FullQueuePolicy.Outcome.CLOSED)
        {
            // the flow was replaced between the lookup and the offer: hand the task to the new version
            Flow current = flowsByName.get(flow.spec.name);
            if (current != null && current != flow)
            {
                inFlight.put(task.id(), current);
                outcome = current.offer(task);
            }
        }
        switch (outcome)
        {
            case ACCEPTED:
            case SPILLED:
                return true;
            case DISCARDED:
                completeLater(flow, task);
                return false;
            case CLOSED:
                inFlight.remove(task.id());
                if (!shutdown)
                    park(task);
                return false;
            default: // LEFT: its entry holds it until a scan
                inFlight.remove(task.id());
                return false;
        }
    }

    /** A discarded task's entry goes too, off the write path. */
    private void completeLater(Flow flow, Task task)
    {
        Runnable complete = () -> {
            try
            {
                BackupMap map = flow.backupMap;
                if (map != null)
                    map.complete(task);
            }
            catch (RuntimeException e)
            {
                logger.debug("Flow '{}': entry of discarded task {} not removed: {}", flow.spec.name, task, e.toString());
            }
            finally
            {
                done(task);
            }
        };
        try
        {
            control.execute(complete);
        }
        catch (RuntimeException e)
        {
            done(task);
        }
    }

    /** Keeps a task for a flow not applied here yet; beyond the limit its entry alone holds it (a scan finds it). */
    private void park(Task task)
    {
        if (parkedCount.incrementAndGet() > PARK_LIMIT)
        {
            parkedCount.decrementAndGet();
            if (parkFullWarned.add(task.flow()))
                logger.warn("Flow '{}' is not applied on this node yet and {} captured tasks already wait; the others "
                            + "are left to their backup entries until it is", task.flow(), PARK_LIMIT);
            return;
        }
        Queue<Task> waiting = parked.computeIfAbsent(task.flow(), name -> new ConcurrentLinkedQueue<>());
        boolean first = waiting.isEmpty();
        waiting.add(task);
        ScheduledExecutorService c = control;
        if (first && c != null && !shutdown && ready.getCount() == 0)
        {
            try
            {
                c.execute(() -> {
                    configSource.poll(); // a new flow's first tasks: read the flows now, not at the next poll
                    Flow flow = flowsByName.get(task.flow());
                    if (flow != null)
                        unpark(flow);
                });
            }
            catch (RuntimeException e)
            {
                // stopping
            }
        }
    }

    private void unpark(Flow flow)
    {
        parkFullWarned.remove(flow.spec.name);
        Queue<Task> waiting = parked.get(flow.spec.name);
        if (waiting == null)
            return;
        Task task;
        while ((task = waiting.poll()) != null)
        {
            parkedCount.decrementAndGet();
            offer(flow, task);
        }
    }

    // ---- lifecycle and JMX ----

    /** Stops everything this runtime started (tests; a node stops with its JVM). */
    void shutdown()
    {
        ScheduledExecutorService toStop;
        synchronized (this)
        {
            if (shutdown)
                return;
            shutdown = true;
            toStop = control;
        }
        ready.countDown();
        if (takeover != null)
            takeover.stop();
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
            if (mbeans.isRegistered(NAME))
                mbeans.unregisterMBean(NAME);
        }
        catch (Exception e)
        {
            logger.debug("Could not unregister {}: {}", NAME, e.getMessage());
        }
        fanoutWriters.shutdown();
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

    @Override
    public int getParkedTasks()
    {
        return parkedCount.get();
    }

    boolean isShutdown()
    {
        return shutdown;
    }

    Collection<Flow> flows()
    {
        return flowsByName.values();
    }

    int inFlight()
    {
        return inFlight.size();
    }
}
