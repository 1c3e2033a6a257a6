package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.asynctriggers.execute.Statements.bigint;
import static org.asynctriggers.execute.Statements.longOf;

/**
 * The targets in mode {@code lineage} (docs/design.md, "Lineage"): each task records the image its rows derive from
 * in {@code async_triggers.lineage}, writes those rows, and then deletes the rows of every older image.
 */
final class Lineage
{
    private static final Logger logger = LoggerFactory.getLogger(FlowExecutor.class);

    private final FlowSpec spec;
    private final Statements statements;
    private final FanoutPages fanout;
    private final Rows targetRows;
    private final ByteBuffer flowNameBytes;
    /**
     * Lineage converges because whichever of two tasks of a source row reads last sees the other's entry: that needs
     * every lineage read to overlap every lineage write, whichever data centers the two executors are in (after a
     * data center fails, or while the data centers are cut off from each other, a row's tasks run on either side), so
     * the levels come from {@link #writeLevel} and {@link #readLevel}, not from the flow's.
     */
    private final ConsistencyLevel lineageWrite;
    private final ConsistencyLevel lineageRead;
    /**
     * How much longer than its rows the entry of an image with a TTL lives: while it lives, a task of an older image
     * run late (a takeover, a retry) still finds it newer and deletes its own rows; the same window in which a direct
     * target's expired cells shadow such a late write (Cassandra keeps them gc_grace_seconds, 10 days by default).
     * After it, the entry is gone by itself: TTL'd sources leave no lineage behind.
     */
    static final int EXPIRED_IMAGE_GRACE_SECONDS = 10 * 24 * 3600;

    /** How a lineage target's rows are deleted: as a direct target's ({@link FlowExecutor}). */
    interface Rows
    {
        /** Deletes what the values name of the target at {@code timestamp}. */
        void delete(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long timestamp);
    }

    Lineage(FlowSpec spec, Statements statements, FanoutPages fanout, Rows rows)
    {
        this.spec = spec;
        this.statements = statements;
        this.fanout = fanout;
        this.targetRows = rows;
        this.flowNameBytes = ByteBuffer.wrap(spec.name.getBytes(StandardCharsets.UTF_8));
        this.lineageWrite = writeLevel(spec.writeConsistency);
        this.lineageRead = readLevel(spec.readConsistency);
    }

    /** Prepares the lineage table's statements. */
    void prepare()
    {
        statements.prepare(Cql.lineageInsert());
        statements.prepare(Cql.lineageInsertWithTtl());
        statements.prepare(Cql.lineageSelect());
        statements.prepare(Cql.lineageDelete());
    }

    /**
     * Lineage entries are written (and deleted) at EACH_QUORUM, or ALL when the flow writes at ALL: a quorum of the
     * replicas in every data center, so a local quorum read in any data center meets it. A local quorum write (what a
     * flow at LOCAL_* asks for) would be missed by a task in the other data center, and QUORUM (a majority of all
     * replicas, which may lie mostly in one data center) by a local quorum read there. With a data center down, no
     * overlapping level can be met: lineage targets wait (a cluster failure costs no attempt) until it is back or
     * the task reaches its retry.max_age_ms; direct targets go on. On SimpleStrategy EACH_QUORUM is QUORUM.
     */
    static ConsistencyLevel writeLevel(ConsistencyLevel flowWrite)
    {
        return flowWrite == ConsistencyLevel.ALL ? ConsistencyLevel.ALL : ConsistencyLevel.EACH_QUORUM;
    }

    /**
     * Lineage entries are read at LOCAL_QUORUM, which meets any EACH_QUORUM write in this data center without a
     * round trip to the other; at the flow's own level when it is stronger across data centers (EACH_QUORUM, ALL).
     */
    static ConsistencyLevel readLevel(ConsistencyLevel flowRead)
    {
        return flowRead == ConsistencyLevel.ALL || flowRead == ConsistencyLevel.EACH_QUORUM ? flowRead : ConsistencyLevel.LOCAL_QUORUM;
    }

