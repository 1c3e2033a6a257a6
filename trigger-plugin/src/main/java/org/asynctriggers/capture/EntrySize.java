package org.asynctriggers.capture;

import java.util.List;
import java.util.Set;

import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;

/**
 * How large the backup entries of a write will be (docs/design.md, "Write shapes"): each replica keeps them in its
 * backup map's memtable and, when its source table is flushed before they are, logs them in commit log records
 * (backup/UnflushedEntries); a record larger than the commit log takes ({@code max_mutation_size}) cannot be written,
 * so such entries would not survive a crash while the write does. The coordinator's trigger refuses such a write
 * before it is sent anywhere, naming the flow, rather than let a replica hold tasks it could lose.
 */
public final class EntrySize
{
    /** what one entry costs besides its values: the task's serialized form, its key, flow name, id, times */
    static final int PER_ENTRY = 2048;
    /** what each cell of the row costs in a task besides its value: its name (twice), timestamp, expiration */
    static final int PER_CELL = 32;

    private EntrySize()
    {
    }

    /** One flow as the estimate sees it: its name and the non-key columns its tasks carry (null: all). */
    public static final class FlowColumns
    {
        final String name;
        final Set<String> columns;

        public FlowColumns(String name, Set<String> columns)
        {
            this.name = name;
            this.columns = columns;
        }
    }

    /** The bytes of the entries these flows' tasks of the update take, at most. */
    public static long of(Partition update, List<FlowColumns> flows)
    {
        long total = 0;
        int keyBytes = update.partitionKey().getKey().remaining();
        try (UnfilteredRowIterator rows = update.unfilteredIterator())
        {
            total += rowBytes(rows.staticRow(), flows, keyBytes);
            while (rows.hasNext())
            {
                Unfiltered unfiltered = rows.next();
                total += unfiltered.isRow() ? rowBytes((Row) unfiltered, flows, keyBytes) : (long) flows.size() * PER_ENTRY;
            }
        }
        if (!update.partitionLevelDeletion().isLive())
            total += (long) flows.size() * PER_ENTRY;
        return total;
    }

    private static long rowBytes(Row row, List<FlowColumns> flows, int keyBytes)
    {
        if (row == null || row.isEmpty())
            return 0;
        long total = 0;
        for (FlowColumns flow : flows)
        {
            long bytes = PER_ENTRY + 2L * keyBytes + row.clustering().dataSize();
            for (ColumnData data : row)
            {
                if (!data.column().isSimple())
                    continue;
                String name = data.column().name.toString();
                bytes += PER_CELL + 2L * name.length(); // every cell's name, timestamp and expiration, carried or not
                if (flow.columns == null || flow.columns.contains(name))
                    bytes += ((Cell<?>) data).valueSize();
            }
            total += bytes;
        }
        return total;
    }

    /** The message a refused write gets, naming the flow whose entries take the most. */
    public static String refusal(String keyspace, String table, String flow, long bytes, long limit)
    {
        return "async triggers: this write to " + keyspace + "." + table + " would give its flows backup entries of "
               + bytes + " bytes (flow '" + flow + "' takes the most), more than the commit log takes in one record "
               + "(max_mutation_size: " + limit + " bytes); write smaller rows, or let the flows map fewer of its columns";
    }
}
