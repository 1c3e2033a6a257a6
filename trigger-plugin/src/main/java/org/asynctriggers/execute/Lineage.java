package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.exceptions.UnavailableException;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

import static org.asynctriggers.execute.Statements.bigint;

/**
 * The targets in mode {@code lineage} (docs/design.md, "Lineage"): targets whose rows a source row's change can move
 * (a key from a non-key column, a fan-out matched on one), or that copy a static value, or share a table with such a
 * target. A task does not mirror its write's cells onto them: it derives the source row's rows again, whole, from the
 * row as every replica holds it, and writes them under a <b>version</b> of the source row that is newer than that of
 * every task before it, so that the last version's rows are the ones that stay, cell by cell.
 * <p>
 * The protocol, per task ({@link #begin}):
 * <ol>
 * <li>guess the row's images (the values of each target's lineage columns) from this node's replica, and record them
 *     in {@code async_triggers.lineage} (and the key in {@code lineage_keys} on a clustered source) at the version
 *     about to be taken, so that any task with a later version finds them;</li>
 * <li>take the version: a compare-and-set (Paxos) of the row's counter in {@code async_triggers.lineage_versions}, to
 *     the greater of its value + 1 and this node's clock in microseconds;</li>
 * <li>read the source row at ALL: a read made after the version was taken sees every write whose task took an older
 *     version (that write was applied before its task existed, so before that task's version was taken); if its images
 *     differ from the guessed ones, record those and take a version again;</li>
 * <li>delete the rows of every recorded image the row no longer has, and those entries, at the version minus one;</li>
 * <li>write the images' rows at the version (a fan-out one page at a time): the marker, and every mapped column's value
 *     or, where the source has none, a tombstone.</li>
 * </ol>
 * Whatever order the tasks of a row run in, on whichever nodes, with whatever repeats: the newest version was taken
 * after every write's task took its own, so its read saw every write and its rows win every cell, and every image an
 * older version wrote was recorded before the newest version was taken, so its rows are deleted. The costs, per task:
 * a local read, a version read, the entries' write (one batch), a Paxos round, a read at ALL, a lineage read, and the
 * rows.
 * <p>
 * A read at ALL that a replica down makes unavailable is made at the lineage read level instead: a write that only the
 * down replica holds reaches the others by a hint, which is a write, and its task runs then.
 * <p>
 * About 550 lines: the protocol's steps, whose ordering arguments refer to one another, in one place (with the stamps
 * and the gone join index rows of a flow that follows its fan-out table, which change those arguments); the version
 * counter ({@link LineageVersions}) and the resume position ({@link LineageResume}) are classes of their own.
 */
final class Lineage
{
    /**
     * How much longer than the row the entries of a row with a TTL live (Cassandra's default gc_grace_seconds): a
     * row that expires leaves nothing behind in our tables.
     */
    static final int EXPIRED_ROW_GRACE_SECONDS = 10 * 24 * 3600;
    /** takes of a version lost to other tasks of the row before this one gives up (and is retried) */
    private static final int MAX_VERSION_TAKES = 64;

    private final FlowSpec spec;
    private final Statements statements;
    private final FanoutPages fanout;
    private final Rows targetRows;
    private final LongSupplier nowMillis;
    private final ByteBuffer flowNameBytes;
    private final ConsistencyLevel lineageWrite;
    private final ConsistencyLevel lineageRead;
    /** the lineage targets, in the spec's order */
    private final List<FlowSpec.Target> traced = new ArrayList<>();
    private final boolean clustered;
    /** a fan-out follows its table: versions are spaced, rows stamped within them ({@link FlowSpec.Follow}) */
    private final boolean following;
    private final LineageVersions versions;
    /** the totals of the targets that keep an aggregate; null when none does */
    private final AggregateTotals totals;

    /** How a lineage target's rows are deleted: as a direct target's ({@link FlowExecutor}). */
    interface Rows
    {
        /** Deletes what the values name of the target at {@code timestamp}. */
        void delete(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long timestamp);
    }

