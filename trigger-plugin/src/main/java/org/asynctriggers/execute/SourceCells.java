package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
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
    /**
     * per non-key column without a cell here (null, no write time), when this replica deleted it, where that is
     * known ({@link #withDeletions}): the derived rows' copies of it go at that timestamp
     */
    final Map<String, Long> deletions;
    /**
     * the row is gone on this replica, and the copies of its partition's static values in its derived rows must go
     * with it at a timestamp no older than this ({@link #withStaticsGone}); {@link SourceChange#NONE}: the row lives,
     * or copies no static value
     */
    final long staticsGoneAt;

    private SourceCells(Map<String, ByteBuffer> values, Map<String, Cell> cells, long livenessTimestamp, long livenessExpiresAt,
                        long deletionTimestamp)
    {
        this(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp, Map.of());
    }

    private SourceCells(Map<String, ByteBuffer> values, Map<String, Cell> cells, long livenessTimestamp, long livenessExpiresAt,
                        long deletionTimestamp, Map<String, Long> deletions)
    {
        this(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp, deletions, SourceChange.NONE);
    }

    private SourceCells(Map<String, ByteBuffer> values, Map<String, Cell> cells, long livenessTimestamp, long livenessExpiresAt,
                        long deletionTimestamp, Map<String, Long> deletions, long staticsGoneAt)
    {
        this.staticsGoneAt = staticsGoneAt;
        this.values = values;
        this.cells = cells;
        this.livenessTimestamp = livenessTimestamp;
        this.livenessExpiresAt = livenessExpiresAt;
        this.deletionTimestamp = deletionTimestamp;
        this.deletions = deletions;
    }

    /** The columns of {@code columns} that have no cell (null here, with no write time), in a list of its own. */
    List<String> withoutCells(List<String> columns)
    {
        List<String> out = new java.util.ArrayList<>();
        for (String column : columns)
            if (!cells.containsKey(column))
                out.add(column);
        return out;
    }

    /**
     * These cells with, for each of {@code columns} (columns without a cell), when {@code row} says this replica
     * deleted it. A task that reads such a column back has no cell to write for it, yet the derived row it writes
     * may hold a copy of an older value: the row of an image that the source row had before, then lost (another
     * image, or none, in between: the column's deletion reached that one's rows), then had again, and whose rows the
     * task that would have deleted them as an older image's never did (it ran after this image was recorded again).
     */
    SourceCells withDeletions(List<String> columns, CqlGateway.RowLife row)
    {
        Map<String, Long> deleted = new LinkedHashMap<>();
        for (String column : columns)
        {
            long at = row.columnDeletedAt(column);
            if (at != Long.MIN_VALUE && at != Long.MAX_VALUE)
                deleted.put(column, at);
        }
        return deleted.isEmpty() ? this : new SourceCells(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp, deleted);
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

    /**
     * These cells with the copies of the static columns {@code statics} made to live as the row does: in the source a
     * static cell belongs to the partition, so a row or range deletion newer than it leaves it in place for the rows
     * written since, and it keeps no row alive; in a derived row its copy is a cell of the row. So a copy is no older
     * than the row's newest deletion + 1, and expires no later than the row when every live part of the row expires.
     * A copy in a row that never expires is one microsecond newer again when the row may have expired once (a TTL'd
     * row made permanent by a later write, newer than the copy or leaving a part with a TTL behind): its capped copy
     * at the same timestamp would win the tie (Cassandra keeps the expiring cell of two with one timestamp) and take
     * the value away when the old TTL ends. Not otherwise: a deletion at exactly the timestamp of the row's newest
     * write must shadow the copy, as it shadows the row.
     */
    SourceCells withStaticsOf(Set<String> statics, CqlGateway.RowLife row)
    {
        if (row.expiresAt == Long.MIN_VALUE)
            return this; // deleted since this row was read: its deletion shadows the copies as they are
        boolean deleted = row.deletedAt != Long.MIN_VALUE && row.deletedAt != Long.MAX_VALUE;
        boolean expiring = row.expiresAt != Long.MAX_VALUE;
        Map<String, Cell> copies = new LinkedHashMap<>(cells);
        for (Map.Entry<String, Cell> e : cells.entrySet())
        {
            Cell cell = e.getValue();
            if (!statics.contains(e.getKey()))
                continue;
            long timestamp = deleted && cell.timestamp <= row.deletedAt ? row.deletedAt + 1 : cell.timestamp;
            if (cell.value != null && !expiring && (row.expiredOnce || timestamp < row.newest))
                timestamp++;
            long expiresAt = cell.value != null && expiring ? (cell.expiresAt == 0 ? row.expiresAt : Math.min(cell.expiresAt, row.expiresAt))
                                                            : cell.expiresAt;
            copies.put(e.getKey(), new Cell(cell.value, timestamp, expiresAt));
        }
        return new SourceCells(values, copies, livenessTimestamp, livenessExpiresAt, deletionTimestamp, deletions);
    }

    /**
     * These cells of a row found gone on this replica, whose partition's static row {@code row} describes here and whose
     * live static cells' newest write time on all replicas is {@code staticsWritetime}: a copy of a static value in its
     * derived rows was written at most at the newest timestamp of the static row + 1, or at its row's newest deletion
     * + 2 ({@link #withStaticsOf} raises a copy above a deletion, then by one in a row that may have expired once), so
     * the copies go at the greatest of these. Unchanged when no static value was ever written.
     */
    SourceCells withStaticsGone(CqlGateway.RowLife row, long staticsWritetime)
    {
        long statics = Math.max(row.staticsNewest, staticsWritetime);
        if (statics == Long.MIN_VALUE)
            return this;
        long at = Math.max(statics + 1, row.deletedAt == Long.MIN_VALUE || row.deletedAt == Long.MAX_VALUE ? Long.MIN_VALUE : row.deletedAt + 2);
        return new SourceCells(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp, deletions, at);
    }

    /** These cells with those of {@code read} that are newer (or that these lack). */
    SourceCells withNewer(Map<String, Cell> read)
    {
        if (read.isEmpty())
            return this;
        Map<String, ByteBuffer> values = new LinkedHashMap<>(this.values);
        Map<String, Cell> cells = new LinkedHashMap<>(this.cells);
        for (Map.Entry<String, Cell> e : read.entrySet())
        {
            Cell own = cells.get(e.getKey());
            if (own == null || e.getValue().timestamp > own.timestamp)
            {
                cells.put(e.getKey(), e.getValue());
                values.put(e.getKey(), e.getValue().value);
            }
        }
        return new SourceCells(values, cells, livenessTimestamp, livenessExpiresAt, deletionTimestamp, deletions, staticsGoneAt);
    }

    boolean staticsGone()
    {
        return staticsGoneAt != SourceChange.NONE;
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
