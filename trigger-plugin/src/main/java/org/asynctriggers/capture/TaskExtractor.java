package org.asynctriggers.capture;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.db.ClusteringPrefix;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.api.Operation;
import org.asynctriggers.task.KeyRange;
import org.asynctriggers.task.SourceChange;

/**
 * Turns a partition update into row-level changes, classified per docs/design.md: a row marker (primary key
 * liveness) is an insert, cells only an update, a row, range or partition deletion a delete. A range or partition
 * deletion is keyed by what it names: the partition key and the clustering prefix common to both bounds. Only simple
 * (non-collection) cells are captured; a column whose value is not captured is read back by the executor when a
 * target needs it. A change keeps the local expiration time of each expiring cell it captured and of the row's own
 * liveness when that is this update's (docs/design.md, "TTL"): the executor gives derived rows what remains of it.
 * <p>
 * A replica sees an update as its capture index does ({@link Collector}): event by event, and for a row already in
 * its memtable only what the update changed there. {@link #extract} feeds a whole update to a collector the way a
 * replica with an empty memtable would see it.
 */
public final class TaskExtractor
{
    private TaskExtractor()
    {
    }

    public static List<SourceChange> extract(Partition update)
    {
        Collector collector = new Collector(update.metadata(), update.partitionKey().getKey());
        DeletionTime partitionDeletion = update.partitionLevelDeletion();
        if (!partitionDeletion.isLive())
            collector.partitionDelete(partitionDeletion);
        if (update instanceof PartitionUpdate)
        {
            Iterator<RangeTombstone> ranges = ((PartitionUpdate) update).deletionInfo().rangeIterator(false);
            while (ranges.hasNext())
                collector.rangeTombstone(ranges.next());
        }
        try (UnfilteredRowIterator rows = update.unfilteredIterator())
        {
            Row staticRow = rows.staticRow();
            if (staticRow != null && !staticRow.isEmpty())
                collector.inserted(staticRow);
            while (rows.hasNext())
            {
                Unfiltered unfiltered = rows.next();
                // range tombstone markers were taken from the deletion info above, as whole ranges
                if (unfiltered.isRow())
                    collector.inserted((Row) unfiltered);
            }
        }
        return collector.changes();
    }

    /**
     * The changes of one partition update on one replica, from the events of its index transaction. Events can come
     * twice (a contended memtable partition re-applies the update): changes of one key and timestamp are merged.
     */
    public static final class Collector
    {
        private final TableMetadata metadata;
        private final List<ByteBuffer> partitionKey;
        private final Map<String, ByteBuffer> keyValues = new LinkedHashMap<>();
        private final List<SourceChange> changes = new ArrayList<>(1);

        public Collector(TableMetadata metadata, ByteBuffer partitionKey)
        {
            this.metadata = metadata;
            this.partitionKey = partitionKeyComponents(metadata, partitionKey);
            for (int i = 0; i < this.partitionKey.size(); i++)
                keyValues.put(metadata.partitionKeyColumns().get(i).name.toString(), this.partitionKey.get(i));
        }

        public void partitionDelete(DeletionTime deletion)
        {
            add(new SourceChange(Operation.DELETE, partitionKey, deletion.markedForDeleteAt(), new LinkedHashMap<>(keyValues)));
        }

        public void rangeTombstone(RangeTombstone range)
        {
            add(rangeDelete(metadata, partitionKey, keyValues, range));
        }

        /** A row that was not in the memtable: all of it is this update's. */
        public void inserted(Row row)
        {
            add(rowChange(metadata, partitionKey, keyValues, row, true, true));
        }

        /**
         * A row that was in the memtable: {@code newData} holds the merged liveness and deletion and the cells this
         * update changed; liveness and deletion are this update's only where they differ from {@code oldData}'s.
         */
        public void updated(Row oldData, Row newData)
        {
            boolean liveness = !newData.primaryKeyLivenessInfo().isEmpty()
                               && !newData.primaryKeyLivenessInfo().equals(oldData.primaryKeyLivenessInfo());
            boolean deletion = !newData.deletion().isLive() && !newData.deletion().equals(oldData.deletion());
            if (!liveness && !deletion && !newData.iterator().hasNext())
            {
                // Cassandra hands an index the cells a write added or changed, and those it removed, but not a
                // collection's own deletion (SET c = null, DELETE c): a row that lost cells and gained none changed
                // too, at the newest timestamp of what it lost or later
                long removed = Long.MIN_VALUE;
                for (ColumnData data : oldData)
                    removed = Math.max(removed, data.maxTimestamp());
                if (removed == Long.MIN_VALUE)
                    return; // the update changed nothing here (superseded, or a repeat of what is there)
                add(rowChange(metadata, partitionKey, keyValues, newData, false, false, removed));
                return;
            }
            add(rowChange(metadata, partitionKey, keyValues, newData, liveness, deletion));
        }

        private void add(SourceChange change)
        {
            for (int i = 0; i < changes.size(); i++)
            {
                SourceChange seen = changes.get(i);
                // a range deletion is never merged: two of one prefix and timestamp are two ranges (a repeat has the same task id)
                if (seen.timestamp == change.timestamp && seen.key.equals(change.key) && seen.isStatic == change.isStatic
                    && seen.range == null && change.range == null)
                {
                    changes.set(i, seen.mergedWith(change));
                    return;
                }
            }
            changes.add(change);
        }

