package org.asynctriggers.cql;

import java.util.ArrayList;
import java.util.List;

import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.lifecycle.SSTableSet;
import org.apache.cassandra.db.lifecycle.View;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterators;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.io.sstable.SSTableReadsListener;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.concurrent.OpOrder;

/**
 * The live rows of a table's local replica, read from its memtables and sstables directly: a CQL read would count
 * the tombstones it passes against {@code tombstone_failure_threshold} and fail on a table with many deletes (a
 * backup map's completed entries, a follows table's unfollows), this reads past them. The visitor runs while the read
 * holds the table's read order: it must not wait (no reads or writes through the cluster), and it copies what it
 * keeps of a row (a memtable's cells may live off heap).
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

    /** Visits every live row (static rows included) of the local replica of {@code cfs}'s table. */
    public static void scan(ColumnFamilyStore cfs, Visitor visitor)
    {
        TableMetadata metadata = cfs.metadata();
        long nowInSec = FBUtilities.nowInSeconds();
        ColumnFilter columns = ColumnFilter.all(metadata);
        DataRange range = DataRange.allData(metadata.partitioner);
        try (OpOrder.Group op = cfs.readOrdering.start();
             ColumnFamilyStore.RefViewFragment view = cfs.selectAndReference(View.selectFunction(SSTableSet.LIVE)))
        {
            List<UnfilteredPartitionIterator> sources = new ArrayList<>();
            for (Memtable memtable : view.memtables)
                sources.add(memtable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            for (SSTableReader sstable : view.sstables)
                sources.add(sstable.partitionIterator(columns, range, SSTableReadsListener.NOOP_LISTENER));
            if (sources.isEmpty())
                return;
            try (PartitionIterator partitions = UnfilteredPartitionIterators.filter(
                     UnfilteredPartitionIterators.merge(sources, UnfilteredPartitionIterators.MergeListener.NOOP), nowInSec))
            {
                while (partitions.hasNext())
                {
                    try (RowIterator rows = partitions.next())
                    {
                        DecoratedKey key = rows.partitionKey();
                        if (!rows.staticRow().isEmpty())
                            visitor.visit(key, rows.staticRow());
                        while (rows.hasNext())
                            visitor.visit(key, rows.next());
                    }
                }
            }
        }
    }
}