    Lineage(FlowSpec spec, Statements statements, FanoutPages fanout, Rows rows, LongSupplier nowMillis, AggregateTotals totals)
    {
        this.totals = totals;
        this.spec = spec;
        this.statements = statements;
        this.fanout = fanout;
        this.targetRows = rows;
        this.nowMillis = nowMillis;
        this.flowNameBytes = ByteBuffer.wrap(spec.name.getBytes(StandardCharsets.UTF_8));
        this.lineageWrite = writeLevel(spec.writeConsistency);
        this.lineageRead = readLevel(spec.readConsistency);
        this.clustered = !spec.source.clustering.isEmpty();
        this.following = spec.following();
        this.versions = new LineageVersions(spec.name, statements, lineageRead, lineageWrite);
        for (FlowSpec.Target target : spec.targets)
            if (target.mode == FlowSpec.Mode.LINEAGE)
                traced.add(target);
    }

    boolean any()
    {
        return !traced.isEmpty();
    }

    /** Prepares the lineage tables' statements. */
    void prepare()
    {
        statements.prepare(Cql.lineageInsert());
        statements.prepare(Cql.lineageInsertWithTtl());
        statements.prepare(Cql.lineageSelect());
        statements.prepare(Cql.lineageDelete());
        statements.prepare(Cql.lineageVersionSelect());
        statements.prepare(Cql.lineageVersionTake());
        if (clustered)
        {
            statements.prepare(Cql.lineageKeyInsert());
            statements.prepare(Cql.lineageKeysSelect());
            statements.prepare(Cql.lineageKeyDelete());
        }
    }

    /**
     * Lineage entries are written (and deleted) at EACH_QUORUM, or ALL when the flow writes at ALL: a quorum of the
     * replicas in every data center, so a local quorum read in any data center meets it (docs/design.md, "Several
     * data centers"). On SimpleStrategy EACH_QUORUM is QUORUM.
     */
    static ConsistencyLevel writeLevel(ConsistencyLevel flowWrite)
    {
        return flowWrite == ConsistencyLevel.ALL ? ConsistencyLevel.ALL : ConsistencyLevel.EACH_QUORUM;
    }

    /**
     * Lineage entries are read at LOCAL_QUORUM, which meets any EACH_QUORUM write in this data center; at the flow's
     * own level when it is stronger across data centers (EACH_QUORUM, ALL).
     */
    static ConsistencyLevel readLevel(ConsistencyLevel flowRead)
    {
        return flowRead == ConsistencyLevel.ALL || flowRead == ConsistencyLevel.EACH_QUORUM ? flowRead : ConsistencyLevel.LOCAL_QUORUM;
    }

    /** One task's derivation: its version, the images it derives rows from, and the source row it read. */
    static final class Sync
    {
        final long version;
        /** per lineage target index, the image whose rows this task writes; absent: none (no row, or a newer task's) */
        final Map<Integer, List<ByteBuffer>> images;
        /** the source row read after the version was taken; null: gone */
        final SourceRow row;
        /** the source key's columns and the row's values, as expressions read them */
        final Map<String, ByteBuffer> values;

        Sync(long version, Map<Integer, List<ByteBuffer>> images, SourceRow row, Map<String, ByteBuffer> values)
        {
            this.version = version;
            this.images = images;
            this.row = row;
            this.values = values;
        }
    }

