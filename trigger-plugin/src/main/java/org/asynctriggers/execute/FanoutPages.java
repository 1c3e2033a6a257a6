package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.function.Function;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rows of a target's fan-out, one page at a time (docs/design.md, "Chunked fan-out"; a 100,000-row fan-out is
 * never loaded whole), the rows of a page written in parallel on the row writers when there are any.
 */
final class FanoutPages
{
    private static final Logger logger = LoggerFactory.getLogger(FlowExecutor.class);

    private final FlowSpec spec;
    private final Statements statements;
    /**
     * Writes the rows of one fan-out page in parallel (each write blocks its thread until the write consistency is
     * met, so one thread would do one row per round trip); null: one after the other, on the worker's thread.
     */
    private final ExecutorService rowWriters;

    FanoutPages(FlowSpec spec, Statements statements, ExecutorService rowWriters)
    {
        this.spec = spec;
        this.statements = statements;
        this.rowWriters = rowWriters;
    }

    /** Prepares the fan-out's query. */
    void prepare(FlowSpec.Fanout fanout)
    {
        statements.prepare(query(fanout));
    }

    /** The fan-out's query, its text built once. */
    private String queryOf(FlowSpec.Fanout fanout)
    {
        return statements.text(List.of("fanout", fanout), () -> query(fanout));
    }

    /**
     * The fan-out's rows: of its table, or, for a fan-out that follows its table, of the copy its companion flow keeps,
     * with each row's change number and expiry ({@link FollowTasks}).
     */
    private static String query(FlowSpec.Fanout fanout)
    {
        if (fanout.follow == null)
            return Cql.select(fanout.keyspace, fanout.table, fanout.columns, new ArrayList<>(fanout.match.keySet()));
        List<String> columns = new ArrayList<>(fanout.columns);
        columns.add(FollowTasks.CHANGE);
        columns.add(FollowTasks.EXPIRES);
        columns.add(FollowTasks.GONE);
        return Cql.select(fanout.follow.keyspace, fanout.follow.table, columns, new ArrayList<>(fanout.match.keySet()));
    }

    /**
     * A fan-out that follows its table reads the copy at the lineage read level, which meets the companion's writes of
     * it (docs/design.md, "A fan-out that follows its table"); any other at the flow's.
     */
    private org.apache.cassandra.db.ConsistencyLevel level(FlowSpec.Fanout fanout)
    {
        return fanout.follow != null ? Lineage.readLevel(spec.readConsistency) : spec.readConsistency;
    }

    /**
     * Calls {@code action} once with no fan-out row for a target without fan-out (and returns null), else once per
     * row of one page of the fan-out starting at {@code from}, and returns where the next page starts (null after
     * the last one). {@code rows[0]} counts the rows.
     */
    ByteBuffer eachRowOfPage(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, ByteBuffer from, long[] rows,
                       Consumer<Map<String, ByteBuffer>> action)
    {
        return eachRowOfPageChosen(task, target, values, from, rows, whole -> action);
    }

    /**
     * As {@link #eachRowOfPage(Task, FlowSpec.Target, Map, ByteBuffer, long[], Consumer)}, the action chosen once the
     * page is read: {@code actionFor.apply(true)} when the page is the whole fan-out (the first page, and no other
     * follows), else {@code actionFor.apply(false)}.
     */
    ByteBuffer eachRowOfPageChosen(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, ByteBuffer from, long[] rows,
                                   Function<Boolean, Consumer<Map<String, ByteBuffer>>> actionFor)
    {
        if (target.fanout == null)
        {
            actionFor.apply(from == null).accept(null);
            return null;
        }
        List<ByteBuffer> match = match(task, target, values);
        if (match == null)
            return null;
        CqlGateway.Page page = statements.gateway.fetchPage(statements.prepare(queryOf(target.fanout)), level(target.fanout),
                                                            match, spec.pageSize, from);
        Consumer<Map<String, ByteBuffer>> action = actionFor.apply(from == null && page.next == null);
        if (rowWriters == null || page.rows.size() < 2)
        {
            for (Map<String, ByteBuffer> row : page.rows)
            {
                action.accept(row);
                rows[0]++;
            }
        }
        else
        {
            inParallel(page.rows, action);
            rows[0] += page.rows.size();
        }
        return page.next;
    }

    /**
     * Calls {@code action} once with no fan-out row for a target without fan-out, else once per row of the fan-out,
     * paging through all of it.
     */
    void eachRow(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Consumer<Map<String, ByteBuffer>> action)
    {
        long[] rows = new long[1];
        ByteBuffer next = eachRowOfPage(task, target, values, null, rows, action);
        while (next != null)
            next = eachRowOfPage(task, target, values, next, rows, action);
    }

    /**
     * The fan-out's first page (all of its rows when no page follows); empty when a match value is unknown.
     * One read, as the first page of a task's fan-out.
     */
    CqlGateway.Page firstPage(FlowSpec.Target target, Map<String, ByteBuffer> values)
    {
        List<ByteBuffer> match = match(null, target, values);
        if (match == null)
            return new CqlGateway.Page(List.of(), null);
        return statements.gateway.fetchPage(statements.prepare(queryOf(target.fanout)), level(target.fanout), match, spec.pageSize, null);
    }

    /**
     * Applies {@code action} to every row on the row writers and returns once all are done. If any failed, the first
     * failure is thrown once the others finished: the page then counts as failed and is run again as a whole (the
     * writes are idempotent), never half-recorded as done.
     */
    private void inParallel(List<Map<String, ByteBuffer>> rows, Consumer<Map<String, ByteBuffer>> action)
    {
        List<Future<?>> pending = new ArrayList<>(rows.size());
        for (Map<String, ByteBuffer> row : rows)
            pending.add(rowWriters.submit(() -> action.accept(row)));
        RuntimeException failure = null;
        for (int i = 0; i < pending.size(); i++)
        {
            try
            {
                pending.get(i).get();
            }
            catch (ExecutionException e)
            {
                if (failure == null)
                    failure = e.getCause() instanceof RuntimeException ? (RuntimeException) e.getCause()
                                                                       : new RuntimeException(e.getCause());
            }
            catch (InterruptedException e)
            {
                for (Future<?> f : pending.subList(i, pending.size()))
                    f.cancel(true);
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while writing a fan-out page", e);
            }
        }
        if (failure != null)
            throw failure;
    }

    /**
     * The fan-out's match values, or null when one is unknown (logged), or empty: the match is the fan-out table's
     * partition key, which is never empty, so an empty value matches no row.
     */
    private List<ByteBuffer> match(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values)
    {
        List<ByteBuffer> match = new ArrayList<>();
        for (Map.Entry<String, Expression> e : target.fanout.match.entrySet())
        {
            ByteBuffer value = e.getValue().valueIn(values, null);
            if (value == null)
            {
                logger.warn("Flow '{}': {} cannot fan out, '{}' is unknown for {}", spec.name, target, e.getValue(), task);
                return null;
            }
            if (!value.hasRemaining())
                return null;
            match.add(value);
        }
        return match;
    }
}
