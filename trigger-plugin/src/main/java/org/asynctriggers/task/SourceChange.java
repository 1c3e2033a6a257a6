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

    public SourceChange(Operation operation, List<ByteBuffer> key, long timestamp, Map<String, ByteBuffer> values)
    {
        this.operation = operation;
        this.key = List.copyOf(key);
        this.timestamp = timestamp;
        this.values = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(values));
    }

    /**
     * The same write seen twice (a replica's index hears a contended memtable update once per attempt): what either
     * saw of its values; an insert wins over an update (a later attempt sees the row marker already there).
     */
    public SourceChange mergedWith(SourceChange other)
    {
        java.util.Map<String, ByteBuffer> merged = new java.util.LinkedHashMap<>(values);
        other.values.forEach(merged::putIfAbsent);
        Operation op = operation == Operation.UPDATE ? other.operation : operation;
        return new SourceChange(op, key, timestamp, merged);
    }

    @Override
    public String toString()
    {
        return operation + " key=" + key.size() + " components ts=" + timestamp + " columns=" + values.keySet();
    }
}
