package org.asynctriggers;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;

/** One row-level change found in a partition update, before it is bound to a flow. */
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
        this.values = values;
    }

    @Override
    public String toString()
    {
        return operation + " key=" + key.size() + " components ts=" + timestamp + " columns=" + values.keySet();
    }
}
