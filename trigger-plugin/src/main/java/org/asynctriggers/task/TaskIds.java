package org.asynctriggers.task;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * A task's id (docs/design.md, "The task model"): the same on every replica of a write, and across plugin versions
 * (a rolling upgrade runs old and new nodes side by side, and both key the same backup entry by it), so nothing here
 * changes without a new id scheme that every node agrees on.
 */
final class TaskIds
{
    private TaskIds()
    {
    }

    /**
     * A name-based UUID of the flow, the source key, the write timestamp and what the write holds (its cells, their
     * timestamps and expirations, its row marker, deletion and range): what every replica computes alike for the same
     * captured change, and different for two writes of one row with one timestamp (two clients, or a retry with other
     * values), which must both run: Cassandra keeps, cell by cell, whichever wins the tie, and so do the derived rows
     * only if both tasks write theirs. A replica captures what the write changed in its copy of the row, so replicas
     * that applied a row's writes in different orders can give one write two ids (docs/design.md, "Who executes a
     * task": both run; backup/ScanSchedule has them adopted promptly).
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
        return nameUuid(out.toByteArray());
    }

    /** MD5 digests of this thread: {@code MessageDigest.getInstance} looks its provider up anew on every call. */
    private static final ThreadLocal<java.security.MessageDigest> MD5 = ThreadLocal.withInitial(() -> {
        try
        {
            return java.security.MessageDigest.getInstance("MD5");
        }
        catch (java.security.NoSuchAlgorithmException e)
        {
            throw new InternalError("MD5 not supported", e);
        }
    });

    /** What {@link java.util.UUID#nameUUIDFromBytes} gives (a version 3 UUID), from this thread's digest. */
    static java.util.UUID nameUuid(byte[] name)
    {
        java.security.MessageDigest md5 = MD5.get();
        md5.reset();
        byte[] hash = md5.digest(name);
        hash[6] = (byte) ((hash[6] & 0x0f) | 0x30);
        hash[8] = (byte) ((hash[8] & 0x3f) | 0x80);
        java.nio.ByteBuffer bits = java.nio.ByteBuffer.wrap(hash);
        return new java.util.UUID(bits.getLong(), bits.getLong());
    }

    /** What the write holds, in a stable order (the columns sorted by name). */
    static byte[] digestOf(Task task)
    {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(64);
        out.write(task.operation.ordinal());
        writeLong(out, task.livenessTimestamp);
        writeLong(out, task.deletionTimestamp);
        writeLong(out, task.rowExpiresAt);
        out.write(task.isStatic ? 1 : 0);
        for (String column : new java.util.TreeSet<>(task.values.keySet()))
        {
            writeChunk(out, column.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            byte[] value = task.values.get(column);
            out.write(value == null ? 0 : 1);
            if (value != null)
                writeChunk(out, value);
            writeLong(out, task.timestamps.getOrDefault(column, task.timestamp));
            writeLong(out, task.expirations.getOrDefault(column, 0L));
        }
        if (task.range != null)
            task.range.digestInto(out);
        return out.toByteArray();
    }

    static void writeLong(java.io.ByteArrayOutputStream out, long value)
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

    /** The id of a dead letter's task retried by an operator: from its first id and the dead letter's. */
    static java.util.UUID retriedId(long idMsb, long idLsb, byte[] deadLetterId)
    {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(40);
        writeLong(out, idMsb);
        writeLong(out, idLsb);
        writeChunk(out, deadLetterId);
        return nameUuid(out.toByteArray());
    }

    private static byte[] bytes(ByteBuffer buffer)
    {
        ByteBuffer b = buffer.duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }
}
