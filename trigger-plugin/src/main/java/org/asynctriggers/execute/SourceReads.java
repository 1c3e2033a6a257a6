package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.marshal.AbstractType;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/**
 * What a flow's executor reads of a source row (docs/design.md, "Execution"): for its own tasks, the row as this node's
 * replica holds it, cell by cell with write times and TTLs ({@link SourceCells}); for a Java handler, the columns an
 * update did not carry, at the flow's read consistency. Only the columns the flow uses are read.
 */
final class SourceReads
{
    private final FlowSpec spec;
    private final Statements statements;
    private final LongSupplier nowMillis;
    /** non-key source columns a task may have to read back, in spec order */
    private final List<String> readColumns;
    /** those of them that can carry a TTL (not a collection or UDT whose cells are many, not a counter) */
    private final List<String> ttlColumns = new ArrayList<>();
    private final boolean clustered;
    /** a target traces lineage: a column's deletion is read back with the row ({@link SourceCells#withDeletions}) */
    private final boolean traced;

    /** Prepares the flow's read of its source row. */
    SourceReads(FlowSpec spec, Statements statements, ColumnTypes types, LongSupplier nowMillis)
    {
        this.spec = spec;
        this.statements = statements;
        this.nowMillis = nowMillis;
        this.readColumns = neededNonKeyColumns(spec);
        this.clustered = !spec.source.clustering.isEmpty();
        this.traced = spec.targets.stream().anyMatch(t -> t.mode == FlowSpec.Mode.LINEAGE);
        for (String column : readColumns)
        {
            AbstractType<?> type = types == null ? null : types.typeOf(column);
            if (type == null || (!type.isMultiCell() && !type.isCounter()))
                ttlColumns.add(column);
        }
        if (spec.handler != null && !readColumns.isEmpty())
            statements.prepare(sourceReadCql());
        else if (spec.handler == null && (!readColumns.isEmpty() || clustered))
            statements.prepare(sourceCellsCql());
    }

    private static List<String> neededNonKeyColumns(FlowSpec spec)
    {
        Set<String> needed = new LinkedHashSet<>(spec.source.columns.keySet()); // every column, in the source's order
        if (spec.handler == null)
            needed.retainAll(spec.capturedColumns());
        needed.removeAll(spec.source.primaryKey());
        return new ArrayList<>(needed);
    }

    private String sourceReadCql()
    {
        return Cql.selectWithTtls(spec.source.keyspace, spec.source.table, readColumns, ttlColumns, spec.source.primaryKey());
    }

    /**
     * The source row as this node's own replica holds it, over what the task carries: the executor holds every write
     * whose task it runs (it captured it, or holds its backup entry), so this read sees the task's own cells or newer
     * ones, each with its write time; never an older value stamped with the task's timestamp.
     */
    SourceCells readLocally(Task task, SourceCells source)
    {
        List<Map<String, ByteBuffer>> rows = statements.executeLocally(sourceCellsCql(), task.key());
        SourceCells cells = source.with(rows.isEmpty() ? null : rows.get(0), readColumns, ttlColumns,
                                        Math.floorDiv(nowMillis.getAsLong(), 1000), task.timestamp());
        Set<String> statics = new HashSet<>(clustered ? statements.gateway.staticColumns(spec.source.keyspace, spec.source.table) : Set.of());
        if (rows.isEmpty())
        {
            // a row gone here has tombstones for cells: they stay at their own timestamps; its derived rows' copies of
            // static values go too (StaticCopies)
            statics.retainAll(readColumns);
            if (statics.isEmpty())
                return cells;
            long newest = Long.MIN_VALUE;
            for (SourceCells.Cell cell : readStatics(task, statics, ConsistencyLevel.ALL).values())
                newest = Math.max(newest, cell.timestamp);
            return cells.withStaticsGone(statements.gateway.rowLife(spec.source.keyspace, spec.source.table, task.key()), newest);
        }
        List<String> deleted = traced ? cells.withoutCells(readColumns) : new ArrayList<>();
        deleted.removeAll(statics);
        statics.retainAll(readColumns);
        if (!statics.isEmpty()) // this replica may have missed a static write (a node down, hints off)
            cells = cells.withNewer(readStatics(task, statics, Lineage.readLevel(spec.readConsistency)));
        statics.retainAll(cells.cells.keySet());
        if (deleted.isEmpty() && statics.isEmpty())
            return cells;
        CqlGateway.RowLife life = statements.gateway.rowLife(spec.source.keyspace, spec.source.table, task.key());
        // the static cells a row's derived rows copy, made to live as that row does on this replica
        // (SourceCells.withStaticsOf): a static value set before a row was deleted and written again stays the row's
        // value in the source, and a row whose every cell expires is gone, whatever static value its partition keeps
        return (statics.isEmpty() ? cells : cells.withStaticsOf(statics, life)).withDeletions(deleted, life);
    }

