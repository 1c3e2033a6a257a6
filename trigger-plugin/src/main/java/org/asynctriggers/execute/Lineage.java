package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongUnaryOperator;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
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
 * About 790 lines: the image's record, its rows' writes above the floor and the convergence that deletes older images'
 * rows (and raises the floor) are one protocol whose ordering arguments refer to each other; split, each part would
 * need the others to be read. What a read of the partition holds is {@link LineagePartition}.
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
    /** the indexes of the targets whose cells keep their own timestamps ({@link #keepsOwnTimestamps}) */
    private final Set<Integer> ownTimestamps = new java.util.HashSet<>();
    /** the indexes of the fan-outs whose older images' deletions spare the newest image's rows ({@link #sparesNewest}) */
    private final Set<Integer> sparing = new java.util.HashSet<>();
    /**
     * How much longer than its rows the entry of an image with a TTL lives: while it lives, a task of an older image
     * run late (a takeover, a retry) still finds it newer and deletes its own rows; the same window in which a direct
     * target's expired cells shadow such a late write (Cassandra keeps them gc_grace_seconds, 10 days by default).
     * After it, the entry is gone by itself (sentinels and floors stay).
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
        for (FlowSpec.Target target : spec.targets)
            if (keepsOwnTimestamps(spec, target))
                ownTimestamps.add(target.index);
            else if (sparesNewest(spec, target))
                sparing.add(target.index);
    }

    /** Prepares the lineage table's statements. */
    void prepare()
    {
        statements.prepare(Cql.lineageInsert());
        statements.prepare(Cql.lineageInsertWithTtl());
        statements.prepare(Cql.lineageSelect());
        statements.prepare(Cql.lineageDelete());
        if (!spec.source.clustering.isEmpty())
        {
            statements.prepare(Cql.lineageKeyInsert());
            statements.prepare(Cql.lineageKeysSelect());
            statements.prepare(Cql.lineageKeyDelete());
        }
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
     * What a task wrote to a lineage target: the entry its rows stand for, the floor their cells were written above,
     * and how to write them again above a higher one (returning the newest timestamp written; null where the cells
     * are raised to the image's timestamp: a fan-out of more than one page, or one that does not spare).
     */
    static final class Written
    {
        final LineageEntry entry;
        /** the entry of the image's key the task found before it wrote (null: none) */
        final LineageEntry before;
        final long floor;
        final LongUnaryOperator rewrite;

        Written(LineageEntry entry, LineageEntry before, long floor, LongUnaryOperator rewrite)
        {
            this.entry = entry;
            this.before = before;
            this.floor = floor;
            this.rewrite = rewrite;
        }
    }

    /**
     * Step 1 of a lineage target: record the image (its lineage columns' values) at the image's own timestamp (the
     * newest write time of its cells, carried by the task or read back with them, never the task's: a value read back
     * from before a newer image must not outrank it), then write the rows derived from it. The row marker is at the
     * image's timestamp. Each other cell of a direct target keeps its own timestamp, raised just above the partition's
     * floor where that is newer ({@link LineagePartition}): the rows of an older image were deleted at the floor, and
     * this image may name those very rows again. Two images of a fan-out share rows (a follower of both the old and
     * the new author of a tweet), and the deletion of an older image's rows (at this image's timestamp minus one) must
     * never reach this one's. A fan-out that spares ({@link #sparesNewest}) leaves them out of that deletion instead,
     * so that its cells keep their own timestamps, raised only above its floor for this image
     * ({@link LineagePartition#fanoutFloorFor}): a cell raised to the image's timestamp ties with a value of the same
     * column written at that timestamp after the task read the row (two updates of one row with one timestamp, the
     * first one's task reading the row before the second lands), and the tie goes to the greater value, where the
     * source has the second write's. It does so when its fan-out is one page: the convergence runs with the last page,
     * and knows only the floor that page was written above. Other fan-outs' cells are at the newer of their own
     * timestamp and the image's. The TTL of each is its own, the marker's that of the image's shortest-lived cell. A lineage column set to null by this
     * write is recorded as the target's sentinel at that cell's timestamp, so that older rows are cleaned up.
     * <p>
     * A source whose image expired before the task ran derives nothing: its sentinel is recorded at the image's
     * timestamp (older images' rows go) and the rows its image names are deleted at it (an earlier attempt may have
     * written them). A task whose image a newer one of another key has replaced writes its other cells into the newer
     * image's rows: the two writes may have raced, and the newer image's task may have read those cells back before
     * this write landed.
     *
     * @return where the fan-out goes on, null when this target is done
     */
    ByteBuffer write(Task task, FlowSpec.Target target, SourceCells source, ByteBuffer from, long[] rows, long nowMillis,
                     Map<Integer, Written> mine)
    {
        Map<String, ByteBuffer> values = source.values;
        List<ByteBuffer> image = image(target, values);
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
        if (image == null || (target.fanout == null && FlowExecutor.keyOf(target, values, null) == null))
        {
            // no image (a null lineage column), or one that names no row (an empty partition key value): the
            // target's sentinel, so that an older image's rows go
            long nulled = image == null ? nulledAt(target, source) : imageTs;
            if (nulled != Long.MIN_VALUE && from == null)
                record(task, target, List.of(), nulled, 0, nulled);
            return null;
        }
        boolean cellsExpire = imageExpiresAt != 0; // the tie-break of cells: the lineage columns' own TTL, not the row's
        if (task.rowExpiresAt() != 0 && source.livenessTimestamp == imageTs)
            imageExpiresAt = imageExpiresAt == 0 ? task.rowExpiresAt() : Math.min(imageExpiresAt, task.rowExpiresAt());
        long at = imageTs;
        boolean direct = ownTimestamps.contains(target.index);
        boolean spares = sparing.contains(target.index);
        Expiry expiry = imageExpiresAt == 0 ? Expiry.NONE : Expiry.remaining(imageExpiresAt, nowMillis);
        if (expiry.expired)
        {
            if (from == null)
            {
                record(task, target, List.of(), at, 0, at);
                if (direct || spares) // a sentinel spares no row
                    raiseFloor(task.serializedKey(), target.index, at);
            }
            return fanout.eachRowOfPage(task, target, values, from, rows,
                                        row -> targetRows.delete(task, target, values, row, at));
        }
        LineageEntry own = new LineageEntry(lineageKey(target.index, image), target.index, image, at, at, cellsExpire);
        Set<String> statics = spec.source.clustering.isEmpty() ? Set.of() : statements.gateway.staticColumns(spec.source.keyspace, spec.source.table);
        // rows two images can share and no deletion spares: every cell at least at the image's timestamp, as "above"
        // gives for this floor
        CellTimes times = new CellTimes(at - 1, at, statics);
        CellTimes spared = null; // a sparing fan-out's on its first page: its own timestamps above its floor
        LineageEntry before = null;
        // on the first page only: a fan-out's later pages go on from a start that recorded the image, and must go on
        // while a replica is down (a lineage read needs a quorum; its rows are written at the flow's level)
        if (from == null)
        {
            LineagePartition recorded = read(task.serializedKey());
            LineageEntry newer = recorded.newerOfAnotherImage(own);
            if (newer != null)
            {
                if (direct && !newer.image.isEmpty())
                    writeIntoNewer(task, target, source, newer, new CellTimes(recorded.floorOf(target.index), at, statics), nowMillis, mine);
                return null; // this image's rows must not be written at all
            }
            before = recorded.entryOf(own);
            if (direct)
                times = new CellTimes(recorded.floorFor(own, before), at, statics);
            else if (spares)
                spared = new CellTimes(recorded.fanoutFloorFor(own, before), at, statics);
        }
        CellTimes cellTimes = times;
        long markerExpiresAt = imageExpiresAt;
        // the same whichever times a sparing fan-out's page gets: a cell above the floor keeps its timestamp in both,
        // one under it is at most the image's timestamp in both
        long written = Math.max(at, newestCell(target, source, cellTimes));
        LineageEntry entry = own.writtenUpTo(written);
        LongUnaryOperator rewrite = !direct ? null : above -> {
            writeRow(task, target, values, source, null, at, markerExpiresAt, nowMillis, cellTimes.above(above));
            return Math.max(at, newestCell(target, source, cellTimes.above(above)));
        };
        mine.put(target.index, new Written(entry, before, cellTimes.floor, rewrite));
        if (from == null) // a resumed fan-out recorded its image with its first page
        {
            record(task, target, image, at, expiry.ttl == 0 ? 0 : expiry.plus(EXPIRED_IMAGE_GRACE_SECONDS), written);
            if (!spec.source.clustering.isEmpty())
                statements.execute(Cql.lineageKeyInsert(), lineageWrite, flowNameBytes, partitionOf(task.key()), task.serializedKey(), bigint(at));
        }
        if (spared == null)
            return fanout.eachRowOfPage(task, target, values, from, rows,
                                        row -> writeRow(task, target, values, source, row, at, markerExpiresAt, nowMillis, cellTimes));
        CellTimes ownTimes = spared;
        LineageEntry before0 = before;
        return fanout.eachRowOfPageChosen(task, target, values, from, rows, whole -> {
            if (!whole) // more pages: they run later, and their convergence no longer knows this page's floor
                return row -> writeRow(task, target, values, source, row, at, markerExpiresAt, nowMillis, cellTimes);
            mine.put(target.index, new Written(entry, before0, ownTimes.floor, above -> {
                fanout.eachRow(task, target, values, row -> writeRow(task, target, values, source, row, at, markerExpiresAt, nowMillis, ownTimes.above(above)));
                return Math.max(at, newestCell(target, source, ownTimes.above(above)));
            }));
            return row -> writeRow(task, target, values, source, row, at, markerExpiresAt, nowMillis, ownTimes);
        });
    }

    /**
     * One row of an image: its marker at the image's timestamp ({@link Long#MIN_VALUE}: none), its cells at the
     * timestamps {@code times} gives, none living longer than the image.
     */
    private void writeRow(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, SourceCells source,
                          Map<String, ByteBuffer> fanoutRow, long markerTs, long imageExpiresAt, long nowMillis, CellTimes times)
    {
        List<ByteBuffer> key = FlowExecutor.keyOf(target, values, fanoutRow);
        if (key == null)
        {
            logger.warn("Flow '{}': {} key is unknown or null, row not written for {}", spec.name, target, task);
            return;
        }
        DerivedRow row = new DerivedRow(target, key);
        if (markerTs != Long.MIN_VALUE)
            row.marker(markerTs, imageExpiresAt);
        for (Map.Entry<String, org.asynctriggers.spec.Expression> e : target.columns.entrySet())
        {
            if (target.primaryKey().contains(e.getKey()))
                continue;
            org.asynctriggers.spec.Expression expr = e.getValue();
            if (expr.scope == org.asynctriggers.spec.Expression.Scope.ROW)
            {
                if (fanoutRow != null && markerTs != Long.MIN_VALUE)
                    row.cell(e.getKey(), new SourceCells.Cell(fanoutRow.get(expr.column), markerTs, 0));
                continue;
            }
            SourceCells.Cell cell = source.cells.get(expr.column);
            // a cell of the row lives no longer than the image it is keyed by: the row goes when its image expires
            long expiresAt = cell == null ? 0 : cell.expiresAt == 0 ? imageExpiresAt
                           : imageExpiresAt == 0 ? cell.expiresAt : Math.min(cell.expiresAt, imageExpiresAt);
            if (cell != null)
                row.cell(e.getKey(), new SourceCells.Cell(cell.value, times.of(expr.column, cell), expiresAt));
            else if (source.deletions.containsKey(expr.column))
                // deleted in the source: a copy of an older value goes, at the deletion's own timestamp (not raised
                // as a value is: a value written later above that timestamp, out of order, is the source's value)
                row.cell(e.getKey(), new SourceCells.Cell(null, source.deletions.get(expr.column), 0));
        }
        if (!row.isEmpty())
            row.write(statements, spec.writeConsistency, nowMillis);
    }

    /** The newest timestamp the source's cells get in the target's rows ({@link LineagePartition#above}); MIN_VALUE: none. */
    private static long newestCell(FlowSpec.Target target, SourceCells source, CellTimes times)
    {
        long newest = Long.MIN_VALUE;
        for (Map.Entry<String, org.asynctriggers.spec.Expression> e : target.columns.entrySet())
        {
            SourceCells.Cell cell = e.getValue().scope == org.asynctriggers.spec.Expression.Scope.SOURCE ? source.cells.get(e.getValue().column) : null;
            if (cell != null && !target.primaryKey().contains(e.getKey()))
                newest = Math.max(newest, times.of(e.getValue().column, cell));
        }
        return newest;
    }

    /**
     * A task of an image that a newer image of another key replaced: its cells other than the image's are cells of
     * the source row as the newer image has it, and are written into the newer image's row (no marker: that is the
     * newer task's) above the floor, its entry's {@code written} raised with them so that the row's later deletion
     * reaches them. Its TTL, when it has one, bounds their life as the newer task's own cells.
     */
    private void writeIntoNewer(Task task, FlowSpec.Target target, SourceCells source, LineageEntry newer, CellTimes times,
                                long nowMillis, Map<Integer, Written> mine)
    {
        long imageExpiresAt = 0;
        if (newer.ttl > 0)
        {
            long left = newer.ttl - (long) EXPIRED_IMAGE_GRACE_SECONDS;
            if (left <= 0)
                return; // the newer image expired: its rows are gone, and these cells with them
            imageExpiresAt = nowMillis / 1000 + left;
        }
        long newest = newestCell(target, source, times);
        if (newest == Long.MIN_VALUE)
            return;
        Map<String, ByteBuffer> values = new LinkedHashMap<>(source.values);
        for (int i = 0; i < target.lineageColumns.size(); i++)
            values.put(target.lineageColumns.get(i), newer.image.get(i));
        long expiresAt = imageExpiresAt;
        LongUnaryOperator rewrite = above -> {
            writeRow(task, target, values, source, null, Long.MIN_VALUE, expiresAt, nowMillis, times.above(above));
            return newestCell(target, source, times.above(above));
        };
        rewrite.applyAsLong(times.floor);
        LineageEntry raised = newer.writtenUpTo(newest);
        if (raised.written > newer.written)
            rerecord(task.serializedKey(), raised);
        mine.put(target.index, new Written(raised, newer, times.floor, rewrite));
    }

    /**
     * The timestamps a task gives the cells of an image's rows: {@link LineagePartition#above} the floor up to the cap
     * (the task's image's timestamp); a static column's copy at least at the cap, since a row or range deletion older
     * than the image leaves the source's static cell, whatever its timestamp.
     */
    private static final class CellTimes
    {
        final long floor;
        final long cap;
        final Set<String> statics;

        CellTimes(long floor, long cap, Set<String> statics)
        {
            this.floor = floor;
            this.cap = cap;
            this.statics = statics;
        }

        long of(String column, SourceCells.Cell cell)
        {
            return statics.contains(column) ? Math.max(cell.timestamp, cap) : LineagePartition.above(cell, floor, cap);
        }

        CellTimes above(long floor)
        {
            return new CellTimes(floor, cap, statics);
        }
    }

    /**
     * Whether the target's cells keep their own timestamps (above the floor): a lineage target without a
     * fan-out whose table no other target of the flow writes, and whose key holds every lineage column. Elsewhere a
     * row may be another image's too (a fan-out's; the same table's rows derived by another target, as an author's own
     * timeline row may be a follower's row of another author; or two images that differ in a lineage column outside
     * the key), and that image's deletion reaches it: the cells are raised to the image's timestamp.
     */
    private static boolean keepsOwnTimestamps(FlowSpec spec, FlowSpec.Target target)
    {
        if (target.mode != FlowSpec.Mode.LINEAGE || target.fanout != null)
            return false;
        for (FlowSpec.Target other : spec.targets)
            if (other != target && other.keyspace.equals(target.keyspace) && other.table.equals(target.table))
                return false;
        java.util.Set<String> keyed = new java.util.HashSet<>();
        for (String column : target.primaryKey())
        {
            org.asynctriggers.spec.Expression expr = target.columns.get(column);
            if (expr != null && expr.scope == org.asynctriggers.spec.Expression.Scope.SOURCE)
                keyed.add(expr.column);
        }
        return keyed.containsAll(target.lineageColumns); // else two images can name one row
    }

    /**
     * Whether the target is a fan-out whose older images' deletions spare the newest image's rows, so that its cells
     * keep their own timestamps above its floor (as a direct target's, {@link #keepsOwnTimestamps}): a lineage fan-out
     * whose table no other target of the flow writes. A row of another target there (an author's own timeline row,
     * also a follower's row of another author) is deleted with that target's images, and this one's cells in it are
     * raised to their image's timestamp to outlive that.
     */
    private static boolean sparesNewest(FlowSpec spec, FlowSpec.Target target)
    {
        if (target.mode != FlowSpec.Mode.LINEAGE || target.fanout == null)
            return false;
        for (FlowSpec.Target other : spec.targets)
            if (other != target && other.keyspace.equals(target.keyspace) && other.table.equals(target.table))
                return false;
        return true;
    }

    /** The source row's lineage partition, at the level that meets every lineage write. */
    LineagePartition read(ByteBuffer sourceKey)
    {
        return LineagePartition.of(statements.execute(Cql.lineageSelect(), lineageRead, List.of(flowNameBytes, sourceKey)));
    }

    /**
     * Raises target {@code index}'s floor to {@code at} (Cassandra keeps the newest of its writes): the convergence is
     * about to delete, at {@code at}, rows of one of its images that the source itself never deleted.
     */
    void raiseFloor(ByteBuffer sourceKey, int index, long at)
    {
        record(sourceKey, LineagePartition.floorIndex(index), List.of(), at, 0, at);
    }

    /**
     * Writes an entry again with a newer {@code written}, at its own timestamp: on that tie Cassandra keeps the cell
     * that expires last, then the greater value, so an entry with a TTL is written to expire a second after it did.
     */
    private void rerecord(ByteBuffer sourceKey, LineageEntry entry)
    {
        record(sourceKey, entry.target, entry.image, entry.ts, entry.ttl == 0 ? 0 : entry.ttl + 1, entry.written);
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

    private ByteBuffer partitionOf(List<ByteBuffer> key)
    {
        return KeyCodec.encode(key.subList(0, spec.source.partitionKey.size()));
    }

    /**
     * A range, partition or clustering-prefix deletion of a source with clustering columns: every source row it covers
     * that has lineage (found in {@code async_triggers.lineage_keys}) is deleted as a row deletion at the deletion's
     * timestamp would be: its sentinels recorded, its entries converged, and then its key forgotten at that timestamp.
     */
    void deletePartial(Task task, ClusteringOrder order)
    {
        long at = task.deletionTimestamp();
        List<ByteBuffer> prefix = task.key();
        int partitionSize = spec.source.partitionKey.size();
        CqlGateway.Prepared select = statements.prepare(Cql.lineageKeysSelect());
        List<ByteBuffer> covered = new ArrayList<>();
        ByteBuffer from = null;
        do
        {
            CqlGateway.Page page = statements.gateway.fetchPage(select, lineageRead, List.of(flowNameBytes, partitionOf(prefix)), spec.pageSize, from);
            for (Map<String, ByteBuffer> row : page.rows)
            {
                ByteBuffer sourceKey = row.get("source_key");
                List<ByteBuffer> key = KeyCodec.decode(sourceKey);
                if (key.size() != spec.source.primaryKeySize() || !key.subList(0, prefix.size()).equals(prefix))
                    continue;
                if (task.range() == null || order.contains(task.range(), key.subList(partitionSize, key.size())))
                    covered.add(sourceKey);
            }
            from = page.next;
        }
        while (from != null);
        for (ByteBuffer sourceKey : covered)
        {
            for (FlowSpec.Target target : spec.targets)
                if (target.mode == FlowSpec.Mode.LINEAGE)
                    recordDelete(sourceKey, target, at);
            converge(task, KeyCodec.decode(sourceKey), Map.of(), at);
            statements.execute(Cql.lineageKeyDelete(), lineageWrite, bigint(at), flowNameBytes, partitionOf(prefix), sourceKey);
        }
    }

    /** Records the target's sentinel for a deleted source row, at the deletion's timestamp. */
    void recordDelete(ByteBuffer sourceKey, FlowSpec.Target target, long deletedAt)
    {
        record(sourceKey, target.index, List.of(), deletedAt, 0, deletedAt);
    }

    private void record(Task task, FlowSpec.Target target, List<ByteBuffer> image, long at, int ttl, long written)
    {
        record(task.serializedKey(), target.index, image, at, ttl, written);
    }

    /**
     * Writes a lineage entry at the image's timestamp. Its {@code written} (the newest timestamp of the cells written to
     * the image's rows) is written at that same timestamp: tasks of one image all write it at one timestamp, and on a
     * tie Cassandra keeps the greater value, the newest of them.
     * @param ttl seconds the entry lives; 0: for ever
     */
    private void record(ByteBuffer sourceKey, int index, List<ByteBuffer> image, long at, int ttl, long written)
    {
        ByteBuffer ts = bigint(at);
        if (ttl > 0)
            statements.execute(Cql.lineageInsertWithTtl(), lineageWrite, flowNameBytes, sourceKey, lineageKey(index, image), ts,
                               bigint(written), ByteBuffer.allocate(4).putInt(0, ttl), ts);
        else
            statements.execute(Cql.lineageInsert(), lineageWrite, flowNameBytes, sourceKey, lineageKey(index, image), ts, bigint(written), ts);
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
    private static ByteBuffer lineageKey(int index, List<ByteBuffer> image)
    {
        List<ByteBuffer> components = new ArrayList<>(image.size() + 1);
        components.add(ByteBuffer.allocate(4).putInt(0, index));
        components.addAll(image);
        return KeyCodec.encode(components);
    }

    /** The source row as far as a lineage entry knows it: the source key and the entry's image. */
    private Map<String, ByteBuffer> imageValues(List<ByteBuffer> key, FlowSpec.Target target, List<ByteBuffer> image)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>();
        List<String> keyNames = spec.source.primaryKey();
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
     * carry at least the newest timestamp and outlive it, even where an old image derives the same row (a follower of
     * both the old and the new author of a tweet) and even when the newest task has not written them yet. When the
     * newest entry is a sentinel (the source row was deleted, or has no image), nothing derives from it and the
     * deletion is at its timestamp, as the source's own delete wins a tie; an image that lost a tie of timestamps is
     * deleted at that timestamp. An old image whose rows got newer cells than that (a task that ran on a replica
     * which had not yet seen the newer image, and wrote a newer cell of another column to the old image's rows) has
     * its rows deleted at the newest of those cells instead, where the rows are not shared with the newest image (a
     * fan-out's are, unless the newest entry is a sentinel). A task whose own image is no longer there (deleted before
     * it wrote it) deletes its rows the same way. Each of these deletions of a direct target's rows raises that
     * target's floor first.
     * <p>
     * A fan-out that spares ({@link #sparesNewest}) leaves out of each of these deletions the rows of the newest image
     * (the keys of its fan-out's first page, read once), and records its floor under that image: a task of the newest
     * image, which writes its cells at their own timestamps, needs no raise for a deletion that spared its rows. Why
     * that holds: a task that finds its image the newest, or that converges, has every deletion made so far of one
     * of three kinds. One by a convergence that saw this image as the newest spared its rows, and its floor is under
     * this image. One by a convergence whose newest was an older entry E, which had not seen this image (it read the
     * partition before this image's entry was recorded): the entry E was recorded before that read, so before this
     * image's, so this image's task finds E when it converges, if not when it wrote; for every such E it writes above
     * the deletions E's convergence may make ({@link LineagePartition#fanoutFloorFor}), again when converging if E
     * came after its first read. And one made when this image was an older one (a return to it, or a deletion for a
     * sentinel), whose floor is under another image or none, above which the task writes. A task of an older image
     * that writes at all (it read the partition before the newer entry was recorded) puts into the rows the two share
     * only the source's cells at their own timestamps (raised no higher than its older image's), and its
     * convergence, reading after its own entry was recorded, deletes its image sparing the newest image's rows, or
     * is the one the newest image's task finds. A deletion under a newer sentinel spares nothing:
     * nothing derives from it. A fan-out of more than one page spares its first page only, and its tasks raise every
     * cell to the image's timestamp as before; its floor is recorded under no image. All of this assumes the fan-out
     * table does not change (as ctl verify does): a fan added to the newest image after a deletion read its fan-out
     * gets its row from a later task of the image, written at its own timestamps, under the deletion.
     * <p>
     * Each floor row a fan-out's raise leaves of no use ({@link LineagePartition#floorsLeftBehind}) is deleted at its
     * own timestamp (a raise of that row since is newer, and stays).
     * <p>
     * A task whose image is the newest and that finds the floor, or an older entry of another image, above the floor
     * it wrote its cells with writes them again above it: that entry's task may have read the partition before this
     * image was recorded, and delete its rows as an older image's.
     * <p>
     * A task that deletes the source row (a row, range or partition deletion, at {@code deletedAt}) also deletes the
     * rows of a newer image at that timestamp, as the source's deletion did its older cells: the newer image's own cells
     * carry at least its timestamp and stay, what it kept of older ones goes. It raises no floor: the source made it.
     *
     * @param mine per target index, the image this task wrote, if any
     * @param deletedAt the row deletion the task carries; {@link Long#MIN_VALUE}: none
     */
    void converge(Task task, List<ByteBuffer> key, Map<Integer, Written> mine, long deletedAt)
    {
        ByteBuffer sourceKey = KeyCodec.encode(key);
        LineagePartition recorded = read(sourceKey);
        for (Map<String, ByteBuffer> row : recorded.unreadable)
        {
            logger.warn("Flow '{}': unreadable lineage entry of {} dropped", spec.name, task);
            if (row.get("target_key") != null)
                statements.execute(Cql.lineageDelete(), lineageWrite, bigint(row.get("ts") == null ? task.timestamp() : longOf(row.get("ts"))),
                                   flowNameBytes, sourceKey, row.get("target_key"));
        }
        Map<Integer, Long> floors = new HashMap<>();
        for (Map.Entry<Integer, List<LineageEntry>> group : recorded.byTarget.entrySet())
        {
            int index = group.getKey();
            LineageEntry newest = null;
            for (LineageEntry entry : group.getValue())
                if (newest == null || entry.newerThan(newest))
                    newest = entry;
            Spared spared = sparing.contains(index) && !newest.image.isEmpty() ? new Spared(key, index, newest) : null;
            for (LineageEntry entry : group.getValue())
            {
                if (entry == newest)
                    continue;
                long deleteAt = deletionOf(index, entry, newest);
                deleteImage(sourceKey, key, index, entry, deleteAt, recorded, floors, spared);
                statements.execute(Cql.lineageDelete(), lineageWrite, bigint(deleteAt), flowNameBytes, sourceKey, entry.targetKey);
            }
            if (deletedAt != Long.MIN_VALUE && !newest.image.isEmpty() && newest.ts > deletedAt)
                deleteRowsOf(key, index, newest, deletedAt, null); // as the source's deletion did: no floor
            Written own = mine.get(index);
            if (own == null)
                continue;
            LineageEntry ownEntry = own.entry;
            if (!ownEntry.targetKey.equals(newest.targetKey))
            {
                if (group.getValue().stream().noneMatch(e -> e.targetKey.equals(ownEntry.targetKey)))
                    deleteImage(sourceKey, key, index, ownEntry, deletionOf(index, ownEntry, newest), recorded, floors, spared); // deleted before this task wrote it
            }
            else if (own.rewrite != null)
            {
                // an older image's task that had not seen this one may delete its rows at up to its own timestamp
                long above = sparing.contains(index) ? recorded.fanoutFloorFor(newest, own.before) : recorded.floorFor(newest, own.before);
                if (above > own.floor)
                {
                    long written = own.rewrite.applyAsLong(above);
                    if (written > newest.written)
                        rerecord(sourceKey, newest.writtenUpTo(written));
                }
            }
        }
    }

    /**
     * Deletes an image's rows at {@code deleteAt}, a deletion the source did not make: a direct target's floor is
     * raised to it first (a return to the image writes its older cells above it).
     * @param raised the floors this task raised, per target index (added to)
     */
    private void deleteImage(ByteBuffer sourceKey, List<ByteBuffer> key, int index, LineageEntry entry, long deleteAt,
                             LineagePartition recorded, Map<Integer, Long> raised, Spared spared)
    {
        if (entry.image.isEmpty())
            return; // a sentinel derived nothing
        if (ownTimestamps.contains(index) && deleteAt > Math.max(recorded.floorOf(index), raised.getOrDefault(index, LineagePartition.NO_FLOOR)))
        {
            raiseFloor(sourceKey, index, deleteAt);
            raised.put(index, deleteAt);
        }
        else if (sparing.contains(index))
        {
            List<ByteBuffer> exempt = spared == null ? List.of() : spared.image();
            if (deleteAt > Math.max(recorded.floorRow(index, exempt), raised.getOrDefault(index, LineagePartition.NO_FLOOR)))
            {
                record(sourceKey, LineagePartition.floorIndex(index), exempt, deleteAt, 0, deleteAt);
                raised.put(index, deleteAt);
                recorded.floorsLeftBehind(index, exempt, deleteAt).forEach((image, ts) -> statements.execute(
                    Cql.lineageDelete(), lineageWrite, bigint(ts), flowNameBytes, sourceKey, lineageKey(LineagePartition.floorIndex(index), image)));
            }
        }
        deleteRowsOf(key, index, entry, deleteAt, spared);
    }

    /**
     * The rows a sparing fan-out's deletion of older images leaves ({@link #sparesNewest}): those of the newest image,
     * the keys its fan-out's first page derives (read once, when the convergence first deletes a row; a fan-out of one
     * page is all of them, and only such a one's task writes its cells at their own timestamps). None for a sentinel,
     * which derives nothing, or another target.
     */
    private final class Spared
    {
        private final List<ByteBuffer> key;
        private final int index;
        private final LineageEntry newest;
        private Set<List<ByteBuffer>> rows;
        private boolean whole;

        Spared(List<ByteBuffer> key, int index, LineageEntry newest)
        {
            this.key = key;
            this.index = index;
            this.newest = newest;
        }

        /**
         * The image whose rows the deletion spares, under which its floor is recorded: when its fan-out is one page;
         * else empty, a floor that spares none (the later pages' rows are deleted, and their cells were raised to the
         * image's timestamp).
         */
        List<ByteBuffer> image()
        {
            rows();
            return whole ? newest.image : List.of();
        }

        boolean contains(List<ByteBuffer> row)
        {
            return rows().contains(row);
        }

        private Set<List<ByteBuffer>> rows()
        {
            if (rows != null)
                return rows;
            rows = new java.util.HashSet<>();
            if (newest.image.size() != spec.targets.get(index).lineageColumns.size())
                return rows;
            FlowSpec.Target target = spec.targets.get(index);
            Map<String, ByteBuffer> values = imageValues(key, target, newest.image);
            CqlGateway.Page page = fanout.firstPage(target, values);
            whole = page.next == null;
            for (Map<String, ByteBuffer> row : page.rows)
            {
                List<ByteBuffer> derived = FlowExecutor.keyOf(target, values, row);
                if (derived != null)
                    rows.add(derived);
            }
            return rows;
        }
    }

    /** When an old image's rows are deleted, given the newest entry of the target. */
    private long deletionOf(int index, LineageEntry old, LineageEntry newest)
    {
        long at = newest.image.isEmpty() || old.ts == newest.ts ? newest.ts : newest.ts - 1;
        // a fan-out's rows may be the newest image's too, and must outlive this deletion; a sentinel derives none
        boolean shared = !newest.image.isEmpty() && index >= 0 && index < spec.targets.size() && spec.targets.get(index).fanout != null;
        return shared ? at : Math.max(at, old.written);
    }

    /** Deletes the rows an old image of a target derived, at {@code deleteAt}, but those {@code spared} (null: none). */
    private void deleteRowsOf(List<ByteBuffer> key, int index, LineageEntry entry, long deleteAt, Spared spared)
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
        Map<String, ByteBuffer> old = imageValues(key, target, entry.image);
        fanout.eachRow(null, target, old, row -> {
            if (spared == null || !spared.contains(FlowExecutor.keyOf(target, old, row)))
                targetRows.delete(null, target, old, row, deleteAt);
        });
    }
}
