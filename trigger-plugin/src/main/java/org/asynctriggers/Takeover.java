package org.asynctriggers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.lifecycle.SSTableSet;
import org.apache.cassandra.db.lifecycle.View;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterators;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.gms.EndpointState;
import org.apache.cassandra.gms.FailureDetector;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.gms.IEndpointStateChangeSubscriber;
import org.apache.cassandra.io.sstable.SSTableReadsListener;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.concurrent.OpOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takeover from the replica backup maps (docs/design.md, "Takeover"). Gossip tells this node when another died
 * ({@code onDead}) or restarted before it was convicted ({@code onRestart}); then, on its own thread, it scans its
 * local replicas of every backup map and queues the entries of that master for which it is the first live replica
 * in ring order (the master excluded). At start it queues the entries it mastered itself, and every minute the
 * safety net queues entries older than their flow's {@code backup.safety_net_ms}.
 */
final class Takeover implements IEndpointStateChangeSubscriber
{
    private static final Logger logger = LoggerFactory.getLogger(Takeover.class);
    static final long SAFETY_NET_PERIOD_MILLIS = 60_000;

    /** What the runtime offers: its flows, and a way to queue a recovered task into the running flow. */
    interface Runtime
    {
        Collection<FlowSpec> backedUpFlows();

        /** @return true when queued (false: known in flight here, or its flow is gone) */
        boolean requeue(Task task, String why);
    }

    /** One live entry of a backup map on this node. */
    static final class Entry
    {
        final Task task;
        final String master;
        final List<InetAddressAndPort> replicas;
        final Map.Entry<Integer, byte[]> resume;

        Entry(Task task, String master, List<InetAddressAndPort> replicas, Map.Entry<Integer, byte[]> resume)
        {
            this.task = task;
            this.master = master;
            this.replicas = replicas;
            this.resume = resume;
        }
    }

    private final Runtime runtime;
    private final ExecutorService thread;
    private final String self;
    private final InetAddressAndPort me;
    private volatile boolean registered;

