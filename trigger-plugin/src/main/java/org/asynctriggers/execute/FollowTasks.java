package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

import static org.asynctriggers.execute.Statements.bigint;
import static org.asynctriggers.execute.Statements.longOf;

/**
 * The tasks of a companion flow (docs/design.md, "A fan-out that follows its table"): its source is the fan-out table
 * of a flow's fan-out that follows its table, and a change of a fan-out row (a follow, an unfollow) writes or deletes
 * the target rows of every source row that matches it. Per fan-out row:
 * <ol>
 * <li>take the row's next change number, a compare-and-set of its counter in {@code async_triggers.lineage_versions}
 *     (1, 2, ...), as a source row's version is taken;</li>
 * <li>read the fan-out row at ALL: the task with the greatest number read it after every write whose task took a
 *     smaller one;</li>
 * <li>write the row to the copy at its number ({@code async_n}, and its expiry), or delete it there at its number;</li>
 * <li>then read the join index's partition of the row's match value at ALL, and write, or delete, the target row of
 *     each source row it lists at that source row's version plus the change number.</li>
 * </ol>
 * The main flow's task of a source row writes its join index row before it reads the copy; this task writes the copy
 * before it reads the join index. So of a source row's task and a fan-out row's task that race, at least one sees
 * the other's write: the stamp of the last of them holds the newest version and the newest change number, and it
 * wins every cell (a version's stamps are its own: {@link FlowSpec.Follow}).
 */
final class FollowTasks
{
    /** the copy's column holding a fan-out row's change number */
    static final String CHANGE = "async_n";
    /** the copy's column holding when a fan-out row expires, local time in seconds; 0: never */
    static final String EXPIRES = "async_expires";
    /** the join index's column holding the version its row was derived at, or left at */
    static final String VERSION = "async_version";
    /**
     * the column of the join index and of the copy saying that the row left (a source row's image, a fan-out row):
     * kept as gone for a while rather than deleted, so that a task racing the one that made it go sees it
     */
    static final String GONE = "async_gone";
    static final ByteBuffer TRUE = ByteBuffer.wrap(new byte[]{ 1 }).asReadOnlyBuffer();
    private static final int MAX_TAKES = 64;

    private final FlowSpec spec;
    private final FlowSpec.Follows follows;
    private final FlowSpec.Follow follow;
    private final Statements statements;
    private final LongSupplier nowMillis;
    private final ClusteringOrder order;
    private final ConsistencyLevel lineageRead;
    private final ConsistencyLevel lineageWrite;
    private final LineageVersions changes;
    /** the copy's columns: the fan-out table's key, the columns the target uses, the change number and expiry */
    private final List<String> copyColumns = new ArrayList<>();

    FollowTasks(FlowSpec spec, Statements statements, LongSupplier nowMillis, ClusteringOrder order)
    {
        this.spec = spec;
        this.follows = spec.follows;
        this.follow = follows.target.fanout.follow;
        this.statements = statements;
        this.nowMillis = nowMillis;
        this.order = order;
        this.lineageRead = Lineage.readLevel(spec.readConsistency);
        this.lineageWrite = Lineage.writeLevel(spec.writeConsistency);
        this.changes = new LineageVersions(spec.name, statements, lineageRead, lineageWrite);
        copyColumns.addAll(spec.source.primaryKey());
        for (String column : follows.target.fanout.columns)
            if (!copyColumns.contains(column))
                copyColumns.add(column);
        copyColumns.add(CHANGE);
        copyColumns.add(EXPIRES);
        copyColumns.add(GONE);
    }

    /** Whether a row of the copy or of the join index is kept as gone. */
    static boolean gone(Map<String, ByteBuffer> row)
    {
        ByteBuffer gone = row == null ? null : row.get(GONE);
        return gone != null && gone.hasRemaining() && gone.get(gone.position()) != 0;
    }

    /** A fan-out row's change number as the copy holds it; 0 for a row copied by a backfill. */
    static long changeOf(Map<String, ByteBuffer> copyRow)
    {
        ByteBuffer n = copyRow == null ? null : copyRow.get(CHANGE);
        return n == null || n.remaining() != 8 ? 0 : longOf(n);
    }

