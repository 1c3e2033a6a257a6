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
     * These cells overlaid with a row read back with {@link Cql#selectCells} (values, WRITETIME, TTL): per column, the
     * newer of the two; {@code nowSeconds} turns the TTLs left into expiration times. A value without a write time of
     * its own (a collection) is taken at {@code fallbackTimestamp}.
     */
    SourceCells with(Map<String, ByteBuffer> read, List<String> columns, List<String> timedColumns, long nowSeconds, long fallbackTimestamp)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>(this.values);
        Map<String, Cell> cells = new LinkedHashMap<>(this.cells);
        for (String column : columns)
        {
            ByteBuffer value = read.get(column);
            ByteBuffer writetime = timedColumns.contains(column) ? read.get(Cql.writetimeColumn(column)) : null;
            if (writetime == null || writetime.remaining() != 8)
            {
                // a null cell has no write time, a collection no single one: keep what the task knows, else take the value
                if (!cells.containsKey(column) && value != null)
                {
                    values.put(column, value);
                    cells.put(column, new Cell(value, fallbackTimestamp, 0));
                }
                continue;
            }
            long ts = writetime.getLong(writetime.position());
            Cell own = cells.get(column);
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
