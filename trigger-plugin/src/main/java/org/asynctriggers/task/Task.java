package org.asynctriggers.task;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.spec.FlowSpec;

/**
 * One unit of asynchronous work: one source row change for one flow (docs/design.md, "The task model").
 * Immutable and {@link Serializable} (values kept as byte arrays) so that backup entries, dead letters and spill
 * files can store it as is. Its {@link #id()} is computed from the flow, the source key and the write's timestamp,
 * so every replica that captures the same write gives its task the same id (the report's {@code hash(t)}).
 */
public final class Task implements Serializable
{
    private static final long serialVersionUID = 1L;

    final String flow;
    final long flowVersion;
    /** the known primary key components, partition key first; shorter than the key for range/partition deletes */
    final List<byte[]> key;
    final Operation operation;
    final long timestamp;
    /** column name to value; a null value is a null (tombstoned) cell; absent columns were not in the update */
    final LinkedHashMap<String, byte[]> values;
    final long createdNanos;
    /** failed executions so far; absent from tasks serialized before retries existed, which read as 0 */
    final int attempts;
    /** {@link #idOf}: the same on every replica of the write; its backup entry's id */
    final long idMsb, idLsb;
    /** read back from a backup map (takeover, restart, safety net): its write was applied long ago */
    final boolean recovered;
    /** chunked fan-out: the target to go on with and the paging state within it (null: from its start) */
    final int resumeTarget;
    final byte[] resumePaging;
    /**
     * TTL (docs/design.md, "TTL"): the local expiration time, in seconds since the epoch, of each expiring cell of the
     * source write, by column. Null in tasks stored before TTLs were captured (read as none: they had none).
     */
    final LinkedHashMap<String, Long> expirations;
    /** The local expiration time of the source row's liveness set by this write (INSERT USING TTL); 0: none. */
    final long rowExpiresAt;
    /**
     * Whether the task knows each cell's own timestamp, its row marker and its row deletion (docs/design.md, "Write
     * shapes"). False in tasks stored by a plugin before it did (backup entries, spill files, dead letters): those read
     * as every cell at {@link #timestamp}, a row marker for an insert, a row deletion for a delete.
     */
    final boolean cellTimed;
    /** column to the timestamp of its cell; null in tasks stored before cell timestamps */
    final LinkedHashMap<String, Long> timestamps;
    final long livenessTimestamp;
    final long deletionTimestamp;
    final boolean isStatic;
    /** a range deletion's clustering bounds; null otherwise */
    final KeyRange range;

    public Task(String flow, long flowVersion, List<ByteBuffer> key, Operation operation, long timestamp,
                Map<String, ByteBuffer> values, long createdNanos)
    {
        this(flow, flowVersion, key, operation, timestamp, values, Map.of(), 0, createdNanos);
    }

    /**
     * A task whose cells all carry its timestamp (an insert sets the row marker, a delete deletes what the key names).
     * @param expirations the local expiration time (s) of the write's expiring cells, by column
     * @param rowExpiresAt the local expiration time (s) of the row liveness the write set; 0: none
     */
    public Task(String flow, long flowVersion, List<ByteBuffer> key, Operation operation, long timestamp,
                Map<String, ByteBuffer> values, Map<String, Long> expirations, long rowExpiresAt, long createdNanos)
    {
        this(flow, flowVersion, new SourceChange(operation, key, timestamp, values, expirations, rowExpiresAt), createdNanos);
    }

    public Task(String flow, long flowVersion, SourceChange change, long createdNanos)
    {
        this.flow = flow;
        this.flowVersion = flowVersion;
        this.key = new ArrayList<>(change.key.size());
        for (ByteBuffer component : change.key)
            this.key.add(bytes(component));
        this.operation = change.operation;
        this.timestamp = change.timestamp;
        this.values = new LinkedHashMap<>();
        change.values.forEach((column, value) -> this.values.put(column, value == null ? null : bytes(value)));
        this.createdNanos = createdNanos;
        this.attempts = 0;
        this.cellTimed = true;
        this.timestamps = new LinkedHashMap<>(change.timestamps);
        this.livenessTimestamp = change.livenessTimestamp;
        this.deletionTimestamp = change.deletionTimestamp;
        this.isStatic = change.isStatic;
        this.range = change.range;
        this.expirations = new LinkedHashMap<>(change.expirations);
        this.rowExpiresAt = change.rowExpiresAt;
        java.util.UUID id = idOf(flow, change.key, timestamp, digest());
        this.idMsb = id.getMostSignificantBits();
        this.idLsb = id.getLeastSignificantBits();
        this.recovered = false;
        this.resumeTarget = 0;
        this.resumePaging = null;
    }