    /** Whether a row that the recency bound ends at {@code expiresAt} (s; 0: no bound) is past it at {@code nowMillis}. */
    static boolean pastBound(long expiresAt, long nowMillis)
    {
        return expiresAt != 0 && Expiry.remaining(expiresAt, nowMillis).expired;
    }

    /** When a fan-out row expires as the copy holds it, local time in seconds; 0: never. */
    static long expiresAt(Map<String, ByteBuffer> copyRow)
    {
        ByteBuffer at = copyRow == null ? null : copyRow.get(EXPIRES);
        return at == null || at.remaining() != 8 ? 0 : longOf(at);
    }

    void prepare()
    {
        statements.prepare(Cql.insert(follow.keyspace, follow.table, copyColumns));
        statements.prepare(Cql.insertWithTtl(follow.keyspace, follow.table, copyColumns));
        statements.prepare(Cql.delete(follows.target.keyspace, follows.target.table, follows.target.primaryKey()));
        statements.prepare(Cql.lineageVersionSelect());
        statements.prepare(Cql.lineageVersionTake());
    }

    ExecutionResult run(Task task)
    {
        if (task.isStatic())
            return ExecutionResult.success(); // a following fan-out uses no static column (refused at deploy)
        long[] rows = new long[1];
        if (task.keySize() == spec.source.primaryKeySize())
            follow(task.key(), rows);
        else if (task.operation() == Operation.DELETE)
            for (List<ByteBuffer> key : copiedRowsCovered(task))
                follow(key, rows);
        return ExecutionResult.success(rows[0]);
    }

    /**
     * The fan-out rows a range, prefix or partition deletion covers, as the copy lists them: a row the copy does not
     * list has no target row through it (the main flow's tasks fan out over the copy).
     */
    private List<List<ByteBuffer>> copiedRowsCovered(Task task)
    {
        List<ByteBuffer> prefix = task.key();
        int partitionSize = spec.source.partitionKey.size();
        CqlGateway.Prepared select = statements.prepare(Cql.select(follow.keyspace, follow.table, spec.source.primaryKey(),
                                                                   spec.source.partitionKey));
        List<List<ByteBuffer>> covered = new ArrayList<>();
        ByteBuffer from = null;
        do
        {
            CqlGateway.Page page = statements.gateway.fetchPage(select, lineageRead, prefix.subList(0, partitionSize), spec.pageSize, from);
            for (Map<String, ByteBuffer> row : page.rows)
            {
                List<ByteBuffer> key = new ArrayList<>();
                for (String column : spec.source.primaryKey())
                    key.add(row.get(column));
                if (!key.subList(0, prefix.size()).equals(prefix))
                    continue;
                if (task.range() == null || order.contains(task.range(), key.subList(partitionSize, key.size())))
                    covered.add(key);
            }
            from = page.next;
        }
        while (from != null);
        return covered;
    }

    /** Steps 1 to 4 for one fan-out row. */
    private void follow(List<ByteBuffer> key, long[] rows)
    {
        ByteBuffer rowKey = KeyCodec.encode(key);
        long change = take(rowKey);
        SourceRow row = readAtAll(spec.source.keyspace, spec.source.table, key);
        Map<String, ByteBuffer> fanoutRow = new LinkedHashMap<>();
        List<String> keyNames = spec.source.primaryKey();
        for (int i = 0; i < keyNames.size(); i++)
            fanoutRow.put(keyNames.get(i), key.get(i));
        long followExpiresAt = 0;
        if (row != null)
        {
            for (String column : follows.target.fanout.columns)
                if (!fanoutRow.containsKey(column))
                    fanoutRow.put(column, row.cells.containsKey(column) ? row.cells.get(column).value : null);
            followExpiresAt = row.expiresAt;
        }
        writeCopy(key, row != null, fanoutRow, change, followExpiresAt);
        List<ByteBuffer> match = matchOf(fanoutRow);
        if (match == null)
            return;
        for (CqlGateway.KeyedRow member : readIndexAtAll(match))
        {
            SourceRow.Cell versionCell = member.row.cells.get(VERSION);
            if (versionCell == null || versionCell.value == null || versionCell.value.remaining() != 8)
                continue; // not a row of a version (written by an older plugin): its source row's task writes it
            long version = longOf(versionCell.value);
            SourceRow.Cell goneCell = member.row.cells.get(GONE);
            boolean left = goneCell != null && gone(Map.of(GONE, goneCell.value));
            Map<String, SourceRow.Cell> cells = new LinkedHashMap<>();
            Map<String, ByteBuffer> values = sourceValues(match, member, cells);
            List<ByteBuffer> targetKey = FlowExecutor.keyOf(follows.target, values, fanoutRow);
            if (targetKey == null)
                continue;
            if (left || row == null)
            {
                // a source row that left: its rows through this fan-out row go below the version it left at (its own
                // task may have read the copy after this row went from it); else they go at the row's change number
                List<ByteBuffer> bound = new ArrayList<>();
                bound.add(bigint(left ? version - 1 : version + change));
                bound.addAll(targetKey);
                statements.execute(Cql.delete(follows.target.keyspace, follows.target.table, follows.target.primaryKey()),
                                   spec.writeConsistency, bound);
            }
            else
            {
                long recentExpiresAt = follows.target.fanout.follow.recentExpiresAt(values);
                if (pastBound(recentExpiresAt, nowMillis.getAsLong()))
                    continue; // older than the recency bound: not brought
                long capped = earliest(followExpiresAt, recentExpiresAt);
                writeTargetRow(targetKey, values, cells, fanoutRow, version + change, earliest(versionCell.expiresAt, capped),
                               capped);
            }
            rows[0]++;
        }
    }

