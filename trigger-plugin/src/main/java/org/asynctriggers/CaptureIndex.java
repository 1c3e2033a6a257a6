package org.asynctriggers;

import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

import org.apache.cassandra.concurrent.NamedThreadFactory;
import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.memtable.AbstractAllocatorMemtable;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.IndexRegistry;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.utils.memory.MemtablePool;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.UnflushedEntries;
import org.asynctriggers.capture.CaptureOptions;
import org.asynctriggers.capture.CaptureSink;
import org.asynctriggers.capture.CaptureStage;
import org.asynctriggers.capture.WriteCapture;
import org.asynctriggers.spec.FlowSpecException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code CREATE CUSTOM INDEX ... ON ks.t () USING 'org.asynctriggers.CaptureIndex' WITH OPTIONS = {'flows': ...}}:
 * where a task is captured (docs/design.md, "Capture"). Cassandra calls its indexer ({@link WriteCapture}) on every
 * replica as the replica applies a write to the table, whatever brought the write (a client's coordinator, a hint,
 * batchlog replay, read repair, commit log replay at boot), inside the write and before the replica acknowledges it:
 * the report's slave step S1-S3. Once the write is done the node's {@link CaptureStage} writes the tasks' backup
 * entries and hands the tasks to the node's {@link org.asynctriggers.flows.Intake}.
 * Its class name is in every deployed capture index, so it stays in this package.
 *
 * <p>Queries never use it: it supports no expression and has no data of its own.
 */
public final class CaptureIndex implements Index
{
    private static final Logger logger = LoggerFactory.getLogger(CaptureIndex.class);

    private final ColumnFamilyStore baseCfs;
    private volatile IndexMetadata metadata;
    private volatile CaptureOptions options;
    private final WriteCapture.ErrorLog errors = new WriteCapture.ErrorLog();
    /** the source table's backup map on this node as last looked up (docs/design.md, "Capture") */
    private volatile BackupTable.Store companion;
    /** The node is looked up when a write has tasks, inside the capture's guard: a write never fails for it. */
    private static final CaptureSink NODE_INTAKE =
        (keyspace, token, tasks, withEntries) -> Node.get().intake().captured(keyspace, token, tasks, withEntries);
    /** A capture's entries and hand-over run after its write (docs/design.md, "Capture"). */
    private static final java.util.function.Consumer<CaptureStage.Capture> NODE_STAGE = capture -> CaptureStage.node().hand(capture);

    /** The share of the memtables' memory in use, on or off heap, the larger (what makes a write wait for room). */
    private static double memtableUse()
    {
        MemtablePool pool = AbstractAllocatorMemtable.MEMORY_POOL;
        return Math.max(pool.onHeap.usedRatio(), pool.offHeap.usedRatio());
    }

    public CaptureIndex(ColumnFamilyStore baseCfs, IndexMetadata metadata)
    {
        this.baseCfs = baseCfs;
        this.metadata = metadata;
        this.options = optionsOf(metadata);
        if (SupportedVersion.here())
            Node.get(); // starts the node's plugin once the node serves (takeover of its entries at boot)
    }

    /** Called by Cassandra on CREATE CUSTOM INDEX: a bad option is refused with the culprit named. */
    public static Map<String, String> validateOptions(Map<String, String> options)
    {
        try
        {
            CaptureOptions.parse(options);
        }
        catch (FlowSpecException e)
        {
            throw new ConfigurationException(e.getMessage());
        }
        return Collections.emptyMap();
    }

    private static CaptureOptions optionsOf(IndexMetadata metadata)
    {
        try
        {
            return CaptureOptions.parse(metadata.options);
        }
        catch (FlowSpecException e)
        {
            logger.error("Capture index {} has unreadable options, nothing is captured: {}", metadata.name, e.getMessage());
            return CaptureOptions.NONE;
        }
    }

    @Override
    public Indexer indexerFor(DecoratedKey key, RegularAndStaticColumns columns, long nowInSec, WriteContext ctx,
                              IndexTransaction.Type transactionType, Memtable memtable)
    {
        CaptureOptions current = options;
        if (transactionType != IndexTransaction.Type.UPDATE || current.flows.isEmpty() || !SupportedVersion.here())
            return null; // compaction and cleanup are no writes; an unsupported Cassandra captures nothing
        if (isStreamed(Thread.currentThread().getName()))
        {
            if (!streamedSeen)
            {
                streamedSeen = true;
                logger.info("Rows streamed into the table of capture index {} (bootstrap, decommission, repair, rebuild) "
                            + "are not captured: their writes were captured by the replicas that applied them", metadata.name);
            }
            return null;
        }
        return new WriteCapture(baseCfs.metadata(), key, current, ctx, NODE_INTAKE, this::companion, errors, NODE_STAGE,
                                CaptureIndex::memtableUse);
    }

    /** The source table's backup map on this node, looked up again only when it was dropped or altered. */
    private BackupTable.Store companion()
    {
        BackupTable.Store last = companion;
        BackupTable.Store now = BackupTable.Store.of(baseCfs.getKeyspaceName(), baseCfs.name, last);
        if (now != last)
            companion = now;
        return now;
    }