        public List<SourceChange> changes()
        {
            return changes;
        }
    }

    static List<ByteBuffer> partitionKeyComponents(TableMetadata metadata, ByteBuffer key)
    {
        if (metadata.partitionKeyColumns().size() == 1)
            return List.of(key);
        return List.of(((CompositeType) metadata.partitionKeyType).split(key));
    }

    private static SourceChange rangeDelete(TableMetadata metadata, List<ByteBuffer> partitionKey, Map<String, ByteBuffer> keyValues, RangeTombstone range)
    {
        ClusteringPrefix<?> start = range.deletedSlice().start();
        ClusteringPrefix<?> end = range.deletedSlice().end();
        List<ByteBuffer> key = new ArrayList<>(partitionKey);
        Map<String, ByteBuffer> values = new LinkedHashMap<>(keyValues);
        int common = Math.min(start.size(), end.size());
        for (int i = 0; i < common; i++)
        {
            ByteBuffer s = start.bufferAt(i);
            if (!s.equals(end.bufferAt(i)))
                break;
            key.add(s);
            values.put(metadata.clusteringColumns().get(i).name.toString(), s);
        }
        long at = range.deletionTime().markedForDeleteAt();
        KeyRange bounds = new KeyRange(components(start), range.deletedSlice().start().isInclusive(),
                                       components(end), range.deletedSlice().end().isInclusive());
        return new SourceChange(Operation.DELETE, key, at, values, Map.of(), Map.of(), 0, SourceChange.NONE, at, false, bounds);
    }

    private static List<ByteBuffer> components(ClusteringPrefix<?> prefix)
    {
        List<ByteBuffer> out = new ArrayList<>(prefix.size());
        for (int i = 0; i < prefix.size(); i++)
            out.add(prefix.bufferAt(i));
        return out;
    }

    /** @param ownLiveness, ownDeletion whether the row's liveness and deletion are this update's (else ignored) */
    private static SourceChange rowChange(TableMetadata metadata, List<ByteBuffer> partitionKey, Map<String, ByteBuffer> keyValues, Row row,
                                          boolean ownLiveness, boolean ownDeletion)
    {
        return rowChange(metadata, partitionKey, keyValues, row, ownLiveness, ownDeletion, Long.MIN_VALUE);
    }

    /** @param removedAt a lower bound of the timestamp of cells the update removed without a cell of its own */
    private static SourceChange rowChange(TableMetadata metadata, List<ByteBuffer> partitionKey, Map<String, ByteBuffer> keyValues, Row row,
                                          boolean ownLiveness, boolean ownDeletion, long removedAt)
    {
        List<ByteBuffer> key = new ArrayList<>(partitionKey);
        Map<String, ByteBuffer> values = new LinkedHashMap<>(keyValues);
        if (!row.isStatic())
        {
            for (int i = 0; i < row.clustering().size(); i++)
            {
                ByteBuffer component = row.clustering().bufferAt(i);
                key.add(component);
                values.put(metadata.clusteringColumns().get(i).name.toString(), component);
            }
        }

        LivenessInfo rowLiveness = row.primaryKeyLivenessInfo();
        long liveness = !ownLiveness || rowLiveness.isEmpty() ? Long.MIN_VALUE : rowLiveness.timestamp();
        long rowExpiresAt = liveness != Long.MIN_VALUE && rowLiveness.isExpiring() ? rowLiveness.localExpirationTime() : 0;
        Map<String, Long> expirations = new LinkedHashMap<>();
        Map<String, Long> timestamps = new LinkedHashMap<>();
        long deletion = !ownDeletion || row.deletion().isLive() ? Long.MIN_VALUE : row.deletion().time().markedForDeleteAt();
        long cells = Long.MIN_VALUE;
        for (ColumnData data : row)
        {
            ColumnMetadata column = data.column();
            cells = Math.max(cells, data.maxTimestamp());
            if (column.isSimple())
            {
                Cell<?> cell = (Cell<?>) data;
                String name = column.name.toString();
                values.put(name, cell.isTombstone() ? null : cell.buffer());
                timestamps.put(name, cell.timestamp());
                if (cell.isExpiring())
                    expirations.put(name, cell.localDeletionTime());
            }
        }
        cells = Math.max(cells, removedAt);
        long timestamp = Math.max(liveness, Math.max(deletion, cells));
        return new SourceChange(classify(liveness, deletion, cells), key, timestamp, values, timestamps, expirations, rowExpiresAt,
                                liveness, deletion, row.isStatic());
    }

    /** A deletion wins unless something in the same update is written after it (DELETE then INSERT in a batch). */
    static Operation classify(long livenessTimestamp, long deletionTimestamp, long maxCellTimestamp)
    {
        if (deletionTimestamp != Long.MIN_VALUE && livenessTimestamp <= deletionTimestamp && maxCellTimestamp <= deletionTimestamp)
            return Operation.DELETE;
        if (livenessTimestamp != Long.MIN_VALUE && livenessTimestamp > deletionTimestamp)
            return Operation.INSERT;
        return Operation.UPDATE;
    }
}