    /**
     * Steps 1 to 4 of the protocol for the source row {@code key}: the images recorded, the version taken, the row read,
     * the rows of the images it no longer has deleted. Then {@link #writePage} writes each target's rows.
     */
    Sync begin(List<ByteBuffer> key)
    {
        ByteBuffer sourceKey = KeyCodec.encode(key);
        SourceRow guess = statements.gateway.readRow(spec.source.keyspace, spec.source.table, key, null);
        Long known = versions.read(sourceKey);
        for (int take = 0; take < MAX_VERSION_TAKES; take++)
        {
            Map<Integer, List<ByteBuffer>> images = images(key, guess);
            long version = Math.max(known == null ? Long.MIN_VALUE : known + 1, nowMillis.getAsLong() * 1000);
            if (following)
                version = FlowSpec.Follow.versionAtLeast(version);
            record(key, sourceKey, images, version, guess);
            Long current = versions.take(sourceKey, known, version);
            if (current != null)
            {
                known = current == Long.MIN_VALUE ? null : current; // another task took one first: go on from its
                continue;
            }
            SourceRow row = readAtAll(key);
            if (!images(key, row).equals(images))
            {
                guess = row; // changed since this replica was read: record what the row has now, under a newer version
                known = version;
                continue;
            }
            deleteStale(key, sourceKey, images, version);
            return new Sync(version, images, row, values(key, row));
        }
        throw new IllegalStateException("flow '" + spec.name + "': " + MAX_VERSION_TAKES + " other tasks of the source row took "
                                        + "its version first; retried later");
    }

    /**
     * A task's later page of a fan-out: its version and images as its first page recorded them ({@link LineageResume}), the
     * row read again. A target whose image the row no longer has writes nothing more: the write that changed it has a
     * task with a newer version, which deletes what this one wrote.
     */
    Sync resume(List<ByteBuffer> key, LineageResume state)
    {
        SourceRow row = readAtAll(key);
        Map<Integer, List<ByteBuffer>> now = images(key, row);
        Map<Integer, List<ByteBuffer>> images = new LinkedHashMap<>();
        state.images.forEach((index, image) -> {
            if (image.equals(now.get(index)))
                images.put(index, image);
        });
        return new Sync(state.version, images, row, values(key, row));
    }

    /**
     * Step 5 for one target: writes one page of the rows of the task's image (the whole target without a fan-out),
     * at the task's version, from {@code from}; returns where the next page starts, null when the target is done.
     */
    ByteBuffer writePage(Task task, Sync sync, FlowSpec.Target target, ByteBuffer from, long[] rows)
    {
        List<ByteBuffer> image = sync.images.get(target.index);
        if (image == null || sync.row == null)
            return null;
        long imageExpiresAt = 0;
        for (String column : target.lineageColumns)
            imageExpiresAt = earliest(imageExpiresAt, sync.row.cells.get(column).expiresAt);
        long rowExpiresAt = earliest(imageExpiresAt, sync.row.expiresAt);
        Set<String> statics = clustered ? statements.gateway.staticColumns(spec.source.keyspace, spec.source.table) : Set.of();
        long imageLife = imageExpiresAt;
        ByteBuffer next = fanout.eachRowOfPage(task, target, sync.values, from, rows,
                                               fanoutRow -> writeRow(task, target, sync, fanoutRow, imageLife, rowExpiresAt, statics));
        if (next == null && target.aggregate != null)
            recompute(target, sync.values); // its members row is written: the group's total follows
        return next;
    }

    /** The total of the group a members row of {@code values} belongs to, recomputed (docs/design.md, "Aggregates"). */
    private void recompute(FlowSpec.Target members, Map<String, ByteBuffer> values)
    {
        List<ByteBuffer> group = AggregateTotals.groupOf(members, values);
        if (group != null)
            totals.recompute(members, group);
    }

