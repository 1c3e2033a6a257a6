package org.asynctriggers;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;

/**
 * One unit of asynchronous work: one source row change for one flow (docs/design.md, "The task model").
 * Immutable and {@link Serializable} (values kept as byte arrays) so that replica backup maps, dead letters and
 * spill files can store it as is.
 */
public final class Task implements Serializable
{
    private static final long serialVersionUID = 1L;

    private final String flow;
    private final long flowVersion;
    /** the known primary key components, partition key first; shorter than the key for range/partition deletes */
    private final List<byte[]> key;
    private final Operation operation;
    private final long timestamp;
    /** column name to value; a null value is a null (tombstoned) cell; absent columns were not in the update */
    private final LinkedHashMap<String, byte[]> values;
    private final long createdNanos;

    public Task(String flow, long flowVersion, List<ByteBuffer> key, Operation operation, long timestamp,
                Map<String, ByteBuffer> values, long createdNanos)
    {
        this.flow = flow;
        this.flowVersion = flowVersion;
        this.key = new ArrayList<>(key.size());
        for (ByteBuffer component : key)
            this.key.add(bytes(component));
        this.operation = operation;
        this.timestamp = timestamp;
        this.values = new LinkedHashMap<>();
        values.forEach((column, value) -> this.values.put(column, value == null ? null : bytes(value)));
        this.createdNanos = createdNanos;
    }

    static Task of(FlowSpec flow, SourceChange change, long createdNanos)
    {
        return new Task(flow.name, flow.version, change.key, change.operation, change.timestamp, change.values, createdNanos);
    }

    private static byte[] bytes(ByteBuffer buffer)
    {
        ByteBuffer b = buffer.duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    public String flow()
    {
        return flow;
    }

    public long flowVersion()
    {
        return flowVersion;
    }

    public Operation operation()
    {
        return operation;
    }

    public long timestamp()
    {
        return timestamp;
    }

    public long createdNanos()
    {
        return createdNanos;
    }

    /**
     * Fresh copies (never read-only views: Cassandra's FastByteOperations takes a buffer without an accessible
     * array for a direct one and reads native memory from it).
     */
    public List<ByteBuffer> key()
    {
        List<ByteBuffer> out = new ArrayList<>(key.size());
        for (byte[] component : key)
            out.add(ByteBuffer.wrap(component.clone()));
        return Collections.unmodifiableList(out);
    }

    /** The key as one blob ({@link KeyCodec}); the lineage table's {@code source_key}. */
    public ByteBuffer serializedKey()
    {
        return KeyCodec.encode(key());
    }

    public Map<String, ByteBuffer> values()
    {
        Map<String, ByteBuffer> out = new LinkedHashMap<>();
        values.forEach((column, value) -> out.put(column, value == null ? null : ByteBuffer.wrap(value.clone())));
        return Collections.unmodifiableMap(out);
    }

    @Override
    public String toString()
    {
        StringBuilder sb = new StringBuilder();
        for (byte[] component : key)
        {
            if (sb.length() > 0)
                sb.append(':');
            for (byte b : component)
                sb.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return operation.eventName() + " key=0x" + sb + " ts=" + timestamp + " flow=" + flow + " v" + flowVersion;
    }
}
