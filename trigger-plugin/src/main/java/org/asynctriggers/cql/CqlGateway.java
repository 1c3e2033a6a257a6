package org.asynctriggers.cql;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.db.ConsistencyLevel;

/**
 * The only way the executor talks to Cassandra: prepare once, execute with bound serialized values. The real
 * implementation ({@link QueryProcessorGateway}) goes through the coordinator path (StorageProxy), never local-only
 * execution; tests use an in-memory fake.
 */
public interface CqlGateway
{
    /** A prepared statement; {@code handle} is the implementation's own object. */
    final class Prepared
    {
        public final String cql;
        public final Object handle;

        public Prepared(String cql, Object handle)
        {
            this.cql = cql;
            this.handle = handle;
        }

        @Override
        public String toString()
        {
            return cql;
        }
    }

    /** @throws RuntimeException naming the statement when it does not prepare (missing keyspace/table/column) */
    Prepared prepare(String cql);

    /**
     * Whether a statement prepared earlier still matches its table's schema: false once the table was altered,
     * dropped or dropped and made again. A statement prepared against a table's former columns would write a
     * dropped column's value into nothing, and one of a dropped table would fail for good even once the table is
     * back; a caller prepares such a statement again, and gets the schema's own error when it no longer prepares.
     */
    default boolean isCurrent(Prepared statement)
    {
        return true;
    }

    /** Runs the statement; the rows of a SELECT (column name to value), empty for writes. */
    List<Map<String, ByteBuffer>> execute(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values);

    /**
     * Runs a SELECT on this node's own replica only (no other node, no read repair): what the executor reads of a
     * source row it holds itself, as it holds every write whose task it runs.
     */
    List<Map<String, ByteBuffer>> executeLocally(Prepared statement, List<ByteBuffer> values);

    /**
     * A source row with every live cell, its write time and TTL, and when the row stops living, read at
     * {@code consistency} through the coordinator path (the replicas' answers reconciled, read repair included), or on
     * this node's own replica only when {@code consistency} is null; null when the row has no live marker or regular
     * cell (deleted, expired, never written). What a lineage target's task derives its rows from.
     */
    SourceRow readRow(String keyspace, String table, List<ByteBuffer> primaryKey, ConsistencyLevel consistency);

    /** One row of a partition ({@link #readPartition}): its clustering values and what lives of it. */
    final class KeyedRow
    {
        public final List<ByteBuffer> clustering;
        public final SourceRow row;

        public KeyedRow(List<ByteBuffer> clustering, SourceRow row)
        {
            this.clustering = clustering;
            this.row = row;
        }
    }

    /**
     * Every row of a partition that has a live marker or regular cell, in clustering order, each as {@link #readRow}
     * gives one (without the static cells), read at {@code consistency} through the coordinator path: an aggregate's
     * members (docs/design.md, "Aggregates").
     */
    List<KeyedRow> readPartition(String keyspace, String table, List<ByteBuffer> partitionKey, ConsistencyLevel consistency);

    /**
     * Writes a list column of one row at {@code timestamp}: its older elements deleted (at {@code timestamp - 1}), then
     * {@code elements} in order, each with what is left of its TTL, at positions that depend on the order alone, so
     * that writing the same list twice at one timestamp gives it once (a CQL write of a list gives each element a new
     * position). {@code primaryKey}: every key component, partition key first.
     */
    void writeList(String keyspace, String table, List<ByteBuffer> primaryKey, String column, List<ByteBuffer> elements,
                   List<Integer> ttls, long timestamp, ConsistencyLevel consistency);

    /** The table's static columns (none when it has no clustering columns, or is gone). */
    Set<String> staticColumns(String keyspace, String table);

    /** One page of a SELECT and where the next one starts. */
    final class Page
    {
        public final List<Map<String, ByteBuffer>> rows;
        /** null when this was the last page */
        public final ByteBuffer next;

        public Page(List<Map<String, ByteBuffer>> rows, ByteBuffer next)
        {
            this.rows = rows;
            this.next = next;
        }
    }

    /**
     * Fetches one page of a SELECT from {@code from} (null: the start), a position that survives the node (it names
     * the last row returned, like a driver's paging state), so another node can go on from it.
     */
    Page fetchPage(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values, int pageSize, ByteBuffer from);

    /** Serializes a Java value for the bind marker at {@code index} (a ByteBuffer is passed through). */
    ByteBuffer bind(Prepared statement, int index, Object value);
}
