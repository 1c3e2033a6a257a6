package org.asynctriggers.cql;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

/**
 * A source row as a read gives it ({@link CqlGateway#readRow}): its live cells, with their write times and TTLs, and
 * when the row itself stops living. What a lineage target's task derives its rows from (docs/design.md, "Lineage").
 */
public final class SourceRow
{
    /** One live cell: its value, write time, and local expiration time in seconds (0: it does not expire). */
    public static final class Cell
    {
        public final ByteBuffer value;
        public final long timestamp;
        public final long expiresAt;
        /**
         * a collection (or non-frozen UDT) whose live elements do not all expire together: its elements in order,
         * consecutive ones that expire together as one run (a UDT's runs after the first, one field each); null
         * otherwise (then {@link #expiresAt} is every element's)
         */
        public final List<Run> runs;
        /**
         * a list's live elements in order, each a run of its own ({@link Run#value}: the element), for
         * {@link CqlGateway#writeList}: a list written through CQL gets new element positions each time, so a repeated
         * write would repeat its elements; null for any other column
         */
        public final List<Run> elements;

        public Cell(ByteBuffer value, long timestamp, long expiresAt)
        {
            this(value, timestamp, expiresAt, null, null);
        }

        public Cell(ByteBuffer value, long timestamp, long expiresAt, List<Run> runs, List<Run> elements)
        {
            this.value = value;
            this.timestamp = timestamp;
            this.expiresAt = expiresAt;
            this.runs = runs;
            this.elements = elements;
        }

        @Override
        public String toString()
        {
            return "Cell(ts=" + timestamp + (expiresAt == 0 ? "" : ", expires " + expiresAt) + ')';
        }
    }

    /**
     * Consecutive elements of a collection that expire together, serialized as that collection's value; or one field
     * of a non-frozen UDT ({@link #field} names it, {@link #value} is the field's own value).
     */
    public static final class Run
    {
        public final ByteBuffer value;
        public final long expiresAt;
        public final String field;

        public Run(ByteBuffer value, long expiresAt, String field)
        {
            this.value = value;
            this.expiresAt = expiresAt;
            this.field = field;
        }
    }

    /**
     * the live cells of the non-key columns, regular and static (a static column's value is its partition's), by
     * column; a collection's value is its live elements, serialized as CQL reads it, at its newest element's write
     * time and expiring with its first element to expire
     */
    public final Map<String, Cell> cells;
    /**
     * when the row's last live part (its marker, a regular cell) expires, local time in seconds; 0: one of them never
     * does
     */
    public final long expiresAt;

    public SourceRow(Map<String, Cell> cells, long expiresAt)
    {
        this.cells = cells;
        this.expiresAt = expiresAt;
    }

    @Override
    public String toString()
    {
        return "SourceRow" + cells.keySet() + (expiresAt == 0 ? "" : " expires " + expiresAt);
    }
}
