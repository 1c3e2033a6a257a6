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
 * Immutable; stored (backup entries, dead letters, spill files) in the format of {@link TaskCodec}. Still
 * {@link Serializable} with its fields as they are, because tasks stored before that format are Java-serialized
 * ({@link JavaSerializedTasks}). Its {@link #id()} is computed from the flow, the source key and the write's timestamp,
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
    /** {@link TaskIds#idOf}: the same on every replica of the write; its backup entry's id */
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
        java.util.UUID id = TaskIds.idOf(flow, change.key, timestamp, TaskIds.digestOf(this));
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
        this(task.flow, task.flowVersion, task.key, task.operation, task.timestamp, task.values, createdNanos, attempts, idMsb, idLsb,
             recovered, resumeTarget, resumePaging, task.expirations, task.rowExpiresAt, task.cellTimed, task.timestamps,
             task.livenessTimestamp, task.deletionTimestamp, task.isStatic, task.range);
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
        java.util.UUID id = TaskIds.retriedId(idMsb, idLsb, bytes(deadLetterId));
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

    /** The same on every replica of its write (see {@link TaskIds#idOf}). */
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
    /** The number of the key's components: the source's whole primary key for a row's change, fewer for a range's. */
    public int keySize()
    {
        return key.size();
    }

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