    Takeover(Runtime runtime, ThreadFactory threadFactory)
    {
        this.runtime = runtime;
        this.me = FBUtilities.getBroadcastAddressAndPort();
        this.self = me.getHostAddress(false);
        // one scan at a time; scans asked for while one runs are queued (each has its own master to look for)
        this.thread = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = threadFactory.newThread(r);
            t.setName("async-trigger-takeover");
            t.setDaemon(true);
            return t;
        });
    }

    void start()
    {
        Gossiper.instance.register(this);
        registered = true;
        submit("start", entry -> entry.master.equals(self) || shouldExecute(entry, Set.of(), Takeover::alive, me));
    }

    void stop()
    {
        if (registered)
            Gossiper.instance.unregister(this);
        registered = false;
        thread.shutdownNow();
    }

    /** The safety net, from the control thread's schedule. */
    void safetyNet()
    {
        long now = System.currentTimeMillis();
        Map<String, Long> thresholds = new LinkedHashMap<>();
        for (FlowSpec flow : runtime.backedUpFlows())
            thresholds.put(flow.name, flow.backup.safetyNetMillis);
        submit("safety net", entry -> {
            Long threshold = thresholds.get(entry.task.flow());
            return threshold != null && now - BackupMap.unixMillis(entry.task.backupId()) > threshold
                   && shouldExecute(entry, Set.of(), Takeover::alive, me);
        });
    }

    @Override
    public void onDead(InetAddressAndPort endpoint, EndpointState state)
    {
        masterLost(endpoint, "died");
    }

    @Override
    public void onRestart(InetAddressAndPort endpoint, EndpointState state)
    {
        masterLost(endpoint, "restarted");
    }

    private void masterLost(InetAddressAndPort endpoint, String what)
    {
        String master = endpoint.getHostAddress(false);
        if (master.equals(self))
            return;
        submit("node " + master + " " + what,
               entry -> entry.master.equals(master) && shouldExecute(entry, Set.of(endpoint), Takeover::alive, me));
    }

    /** The first replica of the entry's token in ring order that is alive and not excluded is this node. */
    static boolean shouldExecute(Entry entry, Set<InetAddressAndPort> excluded, Predicate<InetAddressAndPort> alive, InetAddressAndPort me)
    {
        for (InetAddressAndPort replica : entry.replicas)
        {
            if (excluded.contains(replica) || !(replica.equals(me) || alive.test(replica)))
                continue;
            return replica.equals(me);
        }
        return false;
    }

    private static boolean alive(InetAddressAndPort endpoint)
    {
        return FailureDetector.instance.isAlive(endpoint);
    }

    private void submit(String why, Predicate<Entry> mine)
    {
        try
        {
            thread.execute(() -> run(why, mine));
        }
        catch (java.util.concurrent.RejectedExecutionException e)
        {
            // stopping
        }
    }

    private void run(String why, Predicate<Entry> mine)
    {
        long started = System.nanoTime();
        int queued = 0, seen = 0;
        Set<String> tables = new HashSet<>();
        Set<String> flows = new HashSet<>();
        for (FlowSpec flow : runtime.backedUpFlows())
        {
            tables.add(flow.source.keyspace + '.' + flow.source.table);
            flows.add(flow.name);
        }
        for (String table : tables)
        {
            String[] parts = table.split("\\.", 2);
            try
            {
                for (Entry entry : scan(parts[0], parts[1]))
                {
                    seen++;
                    if (!flows.contains(entry.task.flow()) || !mine.test(entry))
                        continue;
                    Task task = entry.resume == null
                                ? entry.task.recovered(System.nanoTime(), 0, null)
                                : entry.task.recovered(System.nanoTime(), entry.resume.getKey(), entry.resume.getValue());
                    if (runtime.requeue(task, why))
                        queued++;
                }
            }
            catch (RuntimeException e)
            {
                logger.error("Async trigger takeover ({}): could not scan the backup map of {}", why, table, e);
            }
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        if (queued > 0 || !why.equals("safety net"))
            logger.info("Async trigger takeover ({}): {} backup entries on this node, {} queued here, in {} ms", why, seen, queued, millis);
    }

    /**
     * The live entries of the local replica of a backup map, read directly from its memtables and sstables: a CQL
     * read would count the completed entries' tombstones against tombstone_warn_threshold, this reads past them.
     */
    static List<Entry> scan(String keyspace, String sourceTable)
    {
        ColumnFamilyStore cfs = ColumnFamilyStore.getIfExists(keyspace, BackupMap.companionOf(sourceTable));
        if (cfs == null)
            return List.of();
        TableMetadata metadata = cfs.metadata();
        ColumnMetadata masterColumn = metadata.getColumn(ColumnIdentifier.getInterned("master", true));
        ColumnMetadata taskColumn = metadata.getColumn(ColumnIdentifier.getInterned("task", true));
        ColumnMetadata resumeColumn = metadata.getColumn(ColumnIdentifier.getInterned("resume", true));
        Keyspace ks = Keyspace.open(keyspace);
        long nowInSec = FBUtilities.nowInSeconds();
        ColumnFilter columns = ColumnFilter.all(metadata);
        DataRange range = DataRange.allData(metadata.partitioner);
        List<Entry> out = new ArrayList<>();
        try (OpOrder.Group op = cfs.readOrdering.start();
             ColumnFamilyStore.RefViewFragment view = cfs.selectAndReference(View.selectFunction(SSTableSet.LIVE)))
        {
            List<UnfilteredPartitionIterator> sources = new ArrayList<>();
            for (Memtable memtable : view.memtables)
                sources.add(memtable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            for (SSTableReader sstable : view.sstables)
                sources.add(sstable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            if (sources.isEmpty())
                return out;
            try (PartitionIterator partitions = UnfilteredPartitionIterators.filter(
                     UnfilteredPartitionIterators.merge(sources, UnfilteredPartitionIterators.MergeListener.NOOP), nowInSec))
            {
                while (partitions.hasNext())
                {
                    try (RowIterator rows = partitions.next())
                    {
                        DecoratedKey key = rows.partitionKey();
                        List<InetAddressAndPort> replicas = new ArrayList<>();
                        for (Replica replica : ks.getReplicationStrategy().getNaturalReplicasForToken(key.getToken()))
                            replicas.add(replica.endpoint());
                        while (rows.hasNext())
                        {
                            Row row = rows.next();
                            Cell<?> task = row.getCell(taskColumn);
                            if (task == null)
                                continue; // only a late resume update survived the delete: nothing to run
                            Cell<?> master = row.getCell(masterColumn);
                            Cell<?> resume = row.getCell(resumeColumn);
                            try
                            {
                                out.add(new Entry(Task.deserialize(task.buffer()),
                                                  master == null ? "" : StandardCharsets.UTF_8.decode(master.buffer().duplicate()).toString(),
                                                  replicas, resume == null ? null : BackupMap.decodeResume(resume.buffer())));
                            }
                            catch (IllegalArgumentException e)
                            {
                                logger.warn("Backup map {}.{}: unreadable entry skipped: {}", keyspace, BackupMap.companionOf(sourceTable), e.getMessage());
                            }
                        }
                    }
                }
            }
        }
        return out;
    }
}
