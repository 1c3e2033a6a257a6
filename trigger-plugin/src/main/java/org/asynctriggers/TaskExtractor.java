package org.asynctriggers;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.db.ClusteringPrefix;
import org.apache.cassandra.db.DeletionTime;
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

/**
 * Turns the partition update given to {@code augment} into row-level changes, classified per docs/design.md:
 * a row marker (primary key liveness) is an insert, cells only an update, a row, range or partition deletion a
 * delete. A range or partition deletion is keyed by what it names: the partition key and the clustering prefix
 * common to both bounds. Only simple (non-collection) cells are captured; a column whose value is not captured is
 * read back by the executor when a target needs it.
 */
public final class TaskExtractor
{
    private TaskExtractor()
    {
    }

    public static List<SourceChange> extract(Partition update)
    {
        TableMetadata metadata = update.metadata();
        List<ByteBuffer> partitionKey = partitionKeyComponents(metadata, update.partitionKey().getKey());
        Map<String, ByteBuffer> keyValues = new LinkedHashMap<>();
        for (int i = 0; i < partitionKey.size(); i++)
            keyValues.put(metadata.partitionKeyColumns().get(i).name.toString(), partitionKey.get(i));

        List<SourceChange> changes = new ArrayList<>();
        DeletionTime partitionDeletion = update.partitionLevelDeletion();
        if (!partitionDeletion.isLive())
            changes.add(new SourceChange(Operation.DELETE, partitionKey, partitionDeletion.markedForDeleteAt(), new LinkedHashMap<>(keyValues)));

        if (update instanceof PartitionUpdate)
        {
            Iterator<RangeTombstone> ranges = ((PartitionUpdate) update).deletionInfo().rangeIterator(false);
            while (ranges.hasNext())
                changes.add(rangeDelete(metadata, partitionKey, keyValues, ranges.next()));
        }

        try (UnfilteredRowIterator rows = update.unfilteredIterator())
        {
            Row staticRow = rows.staticRow();
            if (staticRow != null && !staticRow.isEmpty())
                changes.add(rowChange(metadata, partitionKey, keyValues, staticRow));
            while (rows.hasNext())
            {
                Unfiltered unfiltered = rows.next();
                // range tombstone markers were taken from the deletion info above, as whole ranges
                if (unfiltered.isRow())
                    changes.add(rowChange(metadata, partitionKey, keyValues, (Row) unfiltered));
            }
        }
        return changes;
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
        return new SourceChange(Operation.DELETE, key, range.deletionTime().markedForDeleteAt(), values);
    }

    private static SourceChange rowChange(TableMetadata metadata, List<ByteBuffer> partitionKey, Map<String, ByteBuffer> keyValues, Row row)
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

        long liveness = row.primaryKeyLivenessInfo().isEmpty() ? Long.MIN_VALUE : row.primaryKeyLivenessInfo().timestamp();
        long deletion = row.deletion().isLive() ? Long.MIN_VALUE : row.deletion().time().markedForDeleteAt();
        long cells = Long.MIN_VALUE;
        for (ColumnData data : row)
        {
            ColumnMetadata column = data.column();
            cells = Math.max(cells, data.maxTimestamp());
            if (column.isSimple())
            {
                Cell<?> cell = (Cell<?>) data;
                values.put(column.name.toString(), cell.isTombstone() ? null : cell.buffer());
            }
        }
        long timestamp = Math.max(liveness, Math.max(deletion, cells));
        return new SourceChange(classify(liveness, deletion, cells), key, timestamp, values);
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
