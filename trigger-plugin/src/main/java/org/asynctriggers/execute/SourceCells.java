package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;

/**
 * The source row as a task knows it, cell by cell (docs/design.md, "Write shapes"): each non-key column's value with
 * the timestamp and local expiration time of its cell, the row marker the write set, and the row deletion it carries.
 * A derived cell is written at its source cell's timestamp, so the derived rows follow Cassandra's last-write-wins
 * whatever order the tasks run in, and a value read back carries the write time it was read with, never the task's.
 */
final class SourceCells
{
    /** One source cell: its value (null: a tombstone), timestamp and local expiration time (s; 0: none). */
    static final class Cell
    {
        final ByteBuffer value;
        final long timestamp;
        final long expiresAt;

        Cell(ByteBuffer value, long timestamp, long expiresAt)
        {
            this.value = value;
            this.timestamp = timestamp;
            this.expiresAt = expiresAt;
        }
    }

    /** key columns and non-key values, as expressions read them (a null value: a null cell) */
    final Map<String, ByteBuffer> values;
    /** non-key columns only */
    final Map<String, Cell> cells;
    final long livenessTimestamp;
    final long livenessExpiresAt;
    final long deletionTimestamp;
    private SourceCells(Map<String, ByteBuffer> values, Map<String, Cell> cells, long livenessTimestamp, long livenessExpiresAt,
                        long deletionTimestamp)
    {
        this.values = values;
        this.cells = cells;
        this.livenessTimestamp = livenessTimestamp;
        this.livenessExpiresAt = livenessExpiresAt;
        this.deletionTimestamp = deletionTimestamp;
    }

    static SourceCells of(Task task, List<String> keyColumns)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>(task.values());
        Map<String, Cell> cells = new LinkedHashMap<>();
        Map<String, Long> expirations = task.expirations();
        for (Map.Entry<String, ByteBuffer> e : values.entrySet())
            if (!keyColumns.contains(e.getKey()))
                cells.put(e.getKey(), new Cell(e.getValue(), task.timestampOf(e.getKey()), expirations.getOrDefault(e.getKey(), 0L)));
        return new SourceCells(values, cells, task.livenessTimestamp(), task.rowExpiresAt(), task.deletionTimestamp());
    }

    /**
     * These cells checked against, and overlaid with, the source row as this replica holds it now ({@code read}, its
     * live cells with their write times and expirations; null when the row is gone). The executor holds every write
     * whose task it runs, so a cell of the task that this replica no longer holds was deleted since (a row, range or
     * partition deletion, a column deletion, or its TTL): it is written as what the source made of it, a tombstone at
     * its own timestamp, which a newer write still overrides; and the task's row marker, if the row is gone, as one
     * that expires at once. Otherwise, per column, the newer cell of the two. Of {@code columns}, those not in
     * {@code timedColumns} (a collection, a non-frozen UDT: many cells, no single write time) are taken as they are
     * now, at {@code fallbackTimestamp}, when the task has no cell of its own for them. {@code nowSeconds} dates an
     * expired marker.
     */
    SourceCells with(SourceRow read, List<String> columns, List<String> timedColumns, long nowSeconds, long fallbackTimestamp)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>(this.values);
        Map<String, Cell> cells = new LinkedHashMap<>(this.cells);
        if (read == null)
        {
            for (Map.Entry<String, Cell> e : this.cells.entrySet())
            {
                values.put(e.getKey(), null);
                cells.put(e.getKey(), new Cell(null, e.getValue().timestamp, 0));
            }
            long livenessExpiresAt = hasLiveness() ? Math.max(1, nowSeconds - 1) : 0; // expired: shadows as the source's does
            return new SourceCells(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp);
        }
        for (String column : columns)
        {
            SourceRow.Cell found = read.cells.get(column);
            Cell own = cells.get(column);
            if (!timedColumns.contains(column))
            {
                if (own == null && found != null)
                {
                    // a collection has no single write time: its value as it is now
                    values.put(column, found.value);
                    cells.put(column, new Cell(found.value, fallbackTimestamp, 0));
                }
                continue;
            }
            if (found == null)
            {
                if (own != null && own.value != null)
                {
                    // deleted since on this replica: what the source made of this cell
                    values.put(column, null);
                    cells.put(column, new Cell(null, own.timestamp, 0));
                }
                continue;
            }
            if (own != null && own.timestamp > found.timestamp)
                continue;
            values.put(column, found.value);
            cells.put(column, new Cell(found.value, found.timestamp, found.expiresAt));
        }
        return new SourceCells(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp);
    }

    boolean hasLiveness()
    {
        return livenessTimestamp != SourceChange.NONE;
    }

    boolean hasDeletion()
    {
        return deletionTimestamp != SourceChange.NONE;
    }
}