    /** Shares the immutable key and values: only the bookkeeping differs. */
    private Task(Task task, long createdNanos, int attempts, boolean recovered, int resumeTarget, byte[] resumePaging)
    {
        this(task, createdNanos, attempts, recovered, resumeTarget, resumePaging, task.idMsb, task.idLsb);
    }

    private Task(Task task, long createdNanos, int attempts, boolean recovered, int resumeTarget, byte[] resumePaging, long idMsb, long idLsb)
    {
        this.flow = task.flow;
        this.flowVersion = task.flowVersion;
        this.key = task.key;
        this.operation = task.operation;
        this.timestamp = task.timestamp;
        this.values = task.values;
        this.createdNanos = createdNanos;
        this.attempts = attempts;
        this.idMsb = idMsb;
        this.idLsb = idLsb;
        this.recovered = recovered;
        this.resumeTarget = resumeTarget;
        this.resumePaging = resumePaging;
        this.expirations = task.expirations;
        this.rowExpiresAt = task.rowExpiresAt;
        this.cellTimed = task.cellTimed;
        this.timestamps = task.timestamps;
        this.livenessTimestamp = task.livenessTimestamp;
        this.deletionTimestamp = task.deletionTimestamp;
        this.isStatic = task.isStatic;
        this.range = task.range;
    }

    /** Every field as stored ({@link TaskCodec}): what a task read back holds, as it was written. */
    Task(String flow, long flowVersion, List<byte[]> key, Operation operation, long timestamp, LinkedHashMap<String, byte[]> values,
         long createdNanos, int attempts, long idMsb, long idLsb, boolean recovered, int resumeTarget, byte[] resumePaging,
         LinkedHashMap<String, Long> expirations, long rowExpiresAt, boolean cellTimed, LinkedHashMap<String, Long> timestamps,
         long livenessTimestamp, long deletionTimestamp, boolean isStatic, KeyRange range)
    {
        this.flow = flow;
        this.flowVersion = flowVersion;
        this.key = key;
        this.operation = operation;
        this.timestamp = timestamp;
        this.values = values;
        this.createdNanos = createdNanos;
        this.attempts = attempts;
        this.idMsb = idMsb;
        this.idLsb = idLsb;
        this.recovered = recovered;
        this.resumeTarget = resumeTarget;
        this.resumePaging = resumePaging;
        this.expirations = expirations;
        this.rowExpiresAt = rowExpiresAt;
        this.cellTimed = cellTimed;
        this.timestamps = timestamps;
        this.livenessTimestamp = livenessTimestamp;
        this.deletionTimestamp = deletionTimestamp;
        this.isStatic = isStatic;
        this.range = range;
    }

    /** The same task after one more failed execution, to be queued again. */
    public Task failedOnce()
    {
        return new Task(this, createdNanos, attempts + 1, recovered, resumeTarget, resumePaging);
    }

    /** The task of a dead letter an operator asked to retry: a fresh start, so it gets all its attempts and age again. */
    public Task restarted(long createdNanos)
    {
        return new Task(this, createdNanos, 0, recovered, resumeTarget, resumePaging);
    }

    /**
     * The task of a dead letter an operator asked to retry, under an id of its own (derived from its first id and the
     * dead letter's, so the same on every attempt to serve the request): its first entry was completed, and the
     * completion's tombstone would hide a new entry under that id. A fresh start, with all its attempts and age again.
     */
    public Task retried(ByteBuffer deadLetterId, long createdNanos)
    {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(40);
        writeLong(out, idMsb);
        writeLong(out, idLsb);
        writeChunk(out, bytes(deadLetterId));
        java.util.UUID id = java.util.UUID.nameUUIDFromBytes(out.toByteArray());
        return new Task(this, createdNanos, 0, recovered, resumeTarget, resumePaging, id.getMostSignificantBits(), id.getLeastSignificantBits());
    }

    /** A task read from a backup map on this node (takeover, recovery, safety net): queued now, its entry at hand. */
    public Task recovered(long createdNanos, int resumeTarget, byte[] resumePaging)
    {
        return new Task(this, createdNanos, 0, true, resumeTarget, resumePaging);
    }

