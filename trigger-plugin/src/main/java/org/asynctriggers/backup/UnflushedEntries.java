package org.asynctriggers.backup;

import java.util.ArrayList;
import java.util.List;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.PartitionPosition;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterators;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.io.sstable.SSTableReadsListener;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.concurrent.OpOrder;
import org.apache.cassandra.utils.memory.HeapCloner;

/**
 * What keeps a backup entry through a crash once its source write's commit log record is gone (docs/design.md,
 * "Capture"). A replica writes a write's entries to the backup map's memtable with no commit log record of their own:
 * while the source write's record is in the commit log, its replay at boot captures the entries again. When the
 * source table's memtable is flushed, Cassandra may recycle that record; so the capture index, which Cassandra asks
 * to flush with the source's memtable before it releases the commit log (after every write to that memtable has
 * finished, entries included), writes the backup map's live entries still in memtables again, as local writes with
 * commit log records: each record then lies in the range of the memtable that holds its rows, as commit log replay
 * requires (a record only logged could fall in a later memtable's range, flushed before the one holding the entry).
 * Most entries are completed within milliseconds of their write: what is written again is the backlog the memtables
 * hold, not every write.
 */
public final class UnflushedEntries
{
    /** Partitions copied under one hold of the read order (a flushed memtable's memory waits for a hold to end). */
    static final int PARTITIONS_PER_PAGE = 256;
    /** Bytes of rows copied under one hold, at most (with at least one partition). */
    static final long BYTES_PER_PAGE = 8L << 20;

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
     * Writes the live entries of the backup map's memtables (the current one and those being flushed) again, a
     * partition's rows split over several records where they would not fit in one; nothing in a keyspace without
     * durable writes (its source writes have no records either). A write that fails does not stop the others; the
     * first failure is thrown once all were tried.
     * @return how many entries were written
     */
    public static int log(ColumnFamilyStore companion)
    {
        Keyspace keyspace = companion.keyspace;
        if (!keyspace.getMetadata().params.durableWrites)
            return 0;
        TableMetadata metadata = companion.metadata();
        ColumnMetadata task = metadata.getColumn(ColumnIdentifier.getInterned("task", true));
        if (task == null)
            return 0; // not a backup map of this plugin's layout (its scan warns)
        PartitionPosition end = metadata.partitioner.getMinimumToken().maxKeyBound();
        Failures failures = new Failures();
        int written = 0;
        PartitionPosition after = null;
        while (true)
        {
            DataRange range = after == null ? DataRange.allData(metadata.partitioner) : DataRange.forKeyRange(new Range<>(after, end));
            Page page = page(companion, metadata, task, range);
            // written with the hold released: a write may wait (for the commit log, for memtable space)
            for (PartitionUpdate update : page.updates)
            {
                try
                {
                    keyspace.apply(new Mutation(update), true, false, false);
                    written += update.rowCount();
                }
                catch (RuntimeException e)
                {
                    failures.add(e);
                }
            }
            if (page.last == null)
                break;
            after = page.last;
        }
        if (failures.first != null)
            throw new IllegalStateException(failures.count + " writes of unflushed backup entries of " + metadata
                                            + " failed (" + written + " entries were written)", failures.first);
        return written;
    }

    /** Live entries copied out of the memtables, and the last partition read when more may follow (else null). */
    private static final class Page
    {
        final List<PartitionUpdate> updates = new ArrayList<>();
        DecoratedKey last;
    }

    private static Page page(ColumnFamilyStore companion, TableMetadata metadata, ColumnMetadata task, DataRange range)
    {
        Page page = new Page();
        ColumnFilter columns = ColumnFilter.all(metadata);
        long limit = recordLimit();
        try (OpOrder.Group op = companion.readOrdering.start())
        {
            List<UnfilteredPartitionIterator> sources = new ArrayList<>();
            for (Memtable memtable : companion.getTracker().getView().getAllMemtables())
                sources.add(memtable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            if (sources.isEmpty())
                return page;
            try (PartitionIterator partitions = UnfilteredPartitionIterators.filter(
                     UnfilteredPartitionIterators.merge(sources, UnfilteredPartitionIterators.MergeListener.NOOP),
                     FBUtilities.nowInSeconds()))
            {
                long bytes = 0;
                for (int n = 0; partitions.hasNext(); n++)
                {
                    if (n == PARTITIONS_PER_PAGE || bytes >= BYTES_PER_PAGE)
                        return page; // page.last set: more may follow
                    try (RowIterator rows = partitions.next())
                    {
                        page.last = HeapCloner.instance.clone(rows.partitionKey()); // used after the hold
                        bytes += copy(metadata, task, page.last, rows, limit, page.updates);
                    }
                }
            }
        }
        page.last = null;
        return page;
    }

    /** Copies the partition's entries (off the memtable's memory) into updates of at most {@code limit} bytes. */
    private static long copy(TableMetadata metadata, ColumnMetadata task, DecoratedKey key, RowIterator rows, long limit,
                             List<PartitionUpdate> out)
    {
        long total = 0;
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
                out.add(record.build());
                record = null;
            }
            if (record == null)
            {
                record = new PartitionUpdate.Builder(metadata, key, metadata.regularAndStaticColumns(), 16);
                size = 0;
            }
            record.add(row.clone(HeapCloner.instance));
            size += rowSize;
            total += rowSize;
        }
        if (record != null)
            out.add(record.build());
        return total;
    }

    private static final class Failures
    {
        int count;
        RuntimeException first;

        void add(RuntimeException e)
        {
            if (count++ == 0)
                first = e;
        }
    }
}