    /**
     * One derived row at the version: its marker living as long as the source row and its image, each mapped column's
     * live value with what is left of its TTL (at most the image's; a static value's copy at most the row's, as it is
     * a cell of this row), each column without one a tombstone, so that nothing an older version wrote stays.
     */
    private void writeRow(Task task, FlowSpec.Target target, Sync sync, Map<String, ByteBuffer> fanoutRow, long imageExpiresAt,
                          long rowExpiresAt, Set<String> statics)
    {
        List<ByteBuffer> key = FlowExecutor.keyOf(target, sync.values, fanoutRow);
        if (key == null)
            return; // a fan-out row whose value makes no key (null, or an empty partition key): no row
        long stamp = stamp(target, sync.version, fanoutRow);
        if (following && target.fanout != null && target.fanout.follow != null)
        {
            if (FollowTasks.gone(fanoutRow))
                return; // a fan-out row the copy keeps as gone: its rows were deleted, and are deleted below a newer version
            // a row of a fan-out row that expires lives no longer than it (the copy's async_expires), nor past the
            // recency bound: a row already past it is not written (every write of it ended at that time: it is gone)
            long recentExpiresAt = target.fanout.follow.recentExpiresAt(sync.values);
            if (FollowTasks.pastBound(recentExpiresAt, nowMillis.getAsLong()))
                return;
            long followExpiresAt = earliest(FollowTasks.expiresAt(fanoutRow), recentExpiresAt);
            imageExpiresAt = earliest(imageExpiresAt, followExpiresAt);
            rowExpiresAt = earliest(rowExpiresAt, followExpiresAt);
        }
        DerivedRow row = new DerivedRow(target, key).marker(stamp, rowExpiresAt);
        for (Map.Entry<String, Expression> e : target.columns.entrySet())
        {
            if (target.primaryKey().contains(e.getKey()))
                continue;
            Expression expr = e.getValue();
            if (expr.scope == Expression.Scope.ROW)
            {
                row.cell(e.getKey(), new SourceCells.Cell(fanoutRow == null ? null : fanoutRow.get(expr.column), stamp, imageExpiresAt));
                continue;
            }
            SourceRow.Cell cell = sync.row.cells.get(expr.column);
            if (cell == null)
            {
                row.cell(e.getKey(), new SourceCells.Cell(null, stamp, 0));
                continue;
            }
            long cap = statics.contains(expr.column) ? rowExpiresAt : imageExpiresAt;
            if (cell.elements != null)
                row.list(e.getKey(), cell.elements, stamp, cap); // its elements at positions of their own
            else if (cell.runs != null)
                row.runs(e.getKey(), cell.runs, stamp, cap); // a collection whose elements expire apart
            else
                row.cell(e.getKey(), new SourceCells.Cell(cell.value, stamp, earliest(cell.expiresAt, cap)));
        }
        if (target.joinIndex)
        {
            row.cell(FollowTasks.VERSION, new SourceCells.Cell(bigint(sync.version), stamp, rowExpiresAt));
            row.cell(FollowTasks.GONE, new SourceCells.Cell(null, stamp, 0));
        }
        // an aggregate's members and a join index are read by a quorum when a replica is down
        row.write(statements, target.isIndex() ? lineageWrite : spec.writeConsistency, nowMillis.getAsLong());
    }

    /**
     * The write time of a row derived at {@code version}: the version itself, or, in a flow that follows a fan-out
     * table, the version plus the fan-out row's change number for a row derived through it, and the version's last
     * stamp for every other row ({@link FlowSpec.Follow}).
     */
    private long stamp(FlowSpec.Target target, long version, Map<String, ByteBuffer> fanoutRow)
    {
        if (!following)
            return version;
        if (target.fanout != null && target.fanout.follow != null)
            return version + FollowTasks.changeOf(fanoutRow);
        if (target.joinIndex)
            return version + FlowSpec.Follow.SPACING - 2; // below the version's last stamp: a row marked gone at the next version minus one wins
        return version + FlowSpec.Follow.SPACING - 1;
    }

    /** The earlier of two local expiration times, 0 meaning none. */
    private static long earliest(long a, long b)
    {
        return a == 0 ? b : b == 0 ? a : Math.min(a, b);
    }