    /**
     * Step 1 of a lineage target: record the image (its lineage columns' values) at the image's own timestamp (the
     * newest write time of its cells, carried by the task or read back with them, never the task's: a value read back
     * from before a newer image must not outrank it), then write the rows derived from it. The row marker is at the
     * image's timestamp; each other cell at the newer of its own timestamp and the image's, so that the deletion of an
     * older image's rows (at this image's timestamp minus one) never reaches them, even where the two images derive the
     * same row or this image names a row an older deletion removed; the TTL of each is its own, the marker's that of
     * the image's shortest-lived cell. A lineage column set to null by this write is recorded as the target's
     * sentinel at that cell's timestamp, so that older rows are cleaned up.
     * <p>
     * A source whose image expired before the task ran derives nothing: its sentinel is recorded at the image's
     * timestamp (older images' rows go) and the rows its image names are deleted at it (an earlier attempt may have
     * written them).
     *
     * @return where the fan-out goes on, null when this target is done
     */
    ByteBuffer write(Task task, FlowSpec.Target target, SourceCells source, ByteBuffer from, long[] rows, long nowMillis)
    {
        Map<String, ByteBuffer> values = source.values;
        List<ByteBuffer> image = image(target, values);
        if (image == null || (target.fanout == null && FlowExecutor.keyOf(target, values, null) == null))
        {
            long nulled = nulledAt(target, source);
            if (nulled != Long.MIN_VALUE && from == null)
                record(task, target, List.of(), nulled, 0);
            return null;
        }
        long imageTs = Long.MIN_VALUE;
        long imageExpiresAt = 0;
        for (String column : target.lineageColumns)
        {
            SourceCells.Cell cell = source.cells.get(column);
            long ts = cell == null ? task.timestamp() : cell.timestamp;
            imageTs = Math.max(imageTs, ts);
            if (cell != null && cell.expiresAt != 0)
                imageExpiresAt = imageExpiresAt == 0 ? cell.expiresAt : Math.min(imageExpiresAt, cell.expiresAt);
        }
        if (task.rowExpiresAt() != 0 && source.livenessTimestamp == imageTs)
            imageExpiresAt = imageExpiresAt == 0 ? task.rowExpiresAt() : Math.min(imageExpiresAt, task.rowExpiresAt());
        long at = imageTs;
        Expiry expiry = imageExpiresAt == 0 ? Expiry.NONE : Expiry.remaining(imageExpiresAt, nowMillis);
        if (expiry.expired)
        {
            if (from == null)
                record(task, target, List.of(), at, 0);
            return fanout.eachRowOfPage(task, target, values, from, rows,
                                        row -> targetRows.delete(task, target, values, row, at));
        }
        if (from == null) // a resumed fan-out recorded its image with its first page
            record(task, target, image, at, expiry.ttl == 0 ? 0 : expiry.plus(EXPIRED_IMAGE_GRACE_SECONDS));
        long markerExpiresAt = imageExpiresAt;
        return fanout.eachRowOfPage(task, target, values, from, rows, row -> writeRow(task, target, source, row, at, markerExpiresAt, nowMillis));
    }

    /** One row of the image: its marker at the image's timestamp, its cells at theirs or the image's, whichever is newer. */
    private void writeRow(Task task, FlowSpec.Target target, SourceCells source, Map<String, ByteBuffer> fanoutRow, long imageTs,
                          long imageExpiresAt, long nowMillis)
    {
        List<ByteBuffer> key = FlowExecutor.keyOf(target, source.values, fanoutRow);
        if (key == null)
        {
            logger.warn("Flow '{}': {} key is unknown or null, row not written for {}", spec.name, target, task);
            return;
        }
        DerivedRow row = new DerivedRow(target, key).marker(imageTs, imageExpiresAt);
        for (Map.Entry<String, org.asynctriggers.spec.Expression> e : target.columns.entrySet())
        {
            if (target.primaryKey().contains(e.getKey()))
                continue;
            org.asynctriggers.spec.Expression expr = e.getValue();
            if (expr.scope == org.asynctriggers.spec.Expression.Scope.ROW)
            {
                if (fanoutRow != null)
                    row.cell(e.getKey(), new SourceCells.Cell(fanoutRow.get(expr.column), imageTs, 0));
                continue;
            }
            SourceCells.Cell cell = source.cells.get(expr.column);
            if (cell != null)
                row.cell(e.getKey(), new SourceCells.Cell(cell.value, Math.max(cell.timestamp, imageTs), cell.expiresAt));
        }
        row.write(statements, spec.writeConsistency, nowMillis);
    }

