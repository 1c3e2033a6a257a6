package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;

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

/**
 * Executes the tasks of one flow version (docs/design.md, "Execution"): reads back the source columns a task lacks,
 * then hands the task to the flow's handler ({@link HandlerContext}), or writes its targets one after the other:
 * direct targets row by row ({@link TargetWrites}), page by page where they fan out ({@link FanoutPages}), lineage
 * targets through {@link Lineage}. Every derived write and delete carries the source write's timestamp, so
 * re-execution and reordering converge under last-write-wins. Statements are prepared once ({@link Statements}), in
 * the constructor for the fixed ones (a flow whose tables do not prepare is not applied), lazily for the few shapes
 * that depend on what a task knows (a column subset, a key prefix).
 */
public final class FlowExecutor
{
    private static final Logger logger = LoggerFactory.getLogger(FlowExecutor.class);

    private final FlowSpec spec;
    private final FlowHandler handler;
    private final ColumnTypes types;
    private final Statements statements;
    private final TargetWrites writes;
    private final FanoutPages fanout;
    private final Lineage lineage;
    /** non-key source columns a task may have to read back, in spec order */
    private final List<String> readColumns;
    private final boolean traced;

    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types)
    {
        this(spec, gateway, handler, types, null);
    }

    /** @param rowWriters writes the rows of a fan-out page in parallel; null: one after the other on the worker's thread */
    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters)
    {
        this.spec = spec;
        this.handler = handler;
        this.types = types;
        this.statements = new Statements(gateway);
        this.writes = new TargetWrites(spec, statements);
        this.fanout = new FanoutPages(spec, statements, rowWriters);
        this.lineage = new Lineage(spec, statements, writes, fanout);
        this.readColumns = neededNonKeyColumns(spec);

        if (!readColumns.isEmpty())
            statements.prepare(sourceReadCql());
        boolean traced = false;
        for (FlowSpec.Target target : spec.targets)
        {
            writes.prepare(target);
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
        return Cql.select(spec.source.keyspace, spec.source.table, readColumns, spec.source.primaryKey());
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
        boolean fullKey = task.key().size() == spec.source.primaryKeySize();
        if (task.operation() != Operation.DELETE && fullKey)
            fillMissing(task, values);

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
            if (target.mode == FlowSpec.Mode.LINEAGE)
            {
                if (task.operation() != Operation.DELETE && fullKey)
                    next = lineage.write(task, target, values, from, rows);
            }
            else
            {
                next = fanout.eachRowOfPage(task, target, values, from, rows, row -> writes.apply(task, target, values, row));
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

    /** Step 1: read the source row for the columns a target needs that the update did not carry. */
    private void fillMissing(Task task, Map<String, ByteBuffer> values)
    {
        boolean missing = false;
        for (String column : readColumns)
            missing |= !values.containsKey(column);
        if (!missing)
            return;
        List<Map<String, ByteBuffer>> rows = statements.execute(sourceReadCql(), spec.readConsistency, task.key());
        if (rows.isEmpty())
            return; // deleted since: the delete's own task cleans up
        for (Map.Entry<String, ByteBuffer> e : rows.get(0).entrySet())
            values.putIfAbsent(e.getKey(), e.getValue());
    }
}
