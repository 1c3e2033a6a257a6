package org.asynctriggers.task;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The clustering bounds of a range deletion ({@code DELETE ... WHERE pk = ? AND ck >= ? AND ck < ?}), as the source
 * table orders its clustering columns: each bound is a clustering prefix (possibly empty: unbounded) and whether it is
 * included. Immutable, serializable with its task.
 */
public final class KeyRange implements Serializable
{
    private static final long serialVersionUID = 1L;

    final ArrayList<byte[]> start;
    final boolean startInclusive;
    final ArrayList<byte[]> end;
    final boolean endInclusive;

    public KeyRange(List<ByteBuffer> start, boolean startInclusive, List<ByteBuffer> end, boolean endInclusive)
    {
        this.start = copy(start);
        this.startInclusive = startInclusive;
        this.end = copy(end);
        this.endInclusive = endInclusive;
    }

    /** A range as stored ({@link TaskCodec}): the bounds' components as they were written. */
    KeyRange(ArrayList<byte[]> start, boolean startInclusive, ArrayList<byte[]> end, boolean endInclusive)
    {
        this.start = start;
        this.startInclusive = startInclusive;
        this.end = end;
        this.endInclusive = endInclusive;
    }

    private static ArrayList<byte[]> copy(List<ByteBuffer> prefix)
    {
        ArrayList<byte[]> out = new ArrayList<>(prefix.size());
        for (ByteBuffer b : prefix)
        {
            byte[] bytes = new byte[b.remaining()];
            b.duplicate().get(bytes);
            out.add(bytes);
        }
        return out;
    }

    private static List<ByteBuffer> wrap(List<byte[]> prefix)
    {
        List<ByteBuffer> out = new ArrayList<>(prefix.size());
        for (byte[] b : prefix)
            out.add(ByteBuffer.wrap(b.clone()));
        return Collections.unmodifiableList(out);
    }

    public List<ByteBuffer> start()
    {
        return wrap(start);
    }

    public boolean startInclusive()
    {
        return startInclusive;
    }

    public List<ByteBuffer> end()
    {
        return wrap(end);
    }

    public boolean endInclusive()
    {
        return endInclusive;
    }

    /** Bytes that name the range, for a task's id. */
    void digestInto(java.io.ByteArrayOutputStream out)
    {
        out.write(startInclusive ? 1 : 0);
        out.write(start.size());
        for (byte[] b : start)
            TaskIds.writeChunk(out, b);
        out.write(endInclusive ? 1 : 0);
        out.write(end.size());
        for (byte[] b : end)
            TaskIds.writeChunk(out, b);
    }

    @Override
    public String toString()
    {
        return (startInclusive ? "[" : "(") + start.size() + " components.." + end.size() + " components" + (endInclusive ? "]" : ")");
    }
}
