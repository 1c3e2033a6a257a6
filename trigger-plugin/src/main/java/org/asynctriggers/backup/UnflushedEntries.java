package org.asynctriggers.backup;

import java.util.ArrayList;
import java.util.List;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.commitlog.CommitLog;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterators;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.io.sstable.SSTableReadsListener;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.concurrent.OpOrder;

/**
 * What keeps a backup entry through a crash once its source write's commit log record is gone (docs/design.md,
 * "Capture"). A replica writes a write's entries to the backup map's memtable with no commit log record of their own:
 * while the source write's record is in the commit log, its replay at boot captures the entries again. When the
 * source table's memtable is flushed, Cassandra may recycle that record; so the capture index, which Cassandra asks
 * to flush with the source's memtable before it releases the commit log (after every write to that memtable has
 * finished, entries included), logs the backup map's live entries still in memtables as commit log records of the
 * backup map, which then hold them until the map's own memtable is flushed. Most entries are completed within
 * milliseconds of their write: what is logged is the backlog the memtables hold, not every write.
 */
public final class UnflushedEntries
{
    private UnflushedEntries()
    {
    }

    /**
     * What one commit log record may hold: Cassandra's largest mutation less room for its framing (the coordinator's
     * trigger refuses a write whose entries would not fit, so one write's entry always does).
     */
    public static long recordLimit()
    {
        return DatabaseDescriptor.getMaxMutationSize() - 64 * 1024;
    }

    /**
     * Logs the live entries of the backup map's memtables (the current one and those being flushed), a partition's
     * rows split over several records where they would not fit in one. A record the commit log refuses does not stop
     * the others; the first refusal is thrown once all were tried (the caller then has the map flushed).
     * @return how many entries were logged
     */
    public static int log(ColumnFamilyStore companion)
    {
        TableMetadata metadata = companion.metadata();
        ColumnFilter columns = ColumnFilter.all(metadata);
        DataRange all = DataRange.allData(metadata.partitioner);
        ColumnMetadata task = metadata.getColumn(ColumnIdentifier.getInterned("task", true));
        if (task == null)
            return 0; // not a backup map of this plugin's layout (its scan warns)
        long limit = recordLimit();
        Refusals refusals = new Refusals();
        int logged = 0;
        // the memtables' rows are read and logged under one hold of the read order: a flushed memtable's memory
        // (perhaps off heap) is not reclaimed while a row of it is being serialized into the commit log
        try (OpOrder.Group op = companion.readOrdering.start())
        {
            List<UnfilteredPartitionIterator> sources = new ArrayList<>();
            for (Memtable memtable : companion.getTracker().getView().getAllMemtables())
                sources.add(memtable.partitionIterator(columns, all, SSTableReadsListener.NOOP_LISTENER));
            if (sources.isEmpty())
                return 0;
            try (PartitionIterator partitions = UnfilteredPartitionIterators.filter(
                     UnfilteredPartitionIterators.merge(sources, UnfilteredPartitionIterators.MergeListener.NOOP),
                     FBUtilities.nowInSeconds()))
            {
                while (partitions.hasNext())
                {
                    try (RowIterator rows = partitions.next())
                    {
                        logged += log(metadata, task, rows, limit, refusals);
                    }
                }
            }
        }
        if (refusals.first != null)
            throw new IllegalStateException(refusals.count + " records of unflushed backup entries of " + metadata
                                            + " could not be logged (" + logged + " entries were)", refusals.first);
        return logged;
    }

    private static final class Refusals
    {
        int count;
        RuntimeException first;

        void add(RuntimeException e)
        {
            if (count++ == 0)
                first = e;
        }
    }

    private static int add(PartitionUpdate.Builder record, Refusals refusals)
    {
        PartitionUpdate update = record.build();
        try
        {
            CommitLog.instance.add(new Mutation(update));
            return update.rowCount();
        }
        catch (RuntimeException e)
        {
            refusals.add(e);
            return 0;
        }
    }

    private static int log(TableMetadata metadata, ColumnMetadata task, RowIterator rows, long limit, Refusals refusals)
    {
        int logged = 0;
        PartitionUpdate.Builder record = null;
        long size = 0;
        while (rows.hasNext())
        {
            Row row = rows.next();
            if (row.getCell(task) == null)
                continue; // only a late resume update survived a completion here: nothing to keep
            long rowSize = row.dataSize();
            if (record != null && size + rowSize > limit)
            {
                logged += add(record, refusals);
                record = null;
            }
            if (record == null)
            {
                record = new PartitionUpdate.Builder(metadata, rows.partitionKey(), metadata.regularAndStaticColumns(), 16);
                size = 0;
            }
            record.add(row);
            size += rowSize;
        }
        if (record != null)
            logged += add(record, refusals);
        return logged;
    }

}
