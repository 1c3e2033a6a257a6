package org.asynctriggers.backup;

import java.util.ArrayList;
import java.util.List;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.memory.HeapCloner;
import org.asynctriggers.cql.LocalRows;

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
    /**
     * Rows per record, at most: a record is cut by its rows' data sizes, which leave out what serializing each row
     * adds (its flags, timestamps and lengths, a few dozen bytes); so many rows' additions stay well within the room
     * {@link #recordLimit} leaves for framing.
     */
    static final int ROWS_PER_RECORD = 1_000;

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
     * durable writes (its source writes have no records either). The rows are copied off the memtables a page of
     * partitions at a time and written once the page's hold of the read order ended (a write may wait, for the
     * commit log or for memtable space). A write that fails does not stop the others; the first failure is thrown
     * once all were tried.
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
        Copies copies = new Copies(metadata, recordLimit());
        int[] written = { 0 };
        List<RuntimeException> failures = new ArrayList<>();
        LocalRows.scanMemtables(companion, PARTITIONS_PER_PAGE, (key, row) -> {
            if (row.getCell(task) != null) // else only a late resume update survived a completion here
                copies.add(key, row);
        }, () -> {
            for (PartitionUpdate update : copies.take())
            {
                try
                {
                    keyspace.apply(new Mutation(update), true, false, false);
                    written[0] += update.rowCount();
                }
                catch (RuntimeException e)
                {
                    failures.add(e);
                }
            }
        });
        if (!failures.isEmpty())
            throw new IllegalStateException(failures.size() + " writes of unflushed backup entries of " + metadata
                                            + " failed (" + written[0] + " entries were written)", failures.get(0));
        return written[0];
    }

    /** The rows of one page, copied off the memtables' memory into updates of at most a record's size. */
    static final class Copies
    {
        private final TableMetadata metadata;
        private final long limit;
        private final List<PartitionUpdate> done = new ArrayList<>();
        private PartitionUpdate.Builder record;
        private DecoratedKey key;
        private long size;
        private int rows;

        Copies(TableMetadata metadata, long limit)
        {
            this.metadata = metadata;
            this.limit = limit;
        }

        void add(DecoratedKey rowKey, Row row)
        {
            long rowSize = row.dataSize();
            if (record != null && (!rowKey.equals(key) || size + rowSize > limit || rows == ROWS_PER_RECORD))
                close();
            if (record == null)
            {
                key = HeapCloner.instance.clone(rowKey);
                record = new PartitionUpdate.Builder(metadata, key, metadata.regularAndStaticColumns(), 16);
            }
            record.add(row.clone(HeapCloner.instance));
            size += rowSize;
            rows++;
        }

        private void close()
        {
            done.add(record.build());
            record = null;
            size = 0;
            rows = 0;
        }

        List<PartitionUpdate> take()
        {
            if (record != null)
                close();
            List<PartitionUpdate> out = new ArrayList<>(done);
            done.clear();
            return out;
        }
    }
}
