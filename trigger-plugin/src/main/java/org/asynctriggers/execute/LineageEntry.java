package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.KeyCodec;

import static org.asynctriggers.execute.Statements.longOf;

/** One row of {@code async_triggers.lineage}: a target's image (empty: its sentinel) and when it was written. */
final class LineageEntry
{
    final ByteBuffer targetKey;
    final int target;
    final List<ByteBuffer> image;
    final long ts;
    /** the newest timestamp of the cells written to the image's rows (at least {@link #ts}) */
    final long written;
    /** the image's cells expire (its entry has a TTL): on a tie of timestamps it wins over one that does not, as in Cassandra */
    final boolean expiring;
    /** the seconds the entry has left as read (0: it lives for ever, or it was not read) */
    final int ttl;

    LineageEntry(ByteBuffer targetKey, int target, List<ByteBuffer> image, long ts, long written)
    {
        this(targetKey, target, image, ts, written, false);
    }

    LineageEntry(ByteBuffer targetKey, int target, List<ByteBuffer> image, long ts, long written, boolean expiring)
    {
        this(targetKey, target, image, ts, written, expiring, 0);
    }

    private LineageEntry(ByteBuffer targetKey, int target, List<ByteBuffer> image, long ts, long written, boolean expiring, int ttl)
    {
        this.ttl = ttl;
        this.expiring = expiring;
        this.written = Math.max(ts, written);
        this.targetKey = targetKey;
        this.target = target;
        this.image = image;
        this.ts = ts;
    }

    /**
     * Cassandra's order of two writes of a cell: the newer timestamp; on a tie a deletion (the sentinel) wins, then an
     * expiring cell, then the greater value (for an image of one column, the value Cassandra keeps; of several, the greater serialized image).
     */
    boolean newerThan(LineageEntry other)
    {
        if (ts != other.ts)
            return ts > other.ts;
        if (image.isEmpty() != other.image.isEmpty())
            return image.isEmpty();
        if (expiring != other.expiring)
            return expiring;
        return compareImages(image, other.image) > 0;
    }

    private static int compareImages(List<ByteBuffer> a, List<ByteBuffer> b)
    {
        for (int i = 0; i < Math.min(a.size(), b.size()); i++)
        {
            int c = org.apache.cassandra.utils.ByteBufferUtil.compareUnsigned(a.get(i), b.get(i));
            if (c != 0)
                return c;
        }
        return Integer.compare(a.size(), b.size());
    }

    /** This entry with {@code written} raised to at least {@code newest}. */
    LineageEntry writtenUpTo(long newest)
    {
        return new LineageEntry(targetKey, target, image, ts, Math.max(written, newest), expiring, ttl);
    }

    /** null when the row cannot be read */
    static LineageEntry of(Map<String, ByteBuffer> row)
    {
        ByteBuffer key = row.get("target_key");
        ByteBuffer ts = row.get("ts");
        if (key == null || ts == null || ts.remaining() != 8 || !key.hasRemaining())
            return null;
        try
        {
            List<ByteBuffer> components = KeyCodec.decode(key);
            ByteBuffer index = components.get(0);
            if (index.remaining() != 4)
                return null;
            ByteBuffer written = row.get("written");
            ByteBuffer ttl = row.get(Cql.ttlColumn("ts"));
            int left = ttl == null || ttl.remaining() != 4 ? 0 : ttl.getInt(ttl.position());
            // an entry has a TTL exactly when its image's cells expire (an image's, never a sentinel's or a floor's)
            return new LineageEntry(key, index.getInt(index.position()), components.subList(1, components.size()), longOf(ts),
                                    written == null || written.remaining() != 8 ? Long.MIN_VALUE : longOf(written), left > 0, left);
        }
        catch (RuntimeException e) // a corrupt blob: a length past its end, or a cut-off length
        {
            return null;
        }
    }
}