    /**
     * The target row of one source row through this fan-out row, as the main flow's task writes it (Lineage): the
     * marker, each mapped source value with what is left of its TTL (each at most the fan-out row's), the fan-out
     * row's values, a tombstone where there is no value. A following fan-out maps single-cell values only.
     */
    private void writeTargetRow(List<ByteBuffer> key, Map<String, ByteBuffer> values, Map<String, SourceRow.Cell> cells,
                                Map<String, ByteBuffer> fanoutRow, long stamp, long rowExpiresAt, long followExpiresAt)
    {
        FlowSpec.Target target = follows.target;
        DerivedRow derived = new DerivedRow(target, key).marker(stamp, rowExpiresAt);
        for (Map.Entry<String, Expression> e : target.columns.entrySet())
        {
            if (target.primaryKey().contains(e.getKey()))
                continue;
            Expression expr = e.getValue();
            if (expr.scope == Expression.Scope.ROW)
            {
                derived.cell(e.getKey(), new SourceCells.Cell(fanoutRow.get(expr.column), stamp, followExpiresAt));
                continue;
            }
            SourceRow.Cell cell = cells.get(expr.column);
            ByteBuffer value = values.get(expr.column);
            // a value the index holds as a cell expires as that cell (at most its image); one it holds in its key
            // (the match value, the source key) lives as long as the index row
            long expiresAt = cell != null ? earliest(cell.expiresAt, followExpiresAt) : rowExpiresAt;
            derived.cell(e.getKey(), new SourceCells.Cell(value, stamp, value == null ? 0 : expiresAt));
        }
        derived.write(statements, spec.writeConsistency, nowMillis.getAsLong());
    }

    /**
     * The source row a join index row stands for: the match value its partition holds, the source key its clustering
     * holds, each other value its cells hold (with their TTLs, into {@code cells}).
     */
    private Map<String, ByteBuffer> sourceValues(List<ByteBuffer> match, CqlGateway.KeyedRow member, Map<String, SourceRow.Cell> cells)
    {
        FlowSpec.Target index = follows.index;
        Map<String, ByteBuffer> values = new LinkedHashMap<>();
        for (Map.Entry<String, Expression> e : index.columns.entrySet())
        {
            String column = e.getKey();
            String source = e.getValue().column;
            int p = index.partitionKey.indexOf(column);
            int c = index.clustering.indexOf(column);
            if (p >= 0)
                values.putIfAbsent(source, match.get(p));
            else if (c >= 0)
                values.putIfAbsent(source, member.clustering.get(c));
            else
            {
                SourceRow.Cell cell = member.row.cells.get(column);
                values.put(source, cell == null ? null : cell.value);
                if (cell != null)
                    cells.put(source, cell);
            }
        }
        return values;
    }