    /** The rest of a chunked fan-out: the same task, to go on at this position. */
    public Task resumeAt(int target, ByteBuffer paging)
    {
        return new Task(this, createdNanos, attempts, recovered, target, bytes(paging));
    }

    public static Task of(FlowSpec flow, SourceChange change, long createdNanos)
    {
        return new Task(flow.name, flow.version, change, createdNanos);
    }

    /** A task captured by a replica as it applied the write, for a flow it knows by name only. */
    public static Task captured(String flow, SourceChange change, long createdNanos)
    {
        return new Task(flow, 0, change, createdNanos);
    }

    /**
     * A name-based UUID of the flow, the source key, the write timestamp and what the write holds (its cells, their
     * timestamps and expirations, its row marker, deletion and range): what every replica computes alike for the same
     * write, and different for two writes of one row with one timestamp (two clients, or a retry with other values),
     * which must both run: Cassandra keeps, cell by cell, whichever wins the tie, and so do the derived rows only if
     * both tasks write theirs.
     */
    static java.util.UUID idOf(String flow, List<ByteBuffer> key, long timestamp, byte[] digest)
    {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(64);
        byte[] name = flow.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        writeChunk(out, name);
        for (ByteBuffer component : key)
            writeChunk(out, bytes(component));
        writeLong(out, timestamp);
        out.write(digest, 0, digest.length);
        return java.util.UUID.nameUUIDFromBytes(out.toByteArray());
    }

    /** What the write holds, in a stable order (the columns sorted by name). */
    private byte[] digest()
    {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(64);
        out.write(operation.ordinal());
        writeLong(out, livenessTimestamp);
        writeLong(out, deletionTimestamp);
        writeLong(out, rowExpiresAt);
        out.write(isStatic ? 1 : 0);
        for (String column : new java.util.TreeSet<>(values.keySet()))
        {
            writeChunk(out, column.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            byte[] value = values.get(column);
            out.write(value == null ? 0 : 1);
            if (value != null)
                writeChunk(out, value);
            writeLong(out, timestamps.getOrDefault(column, timestamp));
            writeLong(out, expirations.getOrDefault(column, 0L));
        }
        if (range != null)
            range.digestInto(out);
        return out.toByteArray();
    }

    private static void writeLong(java.io.ByteArrayOutputStream out, long value)
    {
        for (int shift = 56; shift >= 0; shift -= 8)
            out.write((int) (value >>> shift));
    }

    static void writeChunk(java.io.ByteArrayOutputStream out, byte[] chunk)
    {
        for (int shift = 24; shift >= 0; shift -= 8)
            out.write(chunk.length >>> shift);
        out.write(chunk, 0, chunk.length);
    }

    /** The timestamp of a column's cell in the write (its own, or the task's when the task does not know it). */
    public long timestampOf(String column)
    {
        Long own = timestamps == null ? null : timestamps.get(column);
        return own == null ? timestamp : own;
    }

    /** The timestamp of the row marker the write set ({@code INSERT}); {@link SourceChange#NONE}: none. */
    public long livenessTimestamp()
    {
        if (!cellTimed)
            return operation == Operation.INSERT ? timestamp : SourceChange.NONE;
        return livenessTimestamp;
    }

    /** The timestamp of the row deletion the write carries; {@link SourceChange#NONE}: none. */
    public long deletionTimestamp()
    {
        if (!cellTimed)
            return operation == Operation.DELETE ? timestamp : SourceChange.NONE;
        return deletionTimestamp;
    }

    /**
     * A static row's change as it bears on one row of its partition ({@code key}: the full primary key; {@code
     * clustering}: the clustering columns' names and values): the same cells at the same timestamps, no row marker or
     * deletion of its own, as an update of that row.
     */
    public Task forRowOfPartition(List<ByteBuffer> key, Map<String, ByteBuffer> clustering)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>(values());
        values.putAll(clustering);
        Map<String, Long> times = timestamps == null ? Map.of() : timestamps;
        return new Task(flow, flowVersion, new SourceChange(Operation.UPDATE, key, timestamp, values, times, expirations(), 0,
                                                            SourceChange.NONE, SourceChange.NONE, false), createdNanos);
    }

    /** The change is of the partition's static row (its key is the partition key alone). */
    public boolean isStatic()
    {
        return isStatic;
    }

    /** A range deletion's clustering bounds; null for any other change. */
    public KeyRange range()
    {
        return range;
    }

    /** The same on every replica of its write (see {@link #idOf}). */
    public java.util.UUID id()
    {
        return new java.util.UUID(idMsb, idLsb);
    }

