package org.asynctriggers.backup;

import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

import org.apache.cassandra.gms.EndpointState;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.gms.IEndpointStateChangeSubscriber;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Scans of this node's replicas of the backup maps (docs/design.md, "Takeover"). A scan queues every live entry this
 * node executes now ({@link ExecutorChoice}) that is not already queued here, and counts the live entries per flow
 * (the backlog {@code ctl trigger wait} waits on). It also adopts orphans: an entry whose executor is idle and has
 * scanned its own backup map since the entry was captured here, so holds no live copy of it (it never applied the
 * write, or saw it superseded in its memtable, or its completion has not reached this replica yet): running it here
 * is at worst a harmless repeat. Scans run on one thread, when the node starts (its own entries, after a crash or a
 * restart), when gossip convicts another node ({@code onDead}: the entries it executed now fall to the next live
 * replica), when a flow is applied, after a burst of captures, while entries are left, and every minute as the
 * safety net, which also queues any entry older than twice its flow's {@code backup.safety_net_ms}, whoever
 * executes it.
 */
public final class Takeover implements IEndpointStateChangeSubscriber
{
    private static final Logger logger = LoggerFactory.getLogger(Takeover.class);
    public static final long SAFETY_NET_PERIOD_MILLIS = 60_000;

    /** What the node offers a scan: its flows, who executes a row, its intake. */
    public interface NodeView
    {
        /** The flows with backup entries, by name. */
        Collection<FlowSpec> backedUpFlows();

        /** Whether this node executes the tasks of this row now. */
        boolean executes(String keyspace, org.apache.cassandra.dht.Token token);

        /**
         * Whether this node is one of the row's natural replicas now. An entry of a row it no longer replicates is
         * a copy left behind by a range movement (bootstrap, decommission, replacement) until {@code nodetool
         * cleanup}: the row's replicas hold it too, run it and complete it there, never here; so a scan neither
         * counts nor runs it (else it would run again every scan, and a drain would wait for it forever).
         */
        default boolean replicates(String keyspace, org.apache.cassandra.dht.Token token)
        {
            return true;
        }

        /** Whether no other node will run this entry: its executor is idle and scanned since it was captured here. */
        boolean orphaned(String keyspace, org.apache.cassandra.dht.Token token, String flow, long capturedMillis);

        /**
         * Entries of this flow count their age for the safety net from this wall-clock millis at the earliest (its last
         * resume here: a paused flow's entries are old on purpose, and each has its executor); Long.MIN_VALUE: from
         * their capture.
         */
        default long ageCountsFrom(String flow)
        {
            return Long.MIN_VALUE;
        }

        /** @return true when queued (false: already queued here, recently done, or its flow is gone or paused) */
        boolean requeue(Task task, String why);

        /** The live entries per flow found by a scan that started at {@code startedMillis}. */
        void backlog(Map<String, Long> entriesByFlow, long startedMillis);
    }

    /** How a scan walks the backup maps; production: {@link BackupTable#scan}. */
    public interface Scanner
    {
        void scan(String keyspace, String sourceTable, BackupTable.EntryVisitor visitor);
    }

    private final NodeView node;
    private final Scanner scanner;
    private final ExecutorService thread;
    private final LongSupplier wallClockMillis;
    /** false in unit tests: no gossip to listen to */
    private final boolean gossip;
    /** a scan is queued and has not started: another request adds nothing */
    private final AtomicBoolean queued = new AtomicBoolean();
    /** safety-net scans are queued apart: they queue more than a plain scan */
    private final AtomicBoolean safetyNetQueued = new AtomicBoolean();
    private volatile boolean registered;
    private volatile long lastScanStartedMillis = Long.MIN_VALUE;
    private final LongSupplier nanoClock;

    public Takeover(NodeView node, Scanner scanner, ThreadFactory threadFactory, LongSupplier wallClockMillis, boolean gossip)
    {
        this(node, scanner, threadFactory, wallClockMillis, System::nanoTime, gossip);
    }

