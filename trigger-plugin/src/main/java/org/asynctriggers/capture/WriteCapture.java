package org.asynctriggers.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.apache.cassandra.db.CassandraWriteContext;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.concurrent.OpOrder;
import org.apache.cassandra.utils.memory.HeapCloner;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The events of one partition update on this replica (docs/design.md, "Capture"): turned into row changes as the
 * write applies (copied off the write's buffers); then, on the {@link CaptureStage} once the write is done, into one
 * task per flow and event, whose backup entries are written on this replica (a memtable row, no commit log record, no
 * message), and the tasks handed to the {@link CaptureSink}. It never fails the write: the write is applied already.
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
    /** where the tasks are made, their entries written and the tasks handed on, after the write */
    private final Consumer<CaptureStage.Capture> stage;
    /** the share of the memtables' memory in use (Cassandra's memtable pool, on or off heap, the larger) */
    private final DoubleSupplier memtableUse;
    /**
     * From this share of the memtables' memory in use on, a write writes its own entries (as a write waits for room
     * it is allowed past a flush that waits for it), and the stage runs a capture only once a flush waits for it.
     */
    static final double MEMTABLE_PRESSED = 0.9;
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

    /** A capture that finishes inside its write (no stage). */
    public WriteCapture(TableMetadata table, DecoratedKey key, CaptureOptions options, WriteContext ctx, CaptureSink sink,
                        Supplier<BackupTable.Store> companions, ErrorLog errors)
    {
        this(table, key, options, ctx, sink, companions, errors, Runnable::run, () -> 0);
    }

    /**
     * {@code stage}: runs what the capture does once the write is done ({@link CaptureStage#hand}); {@code
     * memtableUse}: the share of the memtables' memory in use now.
     */
    public WriteCapture(TableMetadata table, DecoratedKey key, CaptureOptions options, WriteContext ctx, CaptureSink sink,
                        Supplier<BackupTable.Store> companions, ErrorLog errors, Consumer<CaptureStage.Capture> stage,
                        DoubleSupplier memtableUse)
    {
        this(table, key, options, ctx, sink, companions, errors, System::nanoTime, System::currentTimeMillis, stage, memtableUse);
    }

    /**
     * {@code nanoClock}: what a task's age (its retries' {@code max_age_ms}) counts from; {@code wallClockMillis}: the
     * {@code captured} time of its backup entries (the safety net's age).
     */
    public WriteCapture(TableMetadata table, DecoratedKey key, CaptureOptions options, WriteContext ctx, CaptureSink sink,
                        Supplier<BackupTable.Store> companions, ErrorLog errors, LongSupplier nanoClock,
                        LongSupplier wallClockMillis, Consumer<CaptureStage.Capture> stage, DoubleSupplier memtableUse)
    {
        this.stage = stage;
        this.memtableUse = memtableUse;
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
        long capturedMillis = wallClockMillis.getAsLong();
        List<SourceChange> captured = new ArrayList<>(changes.changes().size());
        for (SourceChange change : changes.changes())
            captured.add(change.detached());
        // the key as the capture's own copy: the write's may lie in a buffer its request gives back when done
        DecoratedKey ownKey = HeapCloner.instance.clone(key);
        if (!options.anyBackup() || ctx == null)
        {
            stage.accept(new AfterWrite(this, ownKey, captured, now, capturedMillis, null, false));
            return;
        }
        OpOrder.Group write = CassandraWriteContext.fromContext(ctx).getGroup();
        OpOrder.Group held = memtableUse.getAsDouble() >= MEMTABLE_PRESSED ? null : hold(write);
        if (held == null)
            new AfterWrite(this, ownKey, captured, now, capturedMillis, write, false).run();
        else
            stage.accept(new AfterWrite(this, ownKey, captured, now, capturedMillis, held, true));
    }

    /**
     * The write's own operation group, registered once more for the entries written after the write: every flush
     * that waits for the write waits for its entries too (the source's flush writes the unflushed entries again once
     * they are in the backup map's memtables, docs/design.md "Capture"), and a flush that waits for them lets their
     * memtable allocation through. Null when the group current now is a later one (a barrier came between: a flush
     * may already have stopped waiting for the write): the entries are then written inside the write, in its group,
     * as they are when the memtables' memory is short ({@link #MEMTABLE_PRESSED}).
     */
    private static OpOrder.Group hold(OpOrder.Group write)
    {
        OpOrder.Group held = Keyspace.writeOrder.start();
        if (held == write)
            return held;
        held.close();
        return null;
    }

    /**
     * What a capture does after its write (inside it when the stage is full, the memtables' memory short or a barrier
     * came between): the tasks made (their ids' digests are the capture's largest part), their entries written here,
     * the tasks handed on. It holds the capture's own copies and its collaborators, never the write's buffers.
     */
    private static final class AfterWrite implements CaptureStage.Capture
    {
        private final TableMetadata table;
        private final CaptureOptions options;
        private final List<String> keyColumns;
        private final CaptureSink sink;
        private final Supplier<BackupTable.Store> companions;
        private final ErrorLog errors;
        private final DoubleSupplier memtableUse;
        private final DecoratedKey key;
        private final List<SourceChange> captured;
        private final long now, capturedMillis;
        /** the write's group the entries are written in; null without entries (or a write, in unit tests) */
        private final OpOrder.Group group;
        /** whether the group is this capture's own registration, released once it ran */
        private final boolean release;

        AfterWrite(WriteCapture write, DecoratedKey key, List<SourceChange> captured, long now, long capturedMillis,
                   OpOrder.Group group, boolean release)
        {
            this.table = write.table;
            this.options = write.options;
            this.keyColumns = write.keyColumns;
            this.sink = write.sink;
            this.companions = write.companions;
            this.errors = write.errors;
            this.memtableUse = write.memtableUse;
            this.key = key;
            this.captured = captured;
            this.now = now;
            this.capturedMillis = capturedMillis;
            this.group = group;
            this.release = release;
        }

        @Override
        public boolean flushWaits()
        {
            return group != null && group.isBlocking();
        }

        @Override
        public boolean mayRun()
        {
            return group == null || group.isBlocking() || memtableUse.getAsDouble() < MEMTABLE_PRESSED;
        }

        @Override
        public void run()
        {
            try
            {
                finish();
            }
            finally
            {
                if (release)
                    group.close();
            }
        }

        private void finish()
        {
            List<Task> tasks = new ArrayList<>();
            List<Task> backedUp = new ArrayList<>();
            for (SourceChange change : captured)
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
            if (tasks.isEmpty())
                return;
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
            PartitionUpdate entries = BackupTable.entries(companion, key, backedUp, capturedMillis);
            BackupTable.applyLocally(companion, entries, group);
            return backedUp.size();
        }
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
