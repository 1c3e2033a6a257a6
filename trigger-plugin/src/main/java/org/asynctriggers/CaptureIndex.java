package org.asynctriggers;

import org.asynctriggers.backup.BackupMap;
import org.asynctriggers.capture.CaptureOptions;
import org.asynctriggers.capture.TaskExtractor;
import org.asynctriggers.spec.FlowSpecException;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.IndexRegistry;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.ClientState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code CREATE CUSTOM INDEX ... ON ks.t () USING 'org.asynctriggers.CaptureIndex' WITH OPTIONS = {'flows': ...}}:
 * where a task is captured (docs/design.md, "Capture"). Cassandra calls its indexer on every replica as the replica
 * applies a write to the table, whatever brought the write (a client's coordinator, a hint, batchlog replay, read
 * repair, commit log replay at boot), inside the write and before the replica acknowledges it: the report's slave
 * step S1-S3. The indexer turns the write into one task per flow and event, writes their backup entries on this
 * replica (a local commit log record and memtable row, no message), and hands the tasks to the node's runtime, which
 * queues them when this node executes the row. It never fails a write it sees: the write is applied already.
 *
 * <p>Queries never use it: it supports no expression and has no data of its own.
 */
public final class CaptureIndex implements Index
{
    private static final Logger logger = LoggerFactory.getLogger(CaptureIndex.class);
    private static final long ERROR_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final ColumnFamilyStore baseCfs;
    private volatile IndexMetadata metadata;
    private volatile CaptureOptions options;
    private final AtomicLong nextErrorLog = new AtomicLong(System.nanoTime());

    public CaptureIndex(ColumnFamilyStore baseCfs, IndexMetadata metadata)
    {
        this.baseCfs = baseCfs;
        this.metadata = metadata;
        this.options = optionsOf(metadata);
        TriggerRuntime.get(); // starts the node's runtime once the node serves (takeover of its entries at boot)
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
        if (transactionType != IndexTransaction.Type.UPDATE || current.flows.isEmpty())
            return null; // compaction and cleanup are no writes
        return new Capture(baseCfs.metadata(), key, current, ctx);
    }

    /** The events of one partition update on this replica. */
    private final class Capture implements Indexer
    {
        private final TableMetadata table;
        private final DecoratedKey key;
        private final CaptureOptions options;
        private final WriteContext ctx;
        private TaskExtractor.Collector changes;

        Capture(TableMetadata table, DecoratedKey key, CaptureOptions options, WriteContext ctx)
        {
            this.table = table;
            this.key = key;
            this.options = options;
            this.ctx = ctx;
        }

        private TaskExtractor.Collector changes()
        {
            if (changes == null)
                changes = new TaskExtractor.Collector(table, key.getKey());
            return changes;
        }

        @Override
        public void partitionDelete(DeletionTime deletionTime)
        {
            guard(() -> changes().partitionDelete(deletionTime));
        }

        @Override
        public void rangeTombstone(RangeTombstone tombstone)
        {
            guard(() -> changes().rangeTombstone(tombstone));
        }

        @Override
        public void insertRow(Row row)
        {
            guard(() -> changes().inserted(row));
        }

        @Override
        public void updateRow(Row oldRowData, Row newRowData)
        {
            guard(() -> changes().updated(oldRowData, newRowData));
        }

        @Override
        public void finish()
        {
            if (changes != null && !changes.changes().isEmpty())
                guard(this::record);
        }

        private void record()
        {
            long now = System.nanoTime();
            List<Task> tasks = new ArrayList<>();
            List<Task> backedUp = new ArrayList<>();
            for (SourceChange change : changes.changes())
            {
                for (CaptureOptions.FlowCapture flow : options.flows)
                {
                    if (!flow.handles(change.operation))
                        continue;
                    Task task = Task.captured(flow.name, change, now);
                    tasks.add(task);
                    if (flow.backup)
                        backedUp.add(task);
                }
            }
            if (!backedUp.isEmpty())
                writeEntries(backedUp);
            TriggerRuntime.get().captured(table.keyspace, key.getToken(), tasks, backedUp.size());
        }

        private void writeEntries(List<Task> backedUp)
        {
            TableMetadata companion = Schema.instance.getTableMetadata(table.keyspace, BackupMap.companionOf(table.name));
            if (companion == null)
            {
                logRateLimited("table " + table.keyspace + '.' + BackupMap.companionOf(table.name) + " is missing: tasks of "
                               + table + " have no backup entries (redeploy its flows)", null);
                return;
            }
            PartitionUpdate entries = BackupMap.entries(companion, key, backedUp, System.currentTimeMillis());
            BackupMap.applyLocally(entries, ctx);
        }

        private void guard(Runnable step)
        {
            try
            {
                step.run();
            }
            catch (RuntimeException | AssertionError e)
            {
                logRateLimited("could not capture a write of " + table + " on this replica", e);
            }
        }
    }

    private void logRateLimited(String what, Throwable e)
    {
        long now = System.nanoTime();
        long next = nextErrorLog.get();
        if (now - next >= 0 && nextErrorLog.compareAndSet(next, now + ERROR_LOG_INTERVAL_NANOS))
            logger.error("Async trigger capture: {}", what, e);
    }

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

    @Override
    public boolean dependsOn(ColumnMetadata column)
    {
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
