package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.function.LongSupplier;

import org.apache.cassandra.db.marshal.AbstractType;

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
    /** non-key source columns a task may have to read back, in spec order */
    private final List<String> readColumns;
    /** those of them that can carry a TTL (not a collection or UDT whose cells are many, not a counter) */
    private final List<String> ttlColumns;
    private final boolean traced;
    private final LongSupplier nowMillis;

    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types)
    {
        this(spec, gateway, handler, types, null);
    }

    /** @param rowWriters writes the rows of a fan-out page in parallel; null: one after the other on the worker's thread */
    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters)
    {
        this(spec, gateway, handler, types, rowWriters, System::currentTimeMillis);
    }

    /** @param nowMillis the clock that remaining TTLs are counted on */
    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters,
                        LongSupplier nowMillis)
    {
        this.spec = spec;
        this.nowMillis = nowMillis;
        this.handler = handler;
        this.types = types;
        this.statements = new Statements(gateway);
        this.fanout = new FanoutPages(spec, statements, rowWriters);
        this.lineage = new Lineage(spec, statements, fanout, new Lineage.Rows()
        {
            @Override
            public boolean write(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, int ttl)
            {
                return FlowExecutor.this.write(task, target, values, fanoutRow, ttl);
            }

            @Override
            public void delete(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long timestamp)
            {
                FlowExecutor.this.delete(task, target, values, fanoutRow, timestamp);
            }
        });
        this.readColumns = neededNonKeyColumns(spec);
        this.ttlColumns = new ArrayList<>();
        for (String column : readColumns)
        {
            AbstractType<?> type = types == null ? null : types.typeOf(column);
            if (type == null || (!type.isMultiCell() && !type.isCounter()))
                ttlColumns.add(column);
        }

        if (!readColumns.isEmpty())
            statements.prepare(sourceReadCql());
        boolean traced = false;
        for (FlowSpec.Target target : spec.targets)
        {
            statements.prepare(Cql.insert(target.keyspace, target.table, new ArrayList<>(target.columns.keySet())));
            statements.prepare(Cql.insertWithTtl(target.keyspace, target.table, new ArrayList<>(target.columns.keySet())));
            statements.prepare(Cql.delete(target.keyspace, target.table, target.primaryKey()));
            if (target.fanout != null)
                fanout.prepare(target.fanout);
            traced |= target.mode == FlowSpec.Mode.LINEAGE;
        }
        if (traced)
            lineage.prepare();
        this.traced = traced;
    }

    private static List<String> neededNonKeyColumns(FlowSpec spec)
    {
        Set<String> needed = new LinkedHashSet<>();
        if (spec.handler != null)
            needed.addAll(spec.source.columns.keySet());
        for (FlowSpec.Target target : spec.targets)
        {
            for (Expression e : target.columns.values())
                if (e.scope == Expression.Scope.SOURCE)
                    needed.add(e.column);
            if (target.fanout != null)
                for (Expression e : target.fanout.match.values())
                    needed.add(e.column);
        }
        needed.removeAll(spec.source.primaryKey());
        return new ArrayList<>(needed);
    }

    private String sourceReadCql()
    {
        return Cql.selectWithTtls(spec.source.keyspace, spec.source.table, readColumns, ttlColumns, spec.source.primaryKey());
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
        Map<String, ByteBuffer> values = new LinkedHashMap<>(task.values());
        Map<String, Long> expirations = new HashMap<>(task.expirations());
        boolean fullKey = task.key().size() == spec.source.primaryKeySize();
        if (task.operation() != Operation.DELETE && fullKey)
            fillMissing(task, values, expirations);

        if (handler != null)
        {
            handler.execute(new HandlerContext(spec, statements, types, task, values));
            return ExecutionResult.success();
        }

        int first = Math.min(task.resumeTarget(), spec.targets.size());
        for (int i = first; i < spec.targets.size(); i++)
        {
            FlowSpec.Target target = spec.targets.get(i);
            ByteBuffer from = i == first ? task.resumePaging() : null;
            ByteBuffer next = null;
            Expiry expiry = task.operation() == Operation.DELETE ? Expiry.NONE : Expiry.of(task, target, expirations, nowMillis.getAsLong());
            if (expiry.expired && from == null)
                logger.debug("Flow '{}': the source of {} expired before it ran; {} rows deleted, not written", spec.name, task, target);
            if (target.mode == FlowSpec.Mode.LINEAGE)
            {
                if (task.operation() != Operation.DELETE && fullKey)
                    next = lineage.write(task, target, values, from, rows, expiry);
            }
            else
            {
                // a target without a fan-out is one row: eachRowOfPage applies it once and returns no next page
                next = fanout.eachRowOfPage(task, target, values, from, rows, row -> apply(task, target, values, row, expiry));
            }
            if (next != null)
                return ExecutionResult.more(i, next, rows[0]);
        }
        if (traced)
        {
            if (!fullKey)
            {
                logger.warn("Flow '{}': a {} without a full source key cannot be traced through the lineage; skipped: {}",
                            spec.name, task.operation().eventName(), task);
                return ExecutionResult.success(rows[0]);
            }
            if (task.operation() == Operation.DELETE)
                for (FlowSpec.Target target : spec.targets)
                    if (target.mode == FlowSpec.Mode.LINEAGE)
                        lineage.recordDelete(task, target);
            lineage.converge(task);
        }
        return ExecutionResult.success(rows[0]);
    }

    /**
     * Step 1: read the source row for the columns a target needs that the update did not carry, with the TTL left of
     * each (its local expiration time goes into {@code expirations}).
     */
    private void fillMissing(Task task, Map<String, ByteBuffer> values, Map<String, Long> expirations)
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

    /**
     * What the task does to one row of a direct target: deletes it, or writes it. A write whose source expired before
     * it ran deletes the row at the task's timestamp instead: what the expired write would have left of it (its cells
     * shadow every older cell of the row), so neither the expired values nor an older image come back.
     */
    private void apply(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, Expiry expiry)
    {
        if (task.operation() == Operation.DELETE || expiry.expired)
            delete(task, target, values, fanoutRow, task.timestamp());
        else
            write(task, target, values, fanoutRow, expiry.ttl);
    }

    /**
     * Writes the columns whose value is known (a partial update never blanks the others) at the task's timestamp,
     * with {@code ttl} seconds to live (0: none).
     */
    private boolean write(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, int ttl)
    {
        if (!target.keyKnownIn(values, fanoutRow))
        {
            logger.warn("Flow '{}': {} key is unknown or null, row not written for {}", spec.name, target, task);
            return false;
        }
        List<String> columns = new ArrayList<>();
        List<ByteBuffer> bound = new ArrayList<>();
        for (Map.Entry<String, Expression> e : target.columns.entrySet())
        {
            if (!e.getValue().isKnownIn(values, fanoutRow))
                continue;
            columns.add(e.getKey());
            bound.add(e.getValue().valueIn(values, fanoutRow));
        }
        if (ttl > 0)
            bound.add(ByteBuffer.allocate(4).putInt(0, ttl));
        bound.add(bigint(task.timestamp()));
        String cql = ttl > 0 ? Cql.insertWithTtl(target.keyspace, target.table, columns) : Cql.insert(target.keyspace, target.table, columns);
        statements.execute(cql, spec.writeConsistency, bound);
        return true;
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
        if (columns.size() < target.partitionKey.size())
        {
            logger.warn("Flow '{}': {} key cannot be computed from the deleted source key (it needs a non-key column: "
                        + "use mode 'lineage'); nothing deleted for {}", spec.name, target, task);
            return;
        }
        statements.execute(Cql.delete(target.keyspace, target.table, columns), spec.writeConsistency, bound);
    }
}