    /** When this write set a lineage column of the target to null (the newest such cell); MIN_VALUE: it did not. */
    private static long nulledAt(FlowSpec.Target target, SourceCells source)
    {
        long at = Long.MIN_VALUE;
        for (String column : target.lineageColumns)
        {
            SourceCells.Cell cell = source.cells.get(column);
            if (cell != null && cell.value == null)
                at = Math.max(at, cell.timestamp);
        }
        return at;
    }

    /** Records the target's sentinel for a deleted source row, at the deletion's timestamp. */
    void recordDelete(Task task, FlowSpec.Target target, long deletedAt)
    {
        record(task, target, List.of(), deletedAt, 0);
    }

    /** @param ttl seconds the entry lives; 0: for ever */
    private void record(Task task, FlowSpec.Target target, List<ByteBuffer> image, long at, int ttl)
    {
        ByteBuffer ts = bigint(at);
        if (ttl > 0)
            statements.execute(Cql.lineageInsertWithTtl(), lineageWrite, flowNameBytes, task.serializedKey(), lineageKey(target, image), ts,
                               ByteBuffer.allocate(4).putInt(0, ttl), ts);
        else
            statements.execute(Cql.lineageInsert(), lineageWrite, flowNameBytes, task.serializedKey(), lineageKey(target, image), ts, ts);
    }

    private static List<ByteBuffer> image(FlowSpec.Target target, Map<String, ByteBuffer> values)
    {
        List<ByteBuffer> image = new ArrayList<>(target.lineageColumns.size());
        for (String column : target.lineageColumns)
        {
            ByteBuffer value = values.get(column);
            if (value == null)
                return null;
            image.add(value);
        }
        return image;
    }

    /**
     * Lineage entries carry the target's index so that several lineage targets of a flow share one source key; a
     * target's sentinel (a delete, or no image) is its index alone.
     */
    private static ByteBuffer lineageKey(FlowSpec.Target target, List<ByteBuffer> image)
    {
        List<ByteBuffer> components = new ArrayList<>(image.size() + 1);
        components.add(ByteBuffer.allocate(4).putInt(0, target.index));
        components.addAll(image);
        return KeyCodec.encode(components);
    }