    /**
     * The partition's live static cells {@code statics} (those with a write time) read at {@code consistency}, beyond
     * this replica, which may have missed a static write (a node down, hints off) whose task ran on another replica
     * before this row existed there: a row's copies come from a quorum of the local data center (or the flow's
     * stronger level), and the timestamp a gone row's copies are deleted at ({@link StaticCopies}) from every replica
     * (ALL). A level the cluster cannot meet fails the task, which waits for the cluster without losing an attempt.
     */
    private Map<String, SourceCells.Cell> readStatics(Task task, Set<String> statics, ConsistencyLevel consistency)
    {
        List<String> columns = new ArrayList<>(readColumns);
        columns.retainAll(statics);
        List<String> timed = new ArrayList<>(ttlColumns);
        timed.retainAll(statics);
        List<String> partition = spec.source.partitionKey;
        CqlGateway.Page page = statements.gateway.fetchPage(
            statements.prepare(Cql.selectCells(spec.source.keyspace, spec.source.table, columns, timed, partition)),
            consistency, task.key().subList(0, partition.size()), 1, null);
        long nowSeconds = Math.floorDiv(nowMillis.getAsLong(), 1000);
        Map<String, SourceCells.Cell> out = new LinkedHashMap<>();
        for (Map<String, ByteBuffer> row : page.rows)
            for (String column : timed)
            {
                ByteBuffer writetime = row.get(Cql.writetimeColumn(column));
                if (writetime == null || writetime.remaining() != 8)
                    continue;
                ByteBuffer ttl = row.get(Cql.ttlColumn(column));
                long expiresAt = ttl != null && ttl.remaining() == 4 ? nowSeconds + ttl.getInt(ttl.position()) : 0;
                out.put(column, new SourceCells.Cell(row.get(column), writetime.getLong(writetime.position()), expiresAt));
            }
        return out;
    }

    /** Whether the row is gone on this node's replica (no live marker or cell). */
    boolean isGone(Task task)
    {
        return statements.executeLocally(sourceCellsCql(), task.key()).isEmpty();
    }

    private String sourceCellsCql()
    {
        if (readColumns.isEmpty()) // the row's existence alone
            return Cql.select(spec.source.keyspace, spec.source.table, spec.source.primaryKey(), spec.source.primaryKey());
        return Cql.selectCells(spec.source.keyspace, spec.source.table, readColumns, ttlColumns, spec.source.primaryKey());
    }

    /**
     * Step 1 of a handler: read the source row for the columns the update did not carry, with the TTL left of each
     * (its local expiration time goes into {@code expirations}).
     */
    void fillMissing(Task task, Map<String, ByteBuffer> values, Map<String, Long> expirations)
    {
        boolean missing = false;
        for (String column : readColumns)
            missing |= !values.containsKey(column);
        if (!missing)
            return;
        List<Map<String, ByteBuffer>> rows = statements.execute(sourceReadCql(), spec.readConsistency, task.key());
        if (rows.isEmpty())
            return; // deleted since: the delete's own task cleans up
        long nowSeconds = Math.floorDiv(nowMillis.getAsLong(), 1000);
        Map<String, ByteBuffer> row = rows.get(0);
        for (String column : readColumns)
        {
            if (values.get(column) != null)
                continue; // (a null in the task is replaced by what the row holds now, as putIfAbsent does)
            values.put(column, row.get(column));
            ByteBuffer ttl = row.get(Cql.ttlColumn(column));
            if (ttl != null && ttl.remaining() == 4) // TTL() is null for a cell without one (and for a null cell)
                expirations.putIfAbsent(column, nowSeconds + ttl.getInt(ttl.position()));
        }
    }
}
