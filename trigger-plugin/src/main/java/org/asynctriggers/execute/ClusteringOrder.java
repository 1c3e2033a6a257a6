package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;

import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.utils.ByteBufferUtil;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.KeyRange;

/**
 * The source table's order of its clustering columns (each column's type, reversed for a DESC column), to tell whether
 * a row's clustering lies within a range deletion's bounds as Cassandra's slice does: a bound is a prefix, included or
 * not. Without the types (a unit test's fake schema) values compare as unsigned bytes.
 */
final class ClusteringOrder
{
    private final List<String> clustering;
    private final ColumnTypes types;

    ClusteringOrder(FlowSpec.Source source, ColumnTypes types)
    {
        this.clustering = source.clustering;
        this.types = types == null ? c -> null : types;
    }

    /** Whether a full clustering (source order) lies within the range. */
    boolean contains(KeyRange range, List<ByteBuffer> row)
    {
        int start = compare(row, range.start());
        int end = compare(row, range.end());
        return (start > 0 || (start == 0 && range.startInclusive())) && (end < 0 || (end == 0 && range.endInclusive()));
    }

    /** The order of a clustering and a bound, on the bound's components (a shorter bound is a prefix). */
    private int compare(List<ByteBuffer> row, List<ByteBuffer> bound)
    {
        for (int i = 0; i < bound.size() && i < row.size(); i++)
        {
            ByteBuffer a = row.get(i);
            ByteBuffer b = bound.get(i);
            if (a == null)
                return 0;
            AbstractType<?> type = types.typeOf(clustering.get(i));
            int c = type == null ? ByteBufferUtil.compareUnsigned(a, b) : type.compare(a, b);
            if (c != 0)
                return c;
        }
        return 0;
    }
}
