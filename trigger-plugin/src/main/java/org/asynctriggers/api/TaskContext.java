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

    /**
     * The source row's columns, by name, serialized; a null value is a null cell. For an insert or an update, the row as
     * the executing replica holds it when the task runs (it holds the task's own write): the write's cells, or newer
     * ones; for a delete, what the deletion names.
     */
    Map<String, ByteBuffer> values();

    /**
     * The write time (microseconds) of the source cell a column's value came from: write each derived value
     * {@code USING TIMESTAMP} its own write time, so that re-execution, late tasks and out-of-order timestamps converge
     * under last-write-wins. {@link #timestamp()} for a column without one (a key column, a collection, a null).
     */
    default long writetime(String column)
    {
        return timestamp();
    }

    /** A source column as a Java object, composed with the column's CQL type; null when absent or null. */
    Object get(String column);

    /**
     * Runs one CQL statement at the flow's write consistency. Values are bound (a {@link ByteBuffer} as is, any other
     * object decomposed with the bind marker's type). Returns the rows of a SELECT, column name to serialized value.
     */
    List<Map<String, ByteBuffer>> execute(String cql, Object... values);
}
