package org.asynctriggers.task;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;

/** One row-level change found in a partition update, before it is bound to a flow. Immutable. */
public final class SourceChange
{
    public final Operation operation;
    /** known primary key components, partition key first */
    public final List<ByteBuffer> key;
    public final long timestamp;
    /** key columns and simple columns present in the update; a null value is a null cell */
    public final Map<String, ByteBuffer> values;
    /**
     * The update's expiring simple cells: column to local expiration time (seconds since the epoch, the cell's
     * {@code localDeletionTime()}, fixed by the coordinator of the source write, so the same on every replica).
     */
    public final Map<String, Long> expirations;
    /** The local expiration time of the row's own liveness (an {@code INSERT ... USING TTL}); 0: none. */
    public final long rowExpiresAt;

    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values)
    {
        this(operation, key, timestamp, values, Map.of(), 0);
    }

    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values,
                        Map<String, Long> expirations, long rowExpiresAt)
    {
        this.operation = operation;
        this.key = List.copyOf(key);
        this.timestamp = timestamp;
        this.values = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(values));
        this.expirations = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(expirations));
        this.rowExpiresAt = rowExpiresAt;
    }

    /**
     * The same write seen twice (a replica's index hears a contended memtable update once per attempt): what either
     * saw of its values; an insert wins over an update (a later attempt sees the row marker already there).
     */
    public SourceChange mergedWith(SourceChange other)
    {
        java.util.Map<String, ByteBuffer> merged = new java.util.LinkedHashMap<>(values);
        other.values.forEach(merged::putIfAbsent);
        java.util.Map<String, Long> expiring = new java.util.LinkedHashMap<>(expirations);
        other.expirations.forEach(expiring::putIfAbsent);
        Operation op = operation == Operation.UPDATE ? other.operation : operation;
        return new SourceChange(op, key, timestamp, merged, expiring, rowExpiresAt != 0 ? rowExpiresAt : other.rowExpiresAt);
    }

    @Override
    public String toString()
    {
        return operation + " key=" + key.size() + " components ts=" + timestamp + " columns=" + values.keySet()
               + (expirations.isEmpty() && rowExpiresAt == 0 ? "" : " expiring=" + expirations.keySet() + (rowExpiresAt == 0 ? "" : "+row"));
    }
}
