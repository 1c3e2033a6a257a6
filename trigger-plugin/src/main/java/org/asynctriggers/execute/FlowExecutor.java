package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.function.LongSupplier;


import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.asynctriggers.execute.Statements.bigint;

/**
 * Executes the tasks of one flow version (docs/design.md, "Execution"): reads back the source columns a task lacks,
 * then hands the task to the flow's handler ({@link HandlerContext}), or writes its targets one after the other:
 * direct targets here, row by row, one page at a time where they fan out ({@link FanoutPages}); lineage targets
 * through {@link Lineage}. Every derived write and delete carries the source write's timestamp, so
 * re-execution and reordering converge under last-write-wins. Statements are prepared once ({@link Statements}), in
 * the constructor for the fixed ones (a flow whose tables do not prepare is not applied), lazily for the few shapes
 * that depend on what a task knows (a column subset, a key prefix). A source write with a TTL gives the derived rows
 * what remains of it ({@link Expiry}; docs/design.md, "TTL").
 */
public final class FlowExecutor
{
    private static final Logger logger = LoggerFactory.getLogger(FlowExecutor.class);

    private final FlowSpec spec;
    private final FlowHandler handler;
    private final ColumnTypes types;
    private final Statements statements;
    private final FanoutPages fanout;
    private final Lineage lineage;
    private final SourceReads reads;
    /** a target is not in mode lineage: its rows mirror each task's cells */
    private final boolean direct;
    /**
     * the source has clustering columns, so range and partition deletions: a direct task checks its cells against this
     * replica, where a deletion newer than the write may have removed them ({@link SourceCells#with})
     */
    private final boolean clustered;
    private final PartialDeletes partialDeletes;
    private final ClusteringOrder clusteringOrder;
    private final LongSupplier nowMillis;
    /** a companion flow's tasks (the fan-out rows of a fan-out that follows its table); null for any other flow */
    private final FollowTasks follows;

    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types)
    {
        this(spec, gateway, handler, types, null);
    }

    /** @param rowWriters writes the rows of a fan-out page in parallel; null: one after the other on the worker's thread */
    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters)
    {
        this(spec, gateway, handler, types, rowWriters, System::currentTimeMillis);
    }

    /** @param nowMillis the clock that remaining TTLs are counted on, and lineage versions taken from */
    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters,
                        LongSupplier nowMillis)
    {
        this(spec, gateway, handler, types, rowWriters, nowMillis, ColumnTypes::orNone);
    }

    /** @param tableTypes the column types of a table (an aggregate's members and its table) */
    FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters,
                 LongSupplier nowMillis, java.util.function.BiFunction<String, String, ColumnTypes> tableTypes)
    {
        this.spec = spec;
        this.nowMillis = nowMillis;
        this.handler = handler;
        this.types = types;
        this.statements = new Statements(gateway);
        this.fanout = new FanoutPages(spec, statements, rowWriters);
        AggregateTotals totals = spec.targets.stream().anyMatch(t -> t.aggregate != null)
                                 ? new AggregateTotals(spec, statements, nowMillis, tableTypes) : null;
        this.lineage = new Lineage(spec, statements, fanout, (task, target, values, fanoutRow, timestamp) ->
            FlowExecutor.this.delete(task, target, values, fanoutRow, timestamp), nowMillis, totals);
        this.clustered = !spec.source.clustering.isEmpty();
        this.clusteringOrder = new ClusteringOrder(spec.source, types);
        this.partialDeletes = new PartialDeletes(spec, statements, types, target -> ColumnTypes.orNone(target.keyspace, target.table));
        this.reads = new SourceReads(spec, statements, types, nowMillis);
        boolean direct = false;
        for (FlowSpec.Target target : spec.targets)
        {
            statements.prepare(Cql.insert(target.keyspace, target.table, new ArrayList<>(target.columns.keySet())));
            statements.prepare(Cql.insertWithTtl(target.keyspace, target.table, new ArrayList<>(target.columns.keySet())));
            statements.prepare(Cql.delete(target.keyspace, target.table, target.primaryKey()));
            if (target.fanout != null)
                fanout.prepare(target.fanout);
            direct |= target.mode != FlowSpec.Mode.LINEAGE;
        }
        if (lineage.any())
            lineage.prepare();
        if (totals != null)
            totals.prepare();
        this.direct = direct;
        this.follows = spec.follows != null ? new FollowTasks(spec, statements, nowMillis, clusteringOrder) : null;
        if (follows != null)
            follows.prepare();
    }

    /**
     * Runs the task from its resume position up to the end of one fan-out page (docs/design.md, "Chunked fan-out"):
     * the result says where to go on, or that the task is done. Never throws: a failure is returned for the retry
     * policy.
     */
    public ExecutionResult execute(Task task)
    {
        long[] rows = new long[1];
        try
        {
            return run(task, rows);
        }
        catch (Throwable e) // a handler's LinkageError or StackOverflowError fails its task, retried like any failure
        {
            return ExecutionResult.failure(e);
        }
    }

    private ExecutionResult run(Task task, long[] rows) throws Exception
    {
        boolean fullKey = task.keySize() == spec.source.primaryKeySize() && !task.isStatic();
        if (handler != null)
        {
            // the row as the executor's replica holds it (it holds the task's write): each value with its write time
            SourceCells cells = SourceCells.of(task, spec.source.primaryKey());
            if (task.operation() != Operation.DELETE && fullKey)
                cells = reads.readLocally(task, cells);
            handler.execute(new HandlerContext(spec, statements, types, task, cells));
            return ExecutionResult.success();
        }
        if (follows != null)
            return follows.run(task);

        if (task.isStatic())
            return runStatic(task);
        if (!fullKey && lineage.any() && task.operation() == Operation.DELETE && task.resumeTarget() == 0 && task.resumePaging() == null)
            lineage.deletePartial(task, clusteringOrder);
        SourceCells source = SourceCells.of(task, spec.source.primaryKey());
        if (task.operation() != Operation.DELETE && fullKey && direct && (clustered || lacksKeyColumn(source.values)))
            source = reads.readLocally(task, source);

        Lineage.Sync sync = null; // the lineage targets' derivation, once this run reaches the first of them
        int first = Math.min(task.resumeTarget(), spec.targets.size());
        for (int i = first; i < spec.targets.size(); i++)
        {
            FlowSpec.Target target = spec.targets.get(i);
            ByteBuffer from = i == first ? task.resumePaging() : null;
            ByteBuffer next;
            if (target.mode == FlowSpec.Mode.LINEAGE)
            {
                if (!fullKey)
                    continue; // a range or partition deletion: deletePartial derived the rows it covers again
                LineageResume resume = LineageResume.decode(from);
                if (sync == null)
                    sync = resume != null ? lineage.resume(task.key(), resume) : lineage.begin(task.key());
                next = lineage.writePage(task, sync, target, resume != null ? resume.paging : null, rows);
                if (next != null)
                    return ExecutionResult.more(i, LineageResume.encode(sync, next), rows[0]);
            }
            else
            {
                SourceCells cells = source;
                // a target without a fan-out is one row: eachRowOfPage applies it once and returns no next page
                next = fanout.eachRowOfPage(task, target, source.values, from, rows, row -> applyDirect(task, target, cells, row));
                if (next != null)
                    return ExecutionResult.more(i, next, rows[0]);
            }
        }
        return ExecutionResult.success(rows[0]);
    }

    /**
     * A change of the partition's static row (docs/design.md, "Write shapes"): a static column is a column of every row
     * of its partition, so the rows of each row the partition holds on this replica are derived again. Only lineage
     * targets copy static values (a target that maps a static column is one); each row runs to its end here (a
     * partition's rows, not a fan-out's).
     */
    private ExecutionResult runStatic(Task task) throws Exception
    {
        if (!lineage.any())
            return ExecutionResult.success();
        List<String> clustering = spec.source.clustering;
        List<String> partition = spec.source.partitionKey;
        List<Map<String, ByteBuffer>> rows = statements.executeLocally(
            Cql.select(spec.source.keyspace, spec.source.table, clustering, partition), task.key());
        long[] written = new long[1];
        for (Map<String, ByteBuffer> row : rows)
        {
            List<ByteBuffer> key = new ArrayList<>(task.key());
            for (String column : clustering)
                key.add(row.get(column));
            if (!key.contains(null)) // else the partition's static row alone: no row derives from it
                lineage.deriveWhole(task, key, written);
        }
        return ExecutionResult.success(written[0]);
    }

    /** Whether a direct target's key or fan-out match needs a source column the task does not carry. */
    private boolean lacksKeyColumn(Map<String, ByteBuffer> values)
    {
        for (FlowSpec.Target target : spec.targets)
        {
            if (target.mode == FlowSpec.Mode.LINEAGE)
                continue;
            for (String column : target.primaryKey())
            {
                Expression e = target.columns.get(column);
                if (e.scope == Expression.Scope.SOURCE && !values.containsKey(e.column))
                    return true;
            }
            if (target.fanout != null)
                for (Expression e : target.fanout.match.values())
                    if (!values.containsKey(e.column))
                        return true;
        }
        return false;
    }

    /**
     * What the task does to one row of a direct target (docs/design.md, "Write shapes"): the row deletion it carries
     * at its timestamp, then its row marker and cells, each at its own timestamp and TTL: the derived row mirrors the
     * source cell by cell. A range or partition deletion deletes the derived rows of exactly the source rows it named.
     */
    private void applyDirect(Task task, FlowSpec.Target target, SourceCells source, Map<String, ByteBuffer> fanoutRow)
    {
        boolean fullKey = task.keySize() == spec.source.primaryKeySize() && !task.isStatic();
        if (!fullKey)
        {
            if (task.operation() == Operation.DELETE)
                partialDeletes.delete(task, target, source.values, fanoutRow, task.deletionTimestamp());
            return;
        }
        if (source.hasDeletion())
            delete(task, target, source.values, fanoutRow, source.deletionTimestamp);
        if (task.operation() == Operation.DELETE)
            return;
        List<ByteBuffer> key = keyOf(target, source.values, fanoutRow);
        if (key == null)
        {
            logger.warn("Flow '{}': {} key is unknown or null, row not written for {}", spec.name, target, task);
            return;
        }
        DerivedRow row = new DerivedRow(target, key);
        Set<String> mapped = new java.util.HashSet<>();
        for (Map.Entry<String, Expression> e : target.columns.entrySet())
        {
            if (target.primaryKey().contains(e.getKey()))
                continue;
            Expression expr = e.getValue();
            if (expr.scope == Expression.Scope.SOURCE)
            {
                mapped.add(expr.column);
                SourceCells.Cell cell = source.cells.get(expr.column);
                if (cell != null)
                    row.cell(e.getKey(), cell);
            }
        }
        if (source.hasLiveness())
            row.marker(source.livenessTimestamp, source.livenessExpiresAt);
        else
            markUnmapped(row, source, mapped);
        if (row.isEmpty())
            return;
        if (fanoutRow != null)
            for (Map.Entry<String, Expression> e : target.columns.entrySet())
                if (e.getValue().scope == Expression.Scope.ROW && !target.primaryKey().contains(e.getKey()))
                    row.cell(e.getKey(), new SourceCells.Cell(fanoutRow.get(e.getValue().column), task.timestamp(), 0));
        row.write(statements, spec.writeConsistency, nowMillis.getAsLong());
    }

    /**
     * An update without a row marker keeps its source row alive through its non-null cells: where none of them is a
     * column the target maps, the derived row needs a marker to exist, at the newest of those cells' timestamps and
     * living as long as the longest-lived of them.
     */
    private static void markUnmapped(DerivedRow row, SourceCells source, Set<String> mapped)
    {
        long newest = Long.MIN_VALUE;
        long expiresAt = -1;
        for (Map.Entry<String, SourceCells.Cell> e : source.cells.entrySet())
        {
            SourceCells.Cell cell = e.getValue();
            if (cell.value == null || mapped.contains(e.getKey()))
                continue;
            newest = Math.max(newest, cell.timestamp);
            expiresAt = cell.expiresAt == 0 || expiresAt == 0 ? 0 : Math.max(expiresAt, cell.expiresAt);
        }
        if (newest != Long.MIN_VALUE)
            row.marker(newest, expiresAt);
    }

    /**
     * The target key's values, in primary key order; null when one is unknown or null, or a partition key value is
     * empty: Cassandra refuses an empty partition key ("Key may not be empty"), so such a source row derives no row
     * there, as one with a null value does (an empty clustering value is a key like any other).
     */
    static List<ByteBuffer> keyOf(FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
    {
        List<ByteBuffer> key = new ArrayList<>();
        for (String column : target.primaryKey())
        {
            ByteBuffer value = target.columns.get(column).valueIn(values, fanoutRow);
            if (value == null || (!value.hasRemaining() && key.size() < target.partitionKey.size()))
                return null;
            key.add(value);
        }
        return key;
    }

    /**
     * Deletes what the task's key names in the target: the full key, or, for a range or partition deletion, the
     * longest known clustering prefix of a fully known partition key.
     */
    private void delete(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long timestamp)
    {
        List<String> columns = new ArrayList<>();
        List<ByteBuffer> bound = new ArrayList<>();
        bound.add(bigint(timestamp));
        for (String column : target.primaryKey())
        {
            ByteBuffer value = target.columns.get(column).valueIn(values, fanoutRow);
            if (value == null)
                break;
            columns.add(column);
            bound.add(value);
        }
        if (columns.size() >= target.partitionKey.size()
            && bound.subList(1, 1 + target.partitionKey.size()).stream().anyMatch(v -> !v.hasRemaining()))
            return; // an empty partition key value: no row was derived there
        if (columns.size() < target.partitionKey.size())
        {
            logger.warn("Flow '{}': {} key cannot be computed from the deleted source key (it needs a non-key column: "
                        + "use mode 'lineage'); nothing deleted for {}", spec.name, target, task);
            return;
        }
        // an aggregate's members and a join index are written at the lineage level (AggregateTotals, FollowTasks)
        ConsistencyLevel level = target.isIndex() ? Lineage.writeLevel(spec.writeConsistency) : spec.writeConsistency;
        statements.execute(Cql.delete(target.keyspace, target.table, columns), level, bound);
    }
}
