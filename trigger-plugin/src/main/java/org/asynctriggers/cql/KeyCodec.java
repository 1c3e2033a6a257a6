package org.asynctriggers.cql;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Serializes a list of key components into one blob (4-byte length, then the bytes, per component) and back.
 * Used for a task's key and for the {@code source_key}/{@code target_key} columns of {@code async_triggers.lineage}.
 */
public final class KeyCodec
{
    private KeyCodec()
    {
    }

    public static ByteBuffer encode(List<ByteBuffer> components)
    {
        int size = 0;
        for (ByteBuffer c : components)
            size += 4 + c.remaining();
        ByteBuffer out = ByteBuffer.allocate(size);
        for (ByteBuffer c : components)
        {
            out.putInt(c.remaining());
            out.put(c.duplicate());
        }
        out.flip();
        return out;
    }

    public static List<ByteBuffer> decode(ByteBuffer blob)
    {
        ByteBuffer in = blob.duplicate();
        List<ByteBuffer> out = new ArrayList<>();
        while (in.hasRemaining())
        {
            int length = in.getInt();
            if (length < 0 || length > in.remaining())
                throw new IllegalArgumentException("corrupt key blob: component length " + length + " with " + in.remaining() + " bytes left");
            ByteBuffer component = in.slice();
            component.limit(length);
            out.add(component);
            in.position(in.position() + length);
        }
        return out;
    }
}
