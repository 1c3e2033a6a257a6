package org.asynctriggers.api;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

/** What a {@link FlowHandler} sees of one task. */
public interface TaskContext
{
    String flowName();

    Operation operation();

    /** The source write's timestamp (microseconds); use it as {@code USING TIMESTAMP} so re-execution converges. */
    long timestamp();

    /** The known primary key columns of the source row, by name, serialized. */
    Map<String, ByteBuffer> key();

    /** The source columns present in the update (or read back), by name, serialized; a null value is a null cell. */
    Map<String, ByteBuffer> values();

    /** A source column as a Java object, composed with the column's CQL type; null when absent or null. */
    Object get(String column);

    /**
     * Runs one CQL statement at the flow's write consistency. Values are bound (a {@link ByteBuffer} as is, any other
     * object decomposed with the bind marker's type). Returns the rows of a SELECT, column name to serialized value.
     */
    List<Map<String, ByteBuffer>> execute(String cql, Object... values);
}