    /** The source row as far as a lineage entry knows it: the source key and the entry's image. */
    private Map<String, ByteBuffer> imageValues(Task task, FlowSpec.Target target, List<ByteBuffer> image)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>();
        List<String> keyNames = spec.source.primaryKey();
        List<ByteBuffer> key = task.key();
        for (int i = 0; i < keyNames.size(); i++)
            values.put(keyNames.get(i), key.get(i));
        for (int i = 0; i < target.lineageColumns.size(); i++)
            values.put(target.lineageColumns.get(i), image.get(i));
        return values;
    }

    /**
     * Step 3, per lineage target: every entry of the target older than its newest one names derived rows that no longer
     * derive from the source row: they and the entry are deleted. Whichever task reads last sees all entries.
     * <p>
     * The deletion is at the newest timestamp minus one when the newest entry is an image: the newest image's own rows
     * are written at the newest timestamp and outlive it, even where an old image derives the same row (a follower of
     * both the old and the new author of a tweet) and even when the newest task has not written them yet. When the
     * newest entry is a sentinel (the source row was deleted, or has no image), nothing derives from it and the
     * deletion is at its timestamp, as the source's own delete wins a tie.
     */
    void converge(Task task)
    {
        ByteBuffer sourceKey = task.serializedKey();
        List<Map<String, ByteBuffer>> entries = statements.execute(Cql.lineageSelect(), lineageRead, List.of(flowNameBytes, sourceKey));
        Map<Integer, List<LineageEntry>> byTarget = new LinkedHashMap<>();
        for (Map<String, ByteBuffer> row : entries)
        {
            LineageEntry entry = LineageEntry.of(row);
            if (entry == null)
            {
                logger.warn("Flow '{}': unreadable lineage entry of {} dropped", spec.name, task);
                statements.execute(Cql.lineageDelete(), lineageWrite, bigint(row.get("ts") == null ? task.timestamp() : longOf(row.get("ts"))),
                                   flowNameBytes, sourceKey, row.get("target_key"));
                continue;
            }
            byTarget.computeIfAbsent(entry.target, t -> new ArrayList<>()).add(entry);
        }
        for (Map.Entry<Integer, List<LineageEntry>> group : byTarget.entrySet())
        {
            LineageEntry newest = null;
            for (LineageEntry entry : group.getValue())
                if (newest == null || entry.newerThan(newest))
                    newest = entry;
            for (LineageEntry entry : group.getValue())
            {
                if (entry == newest)
                    continue;
                // an image that lost a tie of timestamps is deleted at that timestamp (its rows carry it)
                long deleteAt = newest.image.isEmpty() || entry.ts == newest.ts ? newest.ts : newest.ts - 1;
                deleteRowsOf(task, group.getKey(), entry, deleteAt);
                statements.execute(Cql.lineageDelete(), lineageWrite, bigint(deleteAt), flowNameBytes, sourceKey, entry.targetKey);
            }
        }
    }

    /** Deletes the rows an old image of a target derived, at {@code deleteAt}. */
    private void deleteRowsOf(Task task, int index, LineageEntry entry, long deleteAt)
    {
        if (entry.image.isEmpty())
            return; // a sentinel derived nothing
        if (index < 0 || index >= spec.targets.size() || spec.targets.get(index).mode != FlowSpec.Mode.LINEAGE)
        {
            logger.warn("Flow '{}': lineage entry names target {} which this version does not trace; entry dropped", spec.name, index);
            return;
        }
        FlowSpec.Target target = spec.targets.get(index);
        if (entry.image.size() != target.lineageColumns.size())
        {
            logger.warn("Flow '{}': lineage entry of target {} does not match its lineage columns {}; entry dropped",
                        spec.name, index, target.lineageColumns);
            return;
        }
        Map<String, ByteBuffer> old = imageValues(task, target, entry.image);
        fanout.eachRow(task, target, old, row -> targetRows.delete(task, target, old, row, deleteAt));
    }

    /** One row of {@code async_triggers.lineage}: a target's image (empty: its sentinel) and when it was written. */
    private static final class LineageEntry
    {
        final ByteBuffer targetKey;
        final int target;
        final List<ByteBuffer> image;
        final long ts;

        private LineageEntry(ByteBuffer targetKey, int target, List<ByteBuffer> image, long ts)
        {
            this.targetKey = targetKey;
            this.target = target;
            this.image = image;
            this.ts = ts;
        }

        /**
         * Cassandra's order of two writes of a cell: the newer timestamp; on a tie a deletion (the sentinel) wins, then the
         * greater value (for an image of one column, the value Cassandra keeps; of several, the greater serialized image).
         */
        boolean newerThan(LineageEntry other)
        {
            if (ts != other.ts)
                return ts > other.ts;
            if (image.isEmpty() != other.image.isEmpty())
                return image.isEmpty();
            return compareImages(image, other.image) > 0;
        }

        private static int compareImages(List<ByteBuffer> a, List<ByteBuffer> b)
        {
            for (int i = 0; i < Math.min(a.size(), b.size()); i++)
            {
                int c = org.apache.cassandra.utils.ByteBufferUtil.compareUnsigned(a.get(i), b.get(i));
                if (c != 0)
                    return c;
            }
            return Integer.compare(a.size(), b.size());
        }

        /** null when the row cannot be read */
        static LineageEntry of(Map<String, ByteBuffer> row)
        {
            ByteBuffer key = row.get("target_key");
            ByteBuffer ts = row.get("ts");
            if (key == null || ts == null || ts.remaining() != 8 || !key.hasRemaining())
                return null;
            try
            {
                List<ByteBuffer> components = KeyCodec.decode(key);
                ByteBuffer index = components.get(0);
                if (index.remaining() != 4)
                    return null;
                return new LineageEntry(key, index.getInt(index.position()), components.subList(1, components.size()), longOf(ts));
            }
            catch (RuntimeException e) // a corrupt blob: a length past its end, or a cut-off length
            {
                return null;
            }
        }
    }
}
