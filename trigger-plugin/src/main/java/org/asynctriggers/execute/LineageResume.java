package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.cql.KeyCodec;

import static org.asynctriggers.execute.Statements.bigint;
import static org.asynctriggers.execute.Statements.longOf;

/**
 * Where a task goes on in a lineage target's fan-out (docs/design.md, "Lineage"): the version its first page took,
 * the images it derives rows from, and the fan-out's paging state. Stored as the task's resume position (in its
 * backup entry), so that a takeover goes on under the same version.
 */
final class LineageResume
{
    /** the first byte of a resume position that carries a version (a former plugin's is a bare paging state) */
    private static final byte MAGIC = 'V';

    final long version;
    final Map<Integer, List<ByteBuffer>> images;
    final ByteBuffer paging;

    LineageResume(long version, Map<Integer, List<ByteBuffer>> images, ByteBuffer paging)
    {
        this.version = version;
        this.images = images;
        this.paging = paging;
    }

    /** The resume position of a task's lineage fan-out: the magic byte, the version, the images, the paging state. */
    static ByteBuffer encode(Lineage.Sync sync, ByteBuffer paging)
    {
        List<ByteBuffer> parts = new ArrayList<>();
        parts.add(bigint(sync.version));
        for (Map.Entry<Integer, List<ByteBuffer>> image : sync.images.entrySet())
            parts.add(Lineage.lineageKey(image.getKey(), image.getValue()));
        parts.add(paging.duplicate());
        ByteBuffer body = KeyCodec.encode(parts);
        ByteBuffer out = ByteBuffer.allocate(1 + body.remaining());
        out.put(MAGIC).put(body).flip();
        return out;
    }

    /** A resume position {@link #encode} made; null for any other (a former plugin's bare paging state). */
    static LineageResume decode(ByteBuffer position)
    {
        if (position == null || !position.hasRemaining() || position.get(position.position()) != MAGIC)
            return null;
        ByteBuffer body = position.duplicate();
        body.position(body.position() + 1);
        List<ByteBuffer> parts;
        try
        {
            parts = KeyCodec.decode(body);
        }
        catch (IllegalArgumentException e)
        {
            return null;
        }
        if (parts.size() < 2 || parts.get(0).remaining() != 8)
            return null;
        Map<Integer, List<ByteBuffer>> images = new LinkedHashMap<>();
        for (ByteBuffer image : parts.subList(1, parts.size() - 1))
        {
            List<ByteBuffer> components = KeyCodec.decode(image);
            images.put(components.get(0).getInt(components.get(0).position()), List.copyOf(components.subList(1, components.size())));
        }
        return new LineageResume(longOf(parts.get(0)), images, parts.get(parts.size() - 1));
    }
}
