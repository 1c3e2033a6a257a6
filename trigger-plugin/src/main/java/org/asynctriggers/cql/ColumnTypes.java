package org.asynctriggers.cql;

import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;

/** The CQL type of a source column, to compose values for handlers. */
@FunctionalInterface
public interface ColumnTypes
{
    /** null when unknown */
    AbstractType<?> typeOf(String column);

    /** The live schema's types of a table; none where no schema is loaded (a unit test), or the table is unknown. */
    static ColumnTypes orNone(String keyspace, String table)
    {
        ColumnTypes live = fromSchema(keyspace, table);
        return column -> {
            try
            {
                return live.typeOf(column);
            }
            catch (RuntimeException | ExceptionInInitializerError | NoClassDefFoundError e)
            {
                return null;
            }
        };
    }

    /** Reads the live schema of the node. */
    static ColumnTypes fromSchema(String keyspace, String table)
    {
        return column -> {
            TableMetadata metadata = Schema.instance.getTableMetadata(keyspace, table);
            if (metadata == null)
                return null;
            ColumnMetadata def = metadata.getColumn(ColumnIdentifier.getInterned(column, true));
            return def == null ? null : def.type;
        };
    }
}