    /**
     * A range, partition or clustering-prefix deletion of a clustered source: every source row it covers that a task
     * recorded in {@code async_triggers.lineage_keys} is derived again, whole (it is gone, or written again since), and
     * its key forgotten once it is gone. A row recorded after this read was recorded before its task took its version,
     * so that task reads the row after this deletion was applied.
     */
    void deletePartial(Task task, ClusteringOrder order)
    {
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
            List<ByteBuffer> key = KeyCodec.decode(sourceKey);
            Sync sync = deriveWhole(task, key, new long[1]);
            if (sync.row == null)
                statements.execute(Cql.lineageKeyDelete(), lineageWrite, bigint(sync.version - 1), flowNameBytes, partitionOf(key), sourceKey);
        }
    }

    /**
     * The whole protocol for one source row, every page of every lineage target in one go: a range deletion's rows, and
     * the rows of a partition whose static row changed (their copies of a static value).
     */
    Sync deriveWhole(Task task, List<ByteBuffer> key, long[] rows)
    {
        Sync sync = begin(key);
        for (FlowSpec.Target target : traced)
        {
            ByteBuffer next = writePage(task, sync, target, null, rows);
            while (next != null)
                next = writePage(task, sync, target, next, rows);
        }
        return sync;
    }

    /** Per lineage target index, the image the row derives rows from; a target without one is absent. */
    private Map<Integer, List<ByteBuffer>> images(List<ByteBuffer> key, SourceRow row)
    {
        Map<Integer, List<ByteBuffer>> out = new LinkedHashMap<>();
        if (row == null)
            return out;
        Map<String, ByteBuffer> values = values(key, row);
        for (FlowSpec.Target target : traced)
        {
            List<ByteBuffer> image = new ArrayList<>(target.lineageColumns.size());
            for (String column : target.lineageColumns)
                image.add(values.get(column));
            if (image.contains(null) || (target.fanout == null && FlowExecutor.keyOf(target, values, null) == null))
                continue; // a null lineage column, or a key Cassandra refuses (an empty partition key): no row
            out.put(target.index, image);
        }
        return out;
    }

    private Map<String, ByteBuffer> values(List<ByteBuffer> key, SourceRow row)
    {
        Map<String, ByteBuffer> values = new LinkedHashMap<>();
        List<String> keyNames = spec.source.primaryKey();
        for (int i = 0; i < keyNames.size(); i++)
            values.put(keyNames.get(i), key.get(i));
        if (row != null)
            row.cells.forEach((column, cell) -> values.put(column, cell.value));
        return values;
    }

    /**
     * Step 1: the images and the key recorded at {@code version}, living as long as the row (and ten days more). The
     * images share the entries' partition (the flow and the source row): several are one batch, one write per replica.
     */
    private void record(List<ByteBuffer> key, ByteBuffer sourceKey, Map<Integer, List<ByteBuffer>> images, long version, SourceRow row)
    {
        int ttl = 0;
        if (row != null && row.expiresAt != 0)
            ttl = (int) Math.min(Integer.MAX_VALUE, Math.max(1, row.expiresAt - nowMillis.getAsLong() / 1000) + EXPIRED_ROW_GRACE_SECONDS);
        List<ByteBuffer> bound = new ArrayList<>();
        for (Map.Entry<Integer, List<ByteBuffer>> image : images.entrySet())
        {
            ByteBuffer targetKey = lineageKey(image.getKey(), image.getValue());
            bound.addAll(List.of(flowNameBytes, sourceKey, targetKey, bigint(version), bigint(version)));
            if (ttl > 0)
                bound.add(ByteBuffer.allocate(4).putInt(0, ttl));
            bound.add(bigint(version));
        }
        String insert = ttl > 0 ? Cql.lineageInsertWithTtl() : Cql.lineageInsert();
        if (images.size() == 1)
            statements.execute(insert, lineageWrite, bound);
        else if (images.size() > 1)
            statements.execute(Cql.unloggedBatch(insert, images.size()), lineageWrite, bound);
        if (clustered)
            statements.execute(Cql.lineageKeyInsert(), lineageWrite, flowNameBytes, partitionOf(key), sourceKey, bigint(version));
    }

    /** Step 3: the row as every replica holds it; at the lineage read level when a replica is down. */
    private SourceRow readAtAll(List<ByteBuffer> key)
    {
        try
        {
            return statements.gateway.readRow(spec.source.keyspace, spec.source.table, key, ConsistencyLevel.ALL);
        }
        catch (RuntimeException e)
        {
            if (!unavailable(e))
                throw e;
            return statements.gateway.readRow(spec.source.keyspace, spec.source.table, key, lineageRead);
        }
    }

    static boolean unavailable(Throwable e)
    {
        for (Throwable t = e; t != null; t = t.getCause())
            if (t instanceof UnavailableException)
                return true;
        return false;
    }

    /**
     * Step 4: every recorded entry of the row but the images this task derives is deleted, with its rows, at the
     * version minus one: older versions' writes go, a newer version's (whose entries this task may also see) stay.
     * An entry this flow version cannot derive rows from (of a target it does not trace, a former plugin's sentinel or
     * floor) is only deleted.
     */
    private void deleteStale(List<ByteBuffer> key, ByteBuffer sourceKey, Map<Integer, List<ByteBuffer>> images, long version)
    {
        long at = version - 1;
        for (Map<String, ByteBuffer> row : statements.execute(Cql.lineageSelect(), lineageRead, List.of(flowNameBytes, sourceKey)))
        {
            ByteBuffer targetKey = row.get("target_key");
            if (targetKey == null)
                continue;
            List<ByteBuffer> parts;
            try
            {
                parts = KeyCodec.decode(targetKey);
            }
            catch (IllegalArgumentException e)
            {
                parts = List.of();
            }
            int index = parts.isEmpty() || parts.get(0).remaining() != 4 ? -1 : parts.get(0).getInt(parts.get(0).position());
            List<ByteBuffer> image = parts.isEmpty() ? List.of() : parts.subList(1, parts.size());
            FlowSpec.Target target = index >= 0 && index < spec.targets.size() ? spec.targets.get(index) : null;
            boolean derives = target != null && target.mode == FlowSpec.Mode.LINEAGE && image.size() == target.lineageColumns.size();
            if (derives && image.equals(images.get(index)))
                continue;
            if (derives)
            {
                Map<String, ByteBuffer> old = imageValues(key, target, image);
                if (target.joinIndex)
                    markGone(target, old, version);
                else
                    fanout.eachRow(null, target, old, fanoutRow -> targetRows.delete(null, target, old, fanoutRow, at));
                if (target.aggregate != null)
                    recompute(target, old); // before the entry goes: a retry of this task finds the entry and does it again
            }
            statements.execute(Cql.lineageDelete(), lineageWrite, bigint(at), flowNameBytes, sourceKey, targetKey);
        }
    }

    /**
     * A join index row the source row left (its image changed or it went): not deleted but marked gone at the
     * version, at the version minus one, for as long as a lineage entry would live; a fan-out row's task that reads
     * it deletes the row's target rows through that fan-out row below the version (docs/design.md, "A fan-out that
     * follows its table": of a source row that leaves and a fan-out row that goes, each task may see only the other
     * gone).
     */
    private void markGone(FlowSpec.Target index, Map<String, ByteBuffer> old, long version)
    {
        List<ByteBuffer> key = FlowExecutor.keyOf(index, old, null);
        if (key == null)
            return;
        long at = version - 1;
        long expiresAt = nowMillis.getAsLong() / 1000 + EXPIRED_ROW_GRACE_SECONDS;
        DerivedRow row = new DerivedRow(index, key).marker(at, expiresAt);
        for (String column : index.columns.keySet())
            if (!index.primaryKey().contains(column))
                row.cell(column, new SourceCells.Cell(null, at, 0));
        row.cell(FollowTasks.VERSION, new SourceCells.Cell(bigint(version), at, expiresAt));
        row.cell(FollowTasks.GONE, new SourceCells.Cell(FollowTasks.TRUE, at, expiresAt));
        row.write(statements, lineageWrite, nowMillis.getAsLong());
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

    /** A lineage entry's {@code target_key}: the target's index, then the image's values. */
    static ByteBuffer lineageKey(int index, List<ByteBuffer> image)
    {
        List<ByteBuffer> components = new ArrayList<>(image.size() + 1);
        components.add(ByteBuffer.allocate(4).putInt(0, index));
        components.addAll(image);
        return KeyCodec.encode(components);
    }

    private ByteBuffer partitionOf(List<ByteBuffer> key)
    {
        return KeyCodec.encode(key.subList(0, spec.source.partitionKey.size()));
    }
}
