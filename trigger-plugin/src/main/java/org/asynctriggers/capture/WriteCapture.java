package org.asynctriggers.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The events of one partition update on this replica (docs/design.md, "Capture"): turned into one task per flow and
 * event, whose backup entries are written on this replica (a memtable row, no commit log record, no message),
 * then handed to the {@link CaptureSink}. It never fails the write: the write is applied already.
 */
public final class WriteCapture implements Index.Indexer
{
    private final TableMetadata table;
    private final DecoratedKey key;
    private final CaptureOptions options;
    private final WriteContext ctx;
    private final CaptureSink sink;
    /** the source table's backup map on this node, as it is now (null when missing) */
    private final Supplier<BackupTable.Store> companions;
    private final ErrorLog errors;
    private final LongSupplier nanoClock;
    private final LongSupplier wallClockMillis;
    private TaskExtractor.Collector changes;
    private final List<String> keyColumns;

    /** Errors of one capture index, logged at most once every 10 s. */
    public static final class ErrorLog
    {
        private static final Logger logger = LoggerFactory.getLogger("org.asynctriggers.CaptureIndex"); // its errors' logger, as before the split
        private static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
        private final LongSupplier nanoClock;
        private final AtomicLong next;

        public ErrorLog()
        {
            this(System::nanoTime);
        }

        public ErrorLog(LongSupplier nanoClock)
        {
            this.nanoClock = nanoClock;
            this.next = new AtomicLong(nanoClock.getAsLong());
        }

        void log(String what, Throwable e)
        {
            long now = nanoClock.getAsLong();
            long at = next.get();
            if (now - at >= 0 && next.compareAndSet(at, now + INTERVAL_NANOS))
                logger.error("Async trigger capture: {}", what, e);
        }
    }

    public WriteCapture(TableMetadata table, DecoratedKey key, CaptureOptions options, WriteContext ctx, CaptureSink sink,
                        Supplier<BackupTable.Store> companions, ErrorLog errors)
    {
        this(table, key, options, ctx, sink, companions, errors, System::nanoTime, System::currentTimeMillis);
    }

    /**
     * {@code nanoClock}: what a task's age (its retries' {@code max_age_ms}) counts from; {@code wallClockMillis}: the
     * {@code captured} time of its backup entries (the safety net's age).
     */
    public WriteCapture(TableMetadata table, DecoratedKey key, CaptureOptions options, WriteContext ctx, CaptureSink sink,
                        Supplier<BackupTable.Store> companions, ErrorLog errors, LongSupplier nanoClock,
                        LongSupplier wallClockMillis)
    {
        this.companions = companions;
        this.nanoClock = nanoClock;
        this.wallClockMillis = wallClockMillis;
        this.table = table;
        this.key = key;
        this.options = options;
        this.ctx = ctx;
        this.sink = sink;
        this.errors = errors;
        List<String> keys = new ArrayList<>();
        table.primaryKeyColumns().forEach(c -> keys.add(c.name.toString()));
        this.keyColumns = keys;
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
        long now = nanoClock.getAsLong();
        List<Task> tasks = new ArrayList<>();
        List<Task> backedUp = new ArrayList<>();
        for (SourceChange change : changes.changes())
        {
            for (CaptureOptions.FlowCapture flow : options.flows)
            {
                if (!flow.handles(change.operation))
                    continue;
                Task task = Task.captured(flow.name, flow.columns == null ? change : change.keeping(flow.columns, keyColumns), now);
                tasks.add(task);
                if (flow.backup)
                    backedUp.add(task);
            }
        }
        List<Task> withEntries = List.of();
        if (!backedUp.isEmpty())
        {
            try
            {
                if (writeEntries(backedUp) > 0)
                    withEntries = backedUp;
            }
            catch (RuntimeException | AssertionError e)
            {
                // the tasks still go to the node: its queue is then their only copy (the coordinator's trigger refuses
                // writes whose entries would not fit in a commit log record; a hint or a replay may still bring one)
                errors.log("backup entries of a write of " + table + " could not be written here; its tasks run without them", e);
            }
        }
        if (!tasks.isEmpty())
            sink.captured(table.keyspace, key.getToken(), tasks, withEntries);
    }

    /** @return how many entries were written */
    private int writeEntries(List<Task> backedUp)
    {
        BackupTable.Store companion = companions.get();
        if (companion == null)
        {
            errors.log("table " + table.keyspace + '.' + BackupTable.companionOf(table.name) + " is missing: tasks of "
                       + table + " have no backup entries (redeploy its flows)", null);
            return 0;
        }
        PartitionUpdate entries = BackupTable.entries(companion, key, backedUp, wallClockMillis.getAsLong());
        BackupTable.applyLocally(companion, entries, ctx);
        return backedUp.size();
    }

    private void guard(Runnable step)
    {
        try
        {
            step.run();
        }
        catch (RuntimeException | AssertionError | LinkageError e)
        {
            errors.log("could not capture a write of " + table + " on this replica", e);
        }
    }
}
