package org.asynctriggers.capture;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.ByteBufferUtil;
import org.asynctriggers.cql.LocalRows;

/**
 * The rows of a table's local replica that carry a TTL (an expiring row marker or cell), each as its full key and its
 * newest timestamp: replicas that hold the same row find the same, and so make the same task. A following flow's companion is given these when it is deployed (docs/design.md, "A fan-out that follows its
 * table"): a backfill copies a fan-out row without its expiry (CQL reads none of a row marker), while the companion's
 * task of that row reads it whole, expiry included.
 */
public final class ExpiringRows
{
    /** One row found: its token (which node executes it), its primary key and its newest timestamp. */
    public static final class Found
    {
        public final Token token;
        public final List<ByteBuffer> key;
        public final long timestamp;

        public Found(Token token, List<ByteBuffer> key, long timestamp)
        {
            this.token = token;
            this.key = key;
            this.timestamp = timestamp;
        }
    }

    private ExpiringRows()
    {
    }

    /**
     * The expiring rows this node holds of the table (none when it has no such table), handed to {@code page} a page
     * of the scan at a time, outside the scan's hold of the read order; static rows are left out.
     */
    public static void of(String keyspace, String table, Consumer<List<Found>> page)
    {
        ColumnFamilyStore cfs = ColumnFamilyStore.getIfExists(keyspace, table);
        if (cfs == null)
            return;
        TableMetadata metadata = cfs.metadata();
        List<Found> found = new ArrayList<>();
        LocalRows.scan(cfs, LocalRows.PARTITIONS_PER_PAGE, (key, row) -> {
            if (!row.isStatic() && expiring(row))
                found.add(new Found(key.getToken(), keyOf(metadata, key, row), newest(row)));
        }, () -> {
            if (found.isEmpty())
                return;
            page.accept(List.copyOf(found));
            found.clear();
        });
    }

    static boolean expiring(Row row)
    {
        if (row.primaryKeyLivenessInfo().isExpiring())
            return true;
        for (Cell<?> cell : row.cells())
            if (cell.isExpiring())
                return true;
        return false;
    }

    private static long newest(Row row)
    {
        LivenessInfo marker = row.primaryKeyLivenessInfo();
        long newest = marker.isEmpty() ? Long.MIN_VALUE : marker.timestamp();
        for (ColumnData data : row)
            newest = Math.max(newest, data.maxTimestamp());
        return newest;
    }

    /** The row's primary key values, copied (the scan's buffers may not outlive it). */
    private static List<ByteBuffer> keyOf(TableMetadata metadata, DecoratedKey partition, Row row)
    {
        List<ByteBuffer> key = new ArrayList<>();
        for (ByteBuffer part : TaskExtractor.partitionKeyComponents(metadata, partition.getKey()))
            key.add(ByteBufferUtil.clone(part));
        for (int i = 0; i < row.clustering().size(); i++)
            key.add(ByteBufferUtil.clone(row.clustering().bufferAt(i)));
        return key;
    }
}