    /** {@code nanoClock}: what a task taken over counts its age from (its retries' {@code max_age_ms}) */
    public Takeover(NodeView node, Scanner scanner, ThreadFactory threadFactory, LongSupplier wallClockMillis,
                    LongSupplier nanoClock, boolean gossip)
    {
        this.nanoClock = nanoClock;
        this.gossip = gossip;
        this.node = node;
        this.scanner = scanner;
        this.wallClockMillis = wallClockMillis;
        this.thread = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = threadFactory.newThread(r);
            t.setName("async-trigger-takeover");
            t.setDaemon(true);
            return t;
        });
    }

    /** Listens to gossip and scans once: this node's own entries, after a restart. */
    public void start()
    {
        if (gossip)
        {
            Gossiper.instance.register(this);
            registered = true;
        }
        scan("start");
    }

    public void stop()
    {
        if (registered)
            Gossiper.instance.unregister(this);
        registered = false;
        thread.shutdownNow();
    }

    public long lastScanStartedMillis()
    {
        return lastScanStartedMillis;
    }

    @Override
    public void onDead(InetAddressAndPort endpoint, EndpointState state)
    {
        scan("node " + endpoint.getHostAddress(false) + " died");
    }

    /** Queues a scan unless one is already waiting to start (it will see everything this one would). */
    public void scan(String why)
    {
        if (queued.compareAndSet(false, true))
            submit(() -> {
                queued.set(false);
                run(why, Map.of());
            });
    }

    /** The safety net, from the control thread's schedule. */
    public void safetyNet()
    {
        Map<String, Long> thresholds = new LinkedHashMap<>();
        for (FlowSpec flow : node.backedUpFlows())
            thresholds.put(flow.name, flow.backup.safetyNetMillis);
        if (safetyNetQueued.compareAndSet(false, true))
            submit(() -> {
                safetyNetQueued.set(false);
                run("safety net", thresholds);
            });
    }

    private void submit(Runnable scan)
    {
        try
        {
            thread.execute(scan);
        }
        catch (RejectedExecutionException e)
        {
            // stopping
        }
    }

    /**
     * @param safetyNet flow name to its threshold: entries older than twice that are queued here whoever executes
     *                  them (empty for a plain scan)
     */
    void run(String why, Map<String, Long> safetyNet)
    {
        long started = wallClockMillis.getAsLong();
        lastScanStartedMillis = started;
        Map<String, FlowSpec> flows = new HashMap<>();
        for (FlowSpec flow : node.backedUpFlows())
            flows.put(flow.name, flow);
        Map<String, Long> backlog = new HashMap<>();
        for (String name : flows.keySet())
            backlog.put(name, 0L);
        int[] queuedHere = new int[1];
        boolean complete = true;
        for (FlowSpec table : distinctTables(flows.values()))
        {
            try
            {
                scanner.scan(table.source.keyspace, table.source.table, entry -> {
                    String flow = entry.task.flow();
                    if (!flows.containsKey(flow))
                        return; // a flow dropped from this table, or not applied here yet
                    String keyspace = table.source.keyspace;
                    if (!node.replicates(keyspace, entry.key.getToken()))
                        return; // left behind by a range movement: its row's replicas run it
                    backlog.merge(flow, 1L, Long::sum);
                    Long threshold = safetyNet.get(flow);
                    boolean stale = threshold != null
                                    && started - Math.max(entry.capturedMillis, node.ageCountsFrom(flow)) > 2 * threshold;
                    if (!(stale || node.executes(keyspace, entry.key.getToken())
                          || node.orphaned(keyspace, entry.key.getToken(), flow, entry.capturedMillis)))
                        return;
                    Task task = entry.resume == null
                                ? entry.task.recovered(nanoClock.getAsLong(), 0, null)
                                : entry.task.recovered(nanoClock.getAsLong(), entry.resume.getKey(), entry.resume.getValue());
                    if (node.requeue(task, why))
                        queuedHere[0]++;
                });
            }
            catch (RuntimeException e)
            {
                complete = false;
                logger.error("Async trigger scan ({}): could not scan the backup map of {}.{}", why,
                             table.source.keyspace, table.source.table, e);
            }
        }
        if (complete)
            node.backlog(backlog, started);
        long millis = wallClockMillis.getAsLong() - started;
        long entries = backlog.values().stream().mapToLong(Long::longValue).sum();
        if (queuedHere[0] > 0 || why.equals("start") || why.contains("died") || millis > 1_000)
            logger.info("Async trigger scan ({}): {} live backup entries on this node, {} queued here, in {} ms",
                        why, entries, queuedHere[0], millis);
    }

    /** One flow per source table, so each backup map is scanned once. */
    private static Collection<FlowSpec> distinctTables(Collection<FlowSpec> flows)
    {
        Map<String, FlowSpec> byTable = new LinkedHashMap<>();
        for (FlowSpec flow : flows)
            byTable.putIfAbsent(flow.source.keyspace + '.' + flow.source.table, flow);
        return byTable.values();
    }
}
