package org.asynctriggers.task;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;

import org.asynctriggers.api.Operation;

/**
 * How a task is stored (backup entries, spill files, dead letters; docs/design.md, "Stored tasks"): an explicit,
 * versioned binary form that a later plugin reads field by field, so that what is on disk when a node is upgraded
 * is still read, and a field can be added without stranding the tasks stored before it.
 *
 * <p>Layout (big-endian): the magic {@code 'A' 'T'}, the format version (one byte), then the fields of that
 * version in order. Strings and byte arrays are an int length then the bytes (UTF-8 for strings); maps and lists an
 * int count ({@code -1}: null) then their entries; booleans one byte. A reader reads every version up to its own
 * and refuses a newer one with a message that names both; a version adds fields at the end only.
 *
 * <p>Before this format, tasks were stored with Java serialization (a blob starting {@code 0xACED}): still read.
 * Written again in the compatibility mode {@code -Dasync_triggers.task_format=java}, for a rolling upgrade from such
 * a version: an older node cannot read this format, so until every node runs a plugin that reads it, a node's backup
 * entries must be readable by the others (INSTALL.md, "Upgrading the plugin").
 */
public final class TaskCodec
{
    /** The format this plugin writes and the newest it reads. */
    public static final int VERSION = 1;
    /** The system property that selects the stored form: {@code 1} (default) or {@code java}. */
    public static final String FORMAT_PROPERTY = "async_triggers.task_format";

    private static final byte MAGIC_0 = 'A', MAGIC_1 = 'T';
    private static final byte JAVA_MAGIC_0 = (byte) 0xAC, JAVA_MAGIC_1 = (byte) 0xED;

    private TaskCodec()
    {
    }

    /** Whether this node writes tasks with Java serialization (the compatibility mode), read once. */
    static final boolean WRITE_JAVA = "java".equalsIgnoreCase(System.getProperty(FORMAT_PROPERTY, "").trim());

    public static ByteBuffer encode(Task task)
    {
        return WRITE_JAVA ? JavaSerializedTasks.write(task) : encodeCurrent(task);
    }

