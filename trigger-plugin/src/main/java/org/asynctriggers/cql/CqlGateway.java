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
     * A row as this node's own replica holds it, for the copies of its partition's static cells in its derived rows: in
     * the source a static cell belongs to the partition, so it neither dies with the row nor keeps it alive.
     */
    final class RowLife
    {
        public static final RowLife NONE = new RowLife(Long.MIN_VALUE, Long.MAX_VALUE);

        /** the newest deletion covering the row (its partition's, a range's or its own); Long.MIN_VALUE: none */
        public final long deletedAt;
        /**
         * when its last live marker or cell expires (local expiration time, s); Long.MAX_VALUE: one never does;
         * Long.MIN_VALUE: none lives (the row was deleted, or expired, since it was read)
         */
        public final long expiresAt;
        /** the timestamp of its newest live marker or cell; Long.MIN_VALUE: none lives (or not known) */
        public final long newest;
        /**
         * a part of it expires or expired (a marker or cell with a TTL, or a cell tombstone, which is what compaction
         * makes of an expired cell): the row may have been one that expires, once (true when not known)
         */
        public final boolean expiredOnce;
        /**
         * per regular column whose cell is not live here, the timestamp of that cell's newest tombstone, or of its
         * expired value (an expired cell is a tombstone at its own timestamp); with {@link #deletedAt}, when the
         * source deleted the column ({@link #columnDeletedAt})
         */
        public final Map<String, Long> deadCells;
        /**
         * the newest timestamp in its partition's static row (a live cell, a tombstone, an expired cell, a collection's
         * deletion): no copy of a static value in a derived row was made from a newer one; Long.MIN_VALUE: none
         */
        public final long staticsNewest;

        public RowLife(long deletedAt, long expiresAt)
        {
            this(deletedAt, expiresAt, Long.MIN_VALUE, true, Map.of());
        }

        public RowLife(long deletedAt, long expiresAt, long newest, boolean expiredOnce, Map<String, Long> deadCells)
        {
            this(deletedAt, expiresAt, newest, expiredOnce, deadCells, Long.MIN_VALUE);
        }

        public RowLife(long deletedAt, long expiresAt, long newest, boolean expiredOnce, Map<String, Long> deadCells, long staticsNewest)
        {
            this.deletedAt = deletedAt;
            this.expiresAt = expiresAt;
            this.newest = newest;
            this.expiredOnce = expiredOnce;
            this.deadCells = deadCells;
            this.staticsNewest = staticsNewest;
        }

        /**
         * When regular column {@code column} of the row was last deleted here (its own tombstone, its expiry, or a
         * deletion of its row, of a range holding it, of its partition); Long.MIN_VALUE: never, or no longer known
         * (compaction purged the tombstones). Meaningful for a column with no live cell.
         */
        public long columnDeletedAt(String column)
        {
            return Math.max(deletedAt, deadCells.getOrDefault(column, Long.MIN_VALUE));
        }
    }

    /** {@code primaryKey}: every key component, partition key first. */
    RowLife rowLife(String keyspace, String table, List<ByteBuffer> primaryKey);

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
