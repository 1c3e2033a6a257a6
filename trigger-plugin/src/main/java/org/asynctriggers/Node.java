package org.asynctriggers;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import javax.management.MBeanServer;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.FBUtilities;
import org.asynctriggers.backup.Backlog;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.ExecutorChoice;
import org.asynctriggers.backup.Handover;
import org.asynctriggers.backup.HeldTasks;
import org.asynctriggers.backup.Ownership;
import org.asynctriggers.backup.PeerStatus;
import org.asynctriggers.backup.ScanSchedule;
import org.asynctriggers.backup.Takeover;
import org.asynctriggers.capture.ExpiringRows;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.QueryProcessorGateway;
import org.asynctriggers.execute.FlowExecutors;
import org.asynctriggers.execute.HandlerClassLoader;
import org.asynctriggers.flows.ControlLoop;
import org.asynctriggers.flows.FlowFactory;
import org.asynctriggers.flows.FlowWorkers;
import org.asynctriggers.flows.FollowSweep;
import org.asynctriggers.flows.Flows;
import org.asynctriggers.flows.Intake;
import org.asynctriggers.flows.ScanView;
import org.asynctriggers.metrics.CassandraMetrics;
import org.asynctriggers.metrics.NodeStatus;
import org.asynctriggers.metrics.StatusReporter;
import org.asynctriggers.queue.SpillStore;
import org.asynctriggers.spec.FlowConfigSource;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.work.DeadLetterRetries;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin on one node, one instance per JVM (the jar is on the node's class path): builds the flows, the intake of
 * captured tasks, the control thread and the scans of the backup maps, and wires them together. It holds no logic of
 * its own: a write's path goes from {@link CaptureIndex} down through {@code capture}, {@code flows}, {@code queue},
 * {@code work}, {@code execute} and {@code backup}.
 */
public final class Node
{
    private static final Logger logger = LoggerFactory.getLogger(Node.class);
    static final long DRAIN_MILLIS = 30_000;
    static final String SPILL_DIRECTORY = "async_triggers_spill";

    private static volatile Node instance;

    private final MBeanServer mbeans;
    private final HeldTasks held;
    private final Flows flows;
    private final Intake intake;
    private final ControlLoop control;
    private final NodeStatus status;
    private final FollowSweep sweep;

    private Node(Builder b)
    {
        this.sweep = new FollowSweep(b.expiringRows, (keyspace, token, tasks, withEntries) ->
            intake().captured(keyspace, token, tasks, withEntries), b.threadFactory, b.nanoClock, b.wallClockMillis, b.sleeper);
        this.held = new HeldTasks(b.wallClockMillis);
        Backlog backlog = new Backlog(b.wallClockMillis);
        Ownership ownership = new Ownership(b.executors, new PeerStatus(b.gateway, b.wallClockMillis));
        DeadLetters deadLetters = new DeadLetters(b.gateway, b.nodeName, b.wallClockMillis);
        FlowFactory factory = new FlowFactory(new FlowExecutors(b.gateway, b.columnTypes, b.handlerLoader, b.threadFactory),
                                              new FlowWorkers(b.threadFactory, b.nanoClock, b.wallClockMillis, b.retrySchedulers,
                                                              b.jitter, b.sleeper, deadLetters).schemaSettling(b.schemaSettling),
                                              b.spillDirs, b.backupTables, held, new Handover(ownership, held));
        this.mbeans = b.mbeans;
        this.flows = new Flows(factory, b.mbeans, new CassandraMetrics(b.metricsRegistry, backlog::liveEntries),
                               b.drainMillis, held, started -> {
            intake().unpark(started);
            control().applied(started);
            sweep.applied(started, control().isReady());
        }, b.wallClockMillis);
        FlowConfigSource config = new FlowConfigSource(b.gateway, flows);
        ScanSchedule scans = b.scanner == null ? null : new ScanSchedule(
            new Takeover(new ScanView(flows, ownership, backlog, task -> intake().requeue(task), b.wallClockMillis), b.scanner, b.threadFactory,
                         b.wallClockMillis, b.nanoClock, b.gossip),
            backlog, ownership, flows::idle, flows::isPaused, b.wallClockMillis, ControlLoop.POLL_MILLIS);
        StatusReporter statusReporter = new StatusReporter(b.gateway, flows::metrics, b.nodeName, b.wallClockMillis, backlog::statusOf);
        DeadLetterRetries deadLetterRetries = new DeadLetterRetries(b.gateway, b.nodeName, name -> {
            org.asynctriggers.flows.Flow flow = flows.get(name);
            // a paused flow waits: the retry's entry would then wait for the resume, which the request does too
            if (flow == null || flow.isPaused())
                return null;
            return new DeadLetterRetries.RetryTarget()
            {
                @Override
                public boolean offer(org.asynctriggers.task.Task task)
                {
                    return intake().requeue(task) || held.isHeld(task) || held.recentlyDone(task);
                }

                @Override
                public void keep(org.asynctriggers.task.Task task)
                {
                    flow.keepInBackup(task, b.wallClockMillis.getAsLong());
                }
            };
        }, b.nanoClock, b.wallClockMillis);
        org.asynctriggers.execute.AggregateTimers timers = new org.asynctriggers.execute.AggregateTimers(
            b.gateway, () -> {
                List<FlowSpec> running = new ArrayList<>();
                for (String name : flows.names())
                {
                    org.asynctriggers.flows.Flow flow = flows.get(name);
                    if (flow != null && !flow.isPaused())
                        running.add(flow.spec);
                }
                return running;
            }, b.timerOwner, b.wallClockMillis, ColumnTypes::orNone);
        this.status = new NodeStatus(flows::names, () -> control().isReady(), () -> intake().parked());
        this.control = new ControlLoop(b.threadFactory, b.nodeReady, () -> status.register(mbeans), config, flows, () -> {
            statusReporter.report();
            deadLetterRetries.poll();
            held.expire();
            timers.fire();
        }, scans);
        this.intake = new Intake(flows, held, ownership, backlog, control);
    }

    /** How a node is put together; the defaults suit a unit test on one thread set (no ring, no gossip). */
    static final class Builder
    {
        private final CqlGateway gateway;
        private MBeanServer mbeans = ManagementFactory.getPlatformMBeanServer();
        /** a node's is Cassandra's; unit tests' nodes keep theirs to themselves */
        private CassandraMetrics.Registry metricsRegistry = CassandraMetrics.Registry.plain(new com.codahale.metrics.MetricRegistry());
        private ThreadFactory threadFactory = Thread::new;
        private LongSupplier nanoClock = System::nanoTime;
        private LongSupplier wallClockMillis = System::currentTimeMillis;
        private Function<String, Path> spillDirs;
        private RetryScheduler.Factory retrySchedulers;
        private RetryPolicy.Jitter jitter = RetryPolicy.Jitter.RANDOM;
        private TaskProcessor.Sleeper sleeper = Thread::sleep;
        private Function<FlowSpec, ColumnTypes> columnTypes = spec -> column -> null;
        private Supplier<ClassLoader> handlerLoader = Node.class::getClassLoader;
        private Supplier<String> nodeName = () -> "127.0.0.1";
        private long drainMillis = DRAIN_MILLIS;
        private ExecutorChoice executors = ExecutorChoice.SELF;
        private BooleanSupplier nodeReady = () -> true;
        private Function<FlowSpec, BackupTable> backupTables = spec -> null;
        private Takeover.Scanner scanner;
        private boolean gossip;
        private BooleanSupplier schemaSettling = () -> false;
        /** whether this node fires the aggregate timers of a flow's hour (AggregateTimers); a unit test's node fires all */
        private java.util.function.BiPredicate<String, Long> timerOwner = (flow, hour) -> true;
        /** the rows of a table held here that carry a TTL (a node's read them from its memtables and sstables) */
        private FollowSweep.Rows expiringRows = (keyspace, table, page) -> {};

        Builder(CqlGateway gateway)
        {
            this.gateway = gateway;
        }

        Builder mbeans(MBeanServer v) { mbeans = v; return this; }
        Builder metricsRegistry(CassandraMetrics.Registry v) { metricsRegistry = v; return this; }
        Builder threads(ThreadFactory v) { threadFactory = v; return this; }
        Builder nanoClock(LongSupplier v) { nanoClock = v; return this; }
        Builder wallClock(LongSupplier v) { wallClockMillis = v; return this; }
        Builder spillDirs(Function<String, Path> v) { spillDirs = v; return this; }
        Builder retrySchedulers(RetryScheduler.Factory v) { retrySchedulers = v; return this; }
        Builder jitter(RetryPolicy.Jitter v) { jitter = v; return this; }
        Builder sleeper(TaskProcessor.Sleeper v) { sleeper = v; return this; }
        Builder columnTypes(Function<FlowSpec, ColumnTypes> v) { columnTypes = v; return this; }
        Builder handlerLoader(Supplier<ClassLoader> v) { handlerLoader = v; return this; }
        Builder nodeName(Supplier<String> v) { nodeName = v; return this; }
        Builder drainMillis(long v) { drainMillis = v; return this; }
        Builder executors(ExecutorChoice v) { executors = v; return this; }
        Builder nodeReady(BooleanSupplier v) { nodeReady = v; return this; }
        Builder backupTables(Function<FlowSpec, BackupTable> v) { backupTables = v; return this; }
        Builder scanner(Takeover.Scanner v) { scanner = v; return this; }
        Builder gossip(boolean v) { gossip = v; return this; }
        Builder schemaSettling(BooleanSupplier v) { schemaSettling = v; return this; }
        Builder timerOwner(java.util.function.BiPredicate<String, Long> v) { timerOwner = v; return this; }
        Builder expiringRows(FollowSweep.Rows v) { expiringRows = v; return this; }

        Node build()
        {
            if (retrySchedulers == null)
                retrySchedulers = RetryScheduler.onThreads(threadFactory);
            if (spillDirs == null)
                throw new IllegalStateException("spillDirs is required");
            return new Node(this);
        }
    }

    /** Whether this node executes the rows of a flow's hour of aggregate timers: the first live replica of their partition. */
    private static boolean executesTimers(String flow, long hour)
    {
        org.apache.cassandra.schema.TableMetadata timers = org.apache.cassandra.schema.Schema.instance.getTableMetadata("async_triggers", "aggregate_timers");
        if (timers == null)
            return false;
        java.nio.ByteBuffer key = org.apache.cassandra.db.marshal.CompositeType.build(
            org.apache.cassandra.db.marshal.ByteBufferAccessor.instance,
            org.apache.cassandra.db.marshal.UTF8Type.instance.decompose(flow),
            org.apache.cassandra.db.marshal.LongType.instance.decompose(hour));
        return ExecutorChoice.ofRing().isExecutor("async_triggers", timers.partitioner.getToken(key));
    }

    static Builder builder(CqlGateway gateway)
    {
        return new Builder(gateway);
    }

    /** The node's plugin, created and started on first use (a capture index or the trigger loaded). */
    public static Node get()
    {
        Node current = instance;
        return current != null ? current : create();
    }

    private static synchronized Node create()
    {
        if (instance == null)
        {
            Node node = builder(new QueryProcessorGateway())
                .metricsRegistry(CassandraMetrics.Registry.cassandra())
                .spillDirs(Node::spillDir)
                .columnTypes(spec -> ColumnTypes.fromSchema(spec.source.keyspace, spec.source.table))
                .handlerLoader(HandlerClassLoader::fromTriggersDirectory)
                .nodeName(() -> FBUtilities.getBroadcastAddressAndPort().getHostAddress(false))
                .executors(ExecutorChoice.ofRing())
                .nodeReady(Node::serves)
                .backupTables(Node::backupTableOf)
                .scanner(BackupTable::scan)
                .expiringRows(ExpiringRows::of)
                .gossip(true)
                .schemaSettling(org.asynctriggers.work.SchemaWatch.ofNode()::settling)
                .timerOwner(Node::executesTimers)
                .build();
            node.start();
            instance = node;
        }
        return instance;
    }

    /** The node has started: it is in the ring and can run distributed queries. */
    private static boolean serves()
    {
        return StorageService.instance.isInitialized() && !StorageService.instance.isStarting();
    }

    /** The flow's backup table when it keeps one and the table exists. */
    private static BackupTable backupTableOf(FlowSpec spec)
    {
        if (!spec.backup.enabled)
            return null;
        String companion = BackupTable.companionOf(spec.source.table);
        if (Schema.instance.getTableMetadata(spec.source.keyspace, companion) == null)
        {
            logger.warn("Flow '{}': table {}.{} is missing, so the flow's tasks have no replica backup (redeploy the flow "
                        + "with ctl trigger deploy to create it)", spec.name, spec.source.keyspace, companion);
            return null;
        }
        return new BackupTable(spec.source.keyspace, spec.source.table, spec.source.partitionKey.size(), new QueryProcessorGateway());
    }

    /** {@code <first data directory>/async_triggers_spill/<flow>} */
    static Path spillDir(String flow)
    {
        return SpillStore.dirOf(Paths.get(DatabaseDescriptor.getAllDataFileLocations()[0], SPILL_DIRECTORY), flow);
    }

    void start()
    {
        control.start();
    }

    /** Stops everything this node's plugin started (tests; a node stops with its JVM). */
    void shutdown()
    {
        if (!flows.beginShutdown())
            return;
        control.stop();
        flows.stopAll();
        status.unregister(mbeans);
    }

    public Flows flows()
    {
        return flows;
    }

    public Intake intake()
    {
        return intake;
    }

    ControlLoop control()
    {
        return control;
    }

    NodeStatus status()
    {
        return status;
    }

    /** tasks queued, spilled, waiting for a retry or running here (tests) */
    int heldTasks()
    {
        return held.size();
    }
}
