package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.cql.Cql;
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
     * These cells checked against, and overlaid with, the source row as this replica holds it now, read with
     * {@link Cql#selectCells} (values, WRITETIME, TTL; {@code read} null when the row is gone). The executor holds every
     * write whose task it runs, so a cell of the task that this replica no longer holds was deleted since (a row,
     * range or partition deletion, a column deletion, or its TTL): it is written as what the source made of it, a
     * tombstone at its own timestamp, which a newer write still overrides; and the task's row marker, if the row is
     * gone, as one that expires at once. Otherwise, per column, the newer cell of the two. {@code nowSeconds} turns the
     * TTLs left into expiration times; a value without a write time of its own (a collection) is taken at
     * {@code fallbackTimestamp}.
     */
    SourceCells with(Map<String, ByteBuffer> read, List<String> columns, List<String> timedColumns, long nowSeconds, long fallbackTimestamp)
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
            ByteBuffer value = read.get(column);
            boolean timed = timedColumns.contains(column);
            ByteBuffer writetime = timed ? read.get(Cql.writetimeColumn(column)) : null;
            Cell own = cells.get(column);
            if (writetime == null || writetime.remaining() != 8)
            {
                if (timed && own != null && own.value != null)
                {
                    // deleted since on this replica: what the source made of this cell
                    values.put(column, null);
                    cells.put(column, new Cell(null, own.timestamp, 0));
                }
                else if (!timed && own == null && value != null)
                {
                    // a collection has no single write time: its value as it is now
                    values.put(column, value);
                    cells.put(column, new Cell(value, fallbackTimestamp, 0));
                }
                continue;
            }
            long ts = writetime.getLong(writetime.position());
            if (own != null && own.timestamp > ts)
                continue;
            ByteBuffer ttl = read.get(Cql.ttlColumn(column));
            long expiresAt = ttl != null && ttl.remaining() == 4 ? nowSeconds + ttl.getInt(ttl.position()) : 0;
            values.put(column, value);
            cells.put(column, new Cell(value, ts, expiresAt));
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