    public boolean isRecovered()
    {
        return recovered;
    }

    public int resumeTarget()
    {
        return resumeTarget;
    }

    /** null: from the start of {@link #resumeTarget()} */
    public ByteBuffer resumePaging()
    {
        return resumePaging == null ? null : ByteBuffer.wrap(resumePaging.clone());
    }

    /** The partition key components of the source key (the backup entry's partition). */
    public List<ByteBuffer> partitionKey(int partitionKeySize)
    {
        return key().subList(0, partitionKeySize);
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

    /** Failed executions so far. */
    public int attempts()
    {
        return attempts;
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

    /** The local expiration time (s) of each expiring cell of the source write, by column; empty: none expires. */
    public Map<String, Long> expirations()
    {
        return expirations == null ? Map.of() : Collections.unmodifiableMap(expirations);
    }

    /** The local expiration time (s) of the row liveness the source write set (INSERT USING TTL); 0: none. */
    public long rowExpiresAt()
    {
        return rowExpiresAt;
    }

    /** Only a task and what it holds may come out of a blob read back from a table. */
    private static final java.io.ObjectInputFilter ONLY_TASKS = java.io.ObjectInputFilter.Config.createFilter(
        Task.class.getName() + ";" + Operation.class.getName() + ";" + KeyRange.class.getName() + ";java.lang.*;java.util.ArrayList;java.util.LinkedHashMap;"
        + "java.util.HashMap;java.util.Map$Entry;[B;!*");

    /** As backup entries, spill files and dead letters store it ({@link TaskCodec#encode}). */
    public ByteBuffer serialize()
    {
        return TaskCodec.encode(this);
    }

    /** A task as stored by this version or an earlier one ({@link TaskCodec#decode}). */
    public static Task deserialize(ByteBuffer blob)
    {
        return TaskCodec.decode(blob);
    }

    /** Java serialization: how tasks were stored before {@link TaskCodec}, still written in its compatibility mode. */
    static ByteBuffer javaSerialized(Task task)
    {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes))
        {
            out.writeObject(task);
        }
        catch (java.io.IOException e)
        {
            throw new java.io.UncheckedIOException(e); // in memory: only if a field stopped being serializable
        }
        return ByteBuffer.wrap(bytes.toByteArray());
    }

    static Task javaDeserialized(byte[] bytes)
    {
        try (java.io.ObjectInputStream in = new TaskInputStream(new java.io.ByteArrayInputStream(bytes)))
        {
            in.setObjectInputFilter(ONLY_TASKS);
            return (Task) in.readObject();
        }
        catch (java.io.IOException | ClassNotFoundException | ClassCastException e)
        {
            throw new IllegalArgumentException("not a serialized task: " + e, e);
        }
    }

    /** Where this class lived before the plugin had packages: blobs stored by that version name it. */
    static final String FORMER_NAME = "org.asynctriggers.Task";

    /**
     * Reads a task whether its blob names this class or its former name, so backup entries, spill files and dead
     * letters written before an upgrade are still read (same serialVersionUID; fields added since, such as the
     * expirations, are absent from such a blob and read as null or 0, i.e. no TTL: compatible class evolution). The
     * former name resolves to this class while the blob's own description of its fields is the one read (Java
     * serialization matches a renamed class by its simple name).
     */
    private static final class TaskInputStream extends java.io.ObjectInputStream
    {
        TaskInputStream(java.io.InputStream in) throws java.io.IOException
        {
            super(in);
        }

        @Override
        protected Class<?> resolveClass(java.io.ObjectStreamClass desc) throws java.io.IOException, ClassNotFoundException
        {
            return FORMER_NAME.equals(desc.getName()) ? Task.class : super.resolveClass(desc);
        }
    }

    /** The key components in hex, colon-separated, for log lines. */
    public String keyHex()
    {
        StringBuilder sb = new StringBuilder("0x");
        for (byte[] component : key)
        {
            if (sb.length() > 2)
                sb.append(':');
            for (byte b : component)
                sb.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return sb.toString();
    }

    @Override
    public String toString()
    {
        return operation.eventName() + " key=" + keyHex() + " ts=" + timestamp + " flow=" + flow + " v" + flowVersion
               + (attempts == 0 ? "" : " attempts=" + attempts)
               + (expirations().isEmpty() && rowExpiresAt == 0 ? "" : " expiring=" + expirations().keySet() + (rowExpiresAt == 0 ? "" : "+row"));
    }
}