    /**
     * Whether the thread applying a write is Cassandra's stream receiver: for a table with {@code cdc = true} or
     * materialized views, it applies every streamed partition through the write path, indexes included
     * (CassandraStreamReceiver#sendThroughWritePath, on the StreamReceiveTask threads). Such rows are not writes: a
     * replica streams what it holds, which was captured when it was written; capturing it again would run every task
     * of the ranges moved (a bootstrap of a CDC table re-ran them all). Streams of other tables add sstables, which
     * no index sees: the same rule for every table.
     */
    static boolean isStreamed(String threadName)
    {
        // a node's thread names carry a prefix of the process's (set by in-JVM test clusters; empty in a node);
        // compared in place: this runs on every write
        String prefix = NamedThreadFactory.globalPrefix();
        return threadName.startsWith(prefix) && threadName.startsWith(STREAM_RECEIVER_THREADS, prefix.length());
    }

    /** The name of Cassandra 5.0's stream receiver executor (StreamReceiveTask), its threads' name prefix. */
    private static final String STREAM_RECEIVER_THREADS = "StreamReceiveTask";
    private volatile boolean streamedSeen;

    // ---- an index with no data and no queries ----

    @Override
    public Callable<?> getInitializationTask()
    {
        return null; // existing rows get no tasks: only writes from now on are captured
    }

    @Override
    public IndexMetadata getIndexMetadata()
    {
        return metadata;
    }

    @Override
    public Callable<?> getMetadataReloadTask(IndexMetadata indexMetadata)
    {
        return () -> {
            metadata = indexMetadata;
            options = optionsOf(indexMetadata);
            return null;
        };
    }

    @Override
    public void register(IndexRegistry registry)
    {
        registry.registerIndex(this);
    }

    @Override
    public Optional<ColumnFamilyStore> getBackingTable()
    {
        return Optional.empty();
    }

    @Override
    public Callable<?> getBlockingFlushTask()
    {
        return null;
    }

    /**
     * Cassandra runs this as it flushes the source table's memtable, once every write to it finished and before it
     * releases their commit log records: the backup entries those writes left in the backup map's memtables are
     * written again with records of their own ({@link UnflushedEntries}). If that fails, the map's own flush is asked
     * for (not waited for: it may queue behind this flush) and the failure thrown: the source's flush then fails and
     * keeps its commit log, whose replay would capture the entries again.
     */
    @Override
    public Callable<?> getBlockingFlushTask(Memtable sourceMemtable)
    {
        return () -> {
            BackupTable.Store store = null;
            try
            {
                store = companion();
                if (store != null)
                {
                    int written = UnflushedEntries.log(store.cfs());
                    if (written > 0)
                        logger.debug("Flush of {}.{}: {} unflushed backup entries written again with commit log records",
                                     baseCfs.getKeyspaceName(), baseCfs.name, written);
                }
            }
            catch (RuntimeException | AssertionError e)
            {
                logger.error("Flush of {}.{}: the unflushed backup entries of its writes could not be written again; the "
                             + "flush fails and keeps its commit log, and the backup map is flushed",
                             baseCfs.getKeyspaceName(), baseCfs.name, e);
                if (store != null)
                    store.cfs().forceFlush(ColumnFamilyStore.FlushReason.INTERNALLY_FORCED);
                throw e;
            }
            return null;
        };
    }

    @Override
    public Callable<?> getInvalidateTask()
    {
        return null;
    }

    @Override
    public Callable<?> getTruncateTask(long truncatedAt)
    {
        return null;
    }

    @Override
    public boolean shouldBuildBlocking()
    {
        return false; // streamed and imported sstables are no writes: they get no tasks
    }

    /**
     * Cassandra asks before {@code ALTER TABLE ... DROP} of a column and {@code RENAME} of a key column, and refuses
     * with "Cannot drop column x because it has dependent secondary indexes (async_capture_...)" when this says yes,
     * as it does for a materialized view's columns: a deployed flow names the source's key columns and the columns
     * its tasks carry (docs/design.md, "Schema changes"). Drop or redeploy the flow without the column first.
     */
    @Override
    public boolean dependsOn(ColumnMetadata column)
    {
        // Cassandra also asks it to validate vector searches (StatementRestrictions): a vector column we claimed
        // would read as indexed there, so a vector column is never claimed (dropping one a flow uses is not refused)
        if (column.type.isVector())
            return false;
        return dependsOn(options, column.isPrimaryKeyColumn(), column.name.toString());
    }

    static boolean dependsOn(CaptureOptions options, boolean keyColumn, String column)
    {
        if (options.flows.isEmpty())
            return false;
        if (keyColumn)
            return true;
        for (CaptureOptions.FlowCapture flow : options.flows)
            if (flow.columns != null && flow.columns.contains(column))
                return true;
        return false;
    }

    @Override
    public boolean supportsExpression(ColumnMetadata column, Operator operator)
    {
        return false;
    }

    @Override
    public AbstractType<?> customExpressionValueType()
    {
        return null;
    }

    @Override
    public RowFilter getPostIndexQueryFilter(RowFilter filter)
    {
        return filter;
    }

    @Override
    public long getEstimatedResultRows()
    {
        return 0;
    }

    @Override
    public void validate(PartitionUpdate update, ClientState state) throws InvalidRequestException
    {
    }

    @Override
    public Searcher searcherFor(ReadCommand command)
    {
        throw new UnsupportedOperationException("the async triggers capture index answers no queries");
    }
}
