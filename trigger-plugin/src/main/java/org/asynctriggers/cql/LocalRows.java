package org.asynctriggers.cql;

import java.util.ArrayList;
import java.util.List;

import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.PartitionPosition;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.lifecycle.SSTableSet;
import org.apache.cassandra.db.lifecycle.View;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterators;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.io.sstable.SSTableReadsListener;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.concurrent.OpOrder;
import org.apache.cassandra.utils.memory.HeapCloner;

/**
 * The live rows of a table's local replica, read from its memtables and sstables directly: a CQL read would count
 * the tombstones it passes against {@code tombstone_failure_threshold} and fail on a table with many deletes (a
 * backup map's completed entries, a follows table's unfollows), this reads past them. The visitor runs while the read
 * holds the table's read order: it must not wait (no reads or writes through the cluster), and it copies what it
 * keeps of a row (a memtable's cells may live off heap). The scan goes in pages of partitions, each under its own
 * hold: a partition written between two pages may be visited or not, as in any scan of a table being written.
 */
public final class LocalRows
{
    public interface Visitor
    {
        void visit(DecoratedKey key, Row row);
    }

    private LocalRows()
    {
    }

    /** Partitions read under one hold of the table's read order: a flush's reclaim waits for a hold to end. */
    public static final int PARTITIONS_PER_PAGE = 1_000;

    /** Visits every live row (static rows included) of the local replica of {@code cfs}'s table. */
    public static void scan(ColumnFamilyStore cfs, Visitor visitor)
    {
        scan(cfs, PARTITIONS_PER_PAGE, visitor, () -> {});
    }

    /**
     * Visits every live row in pages of {@code partitionsPerPage} partitions, each read under its own hold of the read
     * order (a scan of a large table must not keep a flushed memtable's memory from being reclaimed while it goes),
     * and runs {@code afterPage} after each page, the hold released: where the caller may wait.
     */
    public static void scan(ColumnFamilyStore cfs, int partitionsPerPage, Visitor visitor, Runnable afterPage)
    {
        scan(cfs, true, partitionsPerPage, visitor, afterPage);
    }

    /**
     * As {@link #scan(ColumnFamilyStore, int, Visitor, Runnable)}, the rows of the memtables alone (the current one and
     * those being flushed): what is not in an sstable yet.
     */
    public static void scanMemtables(ColumnFamilyStore cfs, int partitionsPerPage, Visitor visitor, Runnable afterPage)
    {
        scan(cfs, false, partitionsPerPage, visitor, afterPage);
    }

    private static void scan(ColumnFamilyStore cfs, boolean sstables, int partitionsPerPage, Visitor visitor, Runnable afterPage)
    {
        TableMetadata metadata = cfs.metadata();
        ColumnFilter columns = ColumnFilter.all(metadata);
        PartitionPosition end = metadata.partitioner.getMinimumToken().maxKeyBound();
        PartitionPosition after = null;
        while (true)
        {
            DataRange range = after == null ? DataRange.allData(metadata.partitioner) : DataRange.forKeyRange(new Range<>(after, end));
            DecoratedKey last = page(cfs, sstables, columns, range, partitionsPerPage, visitor);
            afterPage.run();
            if (last == null)
                return;
            after = last;
        }
    }

    /** @return the last partition read when the page is full (more may follow), null when the table ended */
    private static DecoratedKey page(ColumnFamilyStore cfs, boolean sstables, ColumnFilter columns, DataRange range,
                                     int partitionsPerPage, Visitor visitor)
    {
        long nowInSec = FBUtilities.nowInSeconds();
        try (OpOrder.Group op = cfs.readOrdering.start();
             ColumnFamilyStore.RefViewFragment view = cfs.selectAndReference(View.selectFunction(SSTableSet.LIVE)))
        {
            List<UnfilteredPartitionIterator> sources = new ArrayList<>();
            for (Memtable memtable : view.memtables)
                sources.add(memtable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            if (sstables)
                for (SSTableReader sstable : view.sstables)
                    sources.add(sstable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            if (sources.isEmpty())
                return null;
            try (PartitionIterator partitions = UnfilteredPartitionIterators.filter(
                     UnfilteredPartitionIterators.merge(sources, UnfilteredPartitionIterators.MergeListener.NOOP), nowInSec))
            {
                DecoratedKey last = null;
                for (int n = 0; partitions.hasNext(); n++)
                {
                    if (n == partitionsPerPage)
                        return last;
                    try (RowIterator rows = partitions.next())
                    {
                        last = HeapCloner.instance.clone(rows.partitionKey()); // read after the hold: off a memtable's memory
                        if (!rows.staticRow().isEmpty())
                            visitor.visit(last, rows.staticRow());
                        while (rows.hasNext())
                            visitor.visit(last, rows.next());
                    }
                }
                return null;
            }
        }
    }
}