    /** This format, whatever the compatibility mode. */
    static ByteBuffer encodeCurrent(Task task)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (DataOutputStream out = new DataOutputStream(bytes))
        {
            out.writeByte(MAGIC_0);
            out.writeByte(MAGIC_1);
            out.writeByte(VERSION);
            string(out, task.flow);
            out.writeLong(task.flowVersion);
            out.writeByte(code(task.operation));
            out.writeLong(task.timestamp);
            out.writeInt(task.key.size());
            for (byte[] component : task.key)
                chunk(out, component);
            out.writeInt(task.values.size());
            for (Map.Entry<String, byte[]> e : task.values.entrySet())
            {
                string(out, e.getKey());
                out.writeBoolean(e.getValue() != null);
                if (e.getValue() != null)
                    chunk(out, e.getValue());
            }
            out.writeLong(task.createdNanos);
            out.writeInt(task.attempts);
            out.writeLong(task.idMsb);
            out.writeLong(task.idLsb);
            out.writeBoolean(task.recovered);
            out.writeInt(task.resumeTarget);
            out.writeBoolean(task.resumePaging != null);
            if (task.resumePaging != null)
                chunk(out, task.resumePaging);
            longs(out, task.expirations);
            out.writeLong(task.rowExpiresAt);
            out.writeBoolean(task.cellTimed);
            longs(out, task.timestamps);
            out.writeLong(task.livenessTimestamp);
            out.writeLong(task.deletionTimestamp);
            out.writeBoolean(task.isStatic);
            KeyRange range = task.range;
            out.writeBoolean(range != null);
            if (range != null)
            {
                out.writeBoolean(range.startInclusive);
                chunks(out, range.start);
                out.writeBoolean(range.endInclusive);
                chunks(out, range.end);
            }
        }
        catch (IOException e)
        {
            throw new UncheckedIOException(e); // in memory
        }
        return ByteBuffer.wrap(bytes.toByteArray());
    }

    /** A task stored in this format (any version up to {@link #VERSION}) or with Java serialization. */
    public static Task decode(ByteBuffer blob)
    {
        byte[] bytes = new byte[blob.remaining()];
        blob.duplicate().get(bytes);
        if (bytes.length >= 2 && bytes[0] == JAVA_MAGIC_0 && bytes[1] == JAVA_MAGIC_1)
            return JavaSerializedTasks.read(bytes);
        if (bytes.length < 3 || bytes[0] != MAGIC_0 || bytes[1] != MAGIC_1)
            throw new IllegalArgumentException("not a stored task: it starts with neither the task format's magic nor Java serialization's");
        int version = bytes[2] & 0xFF;
        if (version < 1 || version > VERSION)
            throw new IllegalArgumentException("a task stored in format version " + version + ", newer than this plugin reads ("
                                               + VERSION + "): a node with a newer plugin wrote it; upgrade this node");
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes, 3, bytes.length - 3)))
        {
            String flow = string(in);
            long flowVersion = in.readLong();
            Operation operation = operation(in.readByte());
            long timestamp = in.readLong();
            int keySize = count(in);
            ArrayList<byte[]> key = new ArrayList<>(keySize);
            for (int i = 0; i < keySize; i++)
                key.add(chunk(in));
            int valueCount = count(in);
            LinkedHashMap<String, byte[]> values = new LinkedHashMap<>();
            for (int i = 0; i < valueCount; i++)
            {
                String column = string(in);
                values.put(column, in.readBoolean() ? chunk(in) : null);
            }
            long createdNanos = in.readLong();
            int attempts = in.readInt();
            long idMsb = in.readLong(), idLsb = in.readLong();
            boolean recovered = in.readBoolean();
            int resumeTarget = in.readInt();
            byte[] resumePaging = in.readBoolean() ? chunk(in) : null;
            LinkedHashMap<String, Long> expirations = longs(in);
            long rowExpiresAt = in.readLong();
            boolean cellTimed = in.readBoolean();
            LinkedHashMap<String, Long> timestamps = longs(in);
            long liveness = in.readLong(), deletion = in.readLong();
            boolean isStatic = in.readBoolean();
            KeyRange range = null;
            if (in.readBoolean())
            {
                boolean startInclusive = in.readBoolean();
                ArrayList<byte[]> start = chunks(in);
                boolean endInclusive = in.readBoolean();
                range = new KeyRange(start, startInclusive, chunks(in), endInclusive);
            }
            if (in.available() > 0)
                throw new IllegalArgumentException(in.available() + " bytes after the last field of format version " + version);
            return new Task(flow, flowVersion, key, operation, timestamp, values, createdNanos, attempts, idMsb, idLsb, recovered,
                            resumeTarget, resumePaging, expirations, rowExpiresAt, cellTimed, timestamps, liveness, deletion,
                            isStatic, range);
        }
        catch (IOException e)
        {
            throw new IllegalArgumentException("a truncated or corrupt stored task (format version " + version + "): " + e, e);
        }
    }

    // ---- the parts ----

    private static int code(Operation operation)
    {
        switch (operation)
        {
            case INSERT: return 1;
            case UPDATE: return 2;
            case DELETE: return 3;
            default: throw new IllegalStateException("no stored code for " + operation);
        }
    }

    private static Operation operation(byte code) throws IOException
    {
        switch (code)
        {
            case 1: return Operation.INSERT;
            case 2: return Operation.UPDATE;
            case 3: return Operation.DELETE;
            default: throw new IOException("unknown operation code " + code);
        }
    }

    private static void chunk(DataOutputStream out, byte[] bytes) throws IOException
    {
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private static byte[] chunk(DataInputStream in) throws IOException
    {
        byte[] out = new byte[count(in)];
        in.readFully(out);
        return out;
    }

    /** A length or count: never negative, never more than what is left. */
    private static int count(DataInputStream in) throws IOException
    {
        int n = in.readInt();
        if (n < 0 || n > in.available())
            throw new IOException("length " + n + " with " + in.available() + " bytes left");
        return n;
    }

    private static void string(DataOutputStream out, String s) throws IOException
    {
        chunk(out, s.getBytes(StandardCharsets.UTF_8));
    }

    private static String string(DataInputStream in) throws IOException
    {
        return new String(chunk(in), StandardCharsets.UTF_8);
    }

    private static void chunks(DataOutputStream out, ArrayList<byte[]> list) throws IOException
    {
        out.writeInt(list.size());
        for (byte[] b : list)
            chunk(out, b);
    }

    private static ArrayList<byte[]> chunks(DataInputStream in) throws IOException
    {
        int n = count(in);
        ArrayList<byte[]> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++)
            out.add(chunk(in));
        return out;
    }

    private static void longs(DataOutputStream out, Map<String, Long> map) throws IOException
    {
        if (map == null)
        {
            out.writeInt(-1);
            return;
        }
        out.writeInt(map.size());
        for (Map.Entry<String, Long> e : map.entrySet())
        {
            string(out, e.getKey());
            out.writeLong(e.getValue());
        }
    }

    private static LinkedHashMap<String, Long> longs(DataInputStream in) throws IOException
    {
        int n = in.readInt();
        if (n == -1)
            return null;
        if (n < 0 || n > in.available())
            throw new IOException("count " + n + " with " + in.available() + " bytes left");
        LinkedHashMap<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < n; i++)
            out.put(string(in), in.readLong());
        return out;
    }
}
