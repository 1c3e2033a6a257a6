package org.asynctriggers.task;

import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.utils.ByteBufferUtil;
import org.asynctriggers.api.Operation;

/**
 * One row-level change found in a partition update, before it is bound to a flow. Immutable.
 * <p>
 * It keeps what Cassandra's last-write-wins needs to be mirrored cell by cell (docs/design.md, "Write shapes"): the
 * timestamp of each cell, the row liveness (row marker) the write set, and the row deletion it carries; so a derived
 * cell can be written at the timestamp of the source cell it copies, whatever order the tasks run in.
 */
public final class SourceChange
{
    /** none: the write set no row marker, or carries no row deletion */
    public static final long NONE = Long.MIN_VALUE;

    public final Operation operation;
    /** known primary key components, partition key first */
    public final List<ByteBuffer> key;
    /** the newest timestamp of anything the change holds */
    public final long timestamp;
    /** key columns and simple columns present in the update; a null value is a null cell (a tombstone) */
    public final Map<String, ByteBuffer> values;
    /** the timestamp of each simple cell in {@link #values} (key columns have none); absent: {@link #timestamp} */
    public final Map<String, Long> timestamps;
    /**
     * The update's expiring simple cells: column to local expiration time (seconds since the epoch, the cell's
     * {@code localDeletionTime()}, fixed by the coordinator of the source write, so the same on every replica).
     */
    public final Map<String, Long> expirations;
    /** The local expiration time of the row's own liveness (an {@code INSERT ... USING TTL}); 0: none. */
    public final long rowExpiresAt;
    /** The timestamp of the row marker this write set ({@code INSERT}); {@link #NONE}: none. */
    public final long livenessTimestamp;
    /** The timestamp of the row deletion this write carries (with newer cells: DELETE then INSERT in a batch); {@link #NONE}: none. */
    public final long deletionTimestamp;
    /** The change is of the partition's static row: {@link #key} is the partition key alone. */
    public final boolean isStatic;
    /** A range deletion's clustering bounds ({@link #key} is the prefix common to both); null for any other change. */
    public final KeyRange range;

    /** A change whose cells all carry its timestamp: an insert sets the row marker, a delete deletes what its key names. */
    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values)
    {
        this(operation, key, timestamp, values, Map.of(), 0);
    }

    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values,
                        Map<String, Long> expirations, long rowExpiresAt)
    {
        this(operation, key, timestamp, values, Map.of(), expirations, rowExpiresAt,
             operation == Operation.INSERT ? timestamp : NONE, operation == Operation.DELETE ? timestamp : NONE, false);
    }

    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values,
                        Map<String, Long> timestamps, Map<String, Long> expirations, long rowExpiresAt,
                        long livenessTimestamp, long deletionTimestamp, boolean isStatic)
    {
        this(operation, key, timestamp, values, timestamps, expirations, rowExpiresAt, livenessTimestamp, deletionTimestamp, isStatic, null);
    }

    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values,
                        Map<String, Long> timestamps, Map<String, Long> expirations, long rowExpiresAt,
                        long livenessTimestamp, long deletionTimestamp, boolean isStatic, KeyRange range)
    {
        this.range = range;
        this.operation = operation;
        this.key = List.copyOf(key);
        this.timestamp = timestamp;
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
        this.timestamps = Collections.unmodifiableMap(new LinkedHashMap<>(timestamps));
        this.expirations = Collections.unmodifiableMap(new LinkedHashMap<>(expirations));
        this.rowExpiresAt = rowExpiresAt;
        this.livenessTimestamp = livenessTimestamp;
        this.deletionTimestamp = deletionTimestamp;
        this.isStatic = isStatic;
    }

    /**
     * This change as a flow that uses only {@code columns} (besides the key) carries it: the values of the others
     * dropped, each left as an empty value if it was set (a tombstone stays null), so that the flow still knows that the
     * write set it, and when (docs/design.md, "Write shapes"). The write's cells of the other flows' columns never
     * weigh on this flow's tasks and backup entries.
     */
    public SourceChange keeping(java.util.Set<String> columns, List<String> keyColumns)
    {
        Map<String, ByteBuffer> kept = new LinkedHashMap<>();
        for (Map.Entry<String, ByteBuffer> e : values.entrySet())
        {
            boolean used = columns.contains(e.getKey()) || keyColumns.contains(e.getKey());
            kept.put(e.getKey(), used || e.getValue() == null ? e.getValue() : java.nio.ByteBuffer.allocate(0));
        }
        return new SourceChange(operation, key, timestamp, kept, timestamps, expirations, rowExpiresAt, livenessTimestamp,
                                deletionTimestamp, isStatic, range);
    }

    /**
     * This change with its own copy of every value: one a capture keeps past its write, whose buffers may be the
     * memtable's memory (given back once the memtable is flushed) or the request's.
     */
    public SourceChange detached()
    {
        List<ByteBuffer> ownKey = new java.util.ArrayList<>(key.size());
        for (ByteBuffer component : key)
            ownKey.add(ByteBufferUtil.clone(component));
        Map<String, ByteBuffer> ownValues = new LinkedHashMap<>();
        values.forEach((column, value) -> ownValues.put(column, value == null ? null : ByteBufferUtil.clone(value)));
        return new SourceChange(operation, ownKey, timestamp, ownValues, timestamps, expirations, rowExpiresAt, livenessTimestamp,
                                deletionTimestamp, isStatic, range); // a range holds copies already
    }

    /**
     * The same write seen twice (a replica's index hears a contended memtable update once per attempt): what either
     * saw of its cells; an insert wins over an update (a later attempt sees the row marker already there).
     */
    public SourceChange mergedWith(SourceChange other)
    {
        Map<String, ByteBuffer> merged = new LinkedHashMap<>(values);
        Map<String, Long> times = new LinkedHashMap<>(timestamps);
        Map<String, Long> expiring = new LinkedHashMap<>(expirations);
        for (Map.Entry<String, ByteBuffer> e : other.values.entrySet())
        {
            if (merged.containsKey(e.getKey()))
                continue;
            merged.put(e.getKey(), e.getValue());
            if (other.timestamps.containsKey(e.getKey()))
                times.put(e.getKey(), other.timestamps.get(e.getKey()));
            if (other.expirations.containsKey(e.getKey()))
                expiring.put(e.getKey(), other.expirations.get(e.getKey()));
        }
        Operation op = operation == Operation.UPDATE ? other.operation : operation;
        return new SourceChange(op, key, Math.max(timestamp, other.timestamp), merged, times, expiring,
                                rowExpiresAt != 0 ? rowExpiresAt : other.rowExpiresAt,
                                Math.max(livenessTimestamp, other.livenessTimestamp), Math.max(deletionTimestamp, other.deletionTimestamp),
                                isStatic, range);
    }

    @Override
    public String toString()
    {
        return operation + (isStatic ? " static" : "") + " key=" + key.size() + " components ts=" + timestamp + " columns=" + values.keySet()
               + (expirations.isEmpty() && rowExpiresAt == 0 ? "" : " expiring=" + expirations.keySet() + (rowExpiresAt == 0 ? "" : "+row"));
    }
}