    /**
     * The join index partition a fan-out row matches: per partition key column of the index, the fan-out row's value
     * of the match column with the same source expression; null when one is empty (no source row matches it).
     */
    private List<ByteBuffer> matchOf(Map<String, ByteBuffer> fanoutRow)
    {
        List<ByteBuffer> match = new ArrayList<>();
        for (String column : follows.index.partitionKey)
        {
            Expression wanted = follows.index.columns.get(column);
            ByteBuffer value = null;
            for (Map.Entry<String, Expression> m : follows.target.fanout.match.entrySet())
                if (m.getValue().column.equals(wanted.column))
                    value = fanoutRow.get(m.getKey());
            if (value == null || !value.hasRemaining())
                return null;
            match.add(value);
        }
        return match;
    }

    /**
     * Step 3: the copy's row at the change number, living as long as the fan-out row; or, when the row went, kept as
     * gone at the change number for as long as a lineage entry would live (a source row's task racing this one may
     * have read the join index before this task read it, and deletes the rows through it then).
     */
    private void writeCopy(List<ByteBuffer> key, boolean exists, Map<String, ByteBuffer> fanoutRow, long change, long expiresAt)
    {
        long now = nowMillis.getAsLong() / 1000;
        boolean gone = !exists || (expiresAt != 0 && expiresAt <= now); // expired since it was read: gone
        List<ByteBuffer> bound = new ArrayList<>();
        for (String column : copyColumns)
        {
            if (column.equals(CHANGE))
                bound.add(bigint(change));
            else if (column.equals(EXPIRES))
                bound.add(bigint(gone ? 0 : expiresAt));
            else if (column.equals(GONE))
                bound.add(gone ? TRUE : null);
            else
                bound.add(gone && !spec.source.primaryKey().contains(column) ? null : fanoutRow.get(column));
        }
        long ttl = gone ? Lineage.EXPIRED_ROW_GRACE_SECONDS : expiresAt == 0 ? 0 : expiresAt - now;
        if (ttl == 0)
        {
            bound.add(bigint(change));
            statements.execute(Cql.insert(follow.keyspace, follow.table, copyColumns), lineageWrite, bound);
            return;
        }
        bound.add(ByteBuffer.allocate(4).putInt(0, (int) Math.min(Integer.MAX_VALUE, ttl)));
        bound.add(bigint(change));
        statements.execute(Cql.insertWithTtl(follow.keyspace, follow.table, copyColumns), lineageWrite, bound);
    }

    /** Step 1: the fan-out row's next change number. */
    private long take(ByteBuffer rowKey)
    {
        Long known = changes.read(rowKey);
        for (int i = 0; i < MAX_TAKES; i++)
        {
            long next = known == null ? 1 : known + 1;
            if (next > FlowSpec.Follow.MAX_CHANGE)
                throw new IllegalStateException("flow '" + spec.name + "': a row of " + spec.source.keyspace + '.' + spec.source.table
                                                + " changed more than " + FlowSpec.Follow.MAX_CHANGE + " times; its target rows "
                                                + "can be derived again by a backfill of flow '" + follows.flow + "'");
            Long current = changes.take(rowKey, known, next);
            if (current == null)
                return next;
            known = current == Long.MIN_VALUE ? null : current;
        }
        throw new IllegalStateException("flow '" + spec.name + "': " + MAX_TAKES + " other tasks of a fan-out row took its "
                                        + "change number first; retried later");
    }

    private SourceRow readAtAll(String keyspace, String table, List<ByteBuffer> key)
    {
        try
        {
            return statements.gateway.readRow(keyspace, table, key, ConsistencyLevel.ALL);
        }
        catch (RuntimeException e)
        {
            if (!Lineage.unavailable(e))
                throw e;
            return statements.gateway.readRow(keyspace, table, key, lineageRead);
        }
    }

    private List<CqlGateway.KeyedRow> readIndexAtAll(List<ByteBuffer> match)
    {
        try
        {
            return statements.gateway.readPartition(follows.index.keyspace, follows.index.table, match, ConsistencyLevel.ALL);
        }
        catch (RuntimeException e)
        {
            if (!Lineage.unavailable(e))
                throw e;
            return statements.gateway.readPartition(follows.index.keyspace, follows.index.table, match, lineageRead);
        }
    }

    private static long earliest(long a, long b)
    {
        return a == 0 ? b : b == 0 ? a : Math.min(a, b);
    }
}
