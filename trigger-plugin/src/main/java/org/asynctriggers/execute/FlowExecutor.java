package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Consumer;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.marshal.AbstractType;
import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.api.Operation;
import org.asynctriggers.api.TaskContext;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes the tasks of one flow version (docs/design.md, "Execution"). Every derived write and delete carries the
 * source write's timestamp, so re-execution and reordering converge under last-write-wins. Statements are prepared
 * once, in the constructor for the fixed ones (a flow whose tables do not prepare is not applied), lazily for the
 * few shapes that depend on what a task knows (a column subset, a key prefix).
 */
public final class FlowExecutor
{
    private static final Logger logger = LoggerFactory.getLogger(FlowExecutor.class);

    private final FlowSpec spec;
    private final CqlGateway gateway;
    private final FlowHandler handler;
    private final ColumnTypes types;
    private final Map<String, CqlGateway.Prepared> statements = new ConcurrentHashMap<>();
    /** non-key source columns a task may have to read back, in spec order */
    private final List<String> readColumns;
    private final ByteBuffer flowNameBytes;
    /**
     * Lineage converges because whichever of two tasks reads last sees the other's entry: that needs reads and
     * writes of the lineage that overlap (R + W > RF), so they are at least QUORUM whatever the flow's levels.
     */
    private final ConsistencyLevel lineageWrite;
    private final ConsistencyLevel lineageRead;

    /**
     * Writes the rows of one fan-out page in parallel (each write blocks its thread until the write consistency is
     * met, so one thread would do one row per round trip); null: one after the other, on the worker's thread.
     */
    private final ExecutorService rowWriters;

    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types)
    {
        this(spec, gateway, handler, types, null);
    }

    public FlowExecutor(FlowSpec spec, CqlGateway gateway, FlowHandler handler, ColumnTypes types, ExecutorService rowWriters)
    {
        this.rowWriters = rowWriters;
        this.spec = spec;
        this.gateway = gateway;
        this.handler = handler;
        this.types = types;
        this.flowNameBytes = ByteBuffer.wrap(spec.name.getBytes(StandardCharsets.UTF_8));
        this.readColumns = neededNonKeyColumns(spec);
        this.lineageWrite = atLeastQuorum(spec.writeConsistency);
        this.lineageRead = atLeastQuorum(spec.readConsistency);

        if (!readColumns.isEmpty())
            statement(sourceReadCql());
        boolean lineage = false;
        for (FlowSpec.Target target : spec.targets)
        {
            statement(Cql.insert(target.keyspace, target.table, new ArrayList<>(target.columns.keySet())));
            statement(Cql.delete(target.keyspace, target.table, target.primaryKey()));
            if (target.fanout != null)
                statement(fanoutCql(target.fanout));
            lineage |= target.mode == FlowSpec.Mode.LINEAGE;
        }
        if (lineage)
        {
            statement(Cql.lineageInsert());
            statement(Cql.lineageSelect());
            statement(Cql.lineageDelete());
        }
    }

    private static ConsistencyLevel atLeastQuorum(ConsistencyLevel level)
    {
        return level == ConsistencyLevel.ALL || level == ConsistencyLevel.EACH_QUORUM ? level : ConsistencyLevel.QUORUM;
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

    private static String fanoutCql(FlowSpec.Fanout fanout)
    {
        return Cql.select(fanout.keyspace, fanout.table, fanout.columns, new ArrayList<>(fanout.match.keySet()));
    }

    private CqlGateway.Prepared statement(String cql)
    {
        return statements.computeIfAbsent(cql, gateway::prepare);
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
            handler.execute(new Context(task, values));
            return ExecutionResult.success();
        }

        boolean lineage = false;
        int first = Math.min(task.resumeTarget(), spec.targets.size());
        for (FlowSpec.Target target : spec.targets)
            lineage |= target.mode == FlowSpec.Mode.LINEAGE;
        for (int i = first; i < spec.targets.size(); i++)
        {
            FlowSpec.Target target = spec.targets.get(i);
            ByteBuffer from = i == first ? task.resumePaging() : null;
            ByteBuffer next = null;
            if (target.mode == FlowSpec.Mode.LINEAGE)
            {
                if (task.operation() != Operation.DELETE && fullKey)
                    next = writeLineageTarget(task, target, values, from, rows);
            }
            else
            {
                next = direct(task, target, values, from, rows);
            }
            if (next != null)
                return ExecutionResult.more(i, next, rows[0]);
        }
        if (lineage)
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
                        execute(Cql.lineageInsert(), lineageWrite, flowNameBytes, task.serializedKey(), lineageKey(target, List.of()),
                                bigint(task.timestamp()), bigint(task.timestamp()));
            converge(task);
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
        List<Map<String, ByteBuffer>> rows = gateway.execute(statement(sourceReadCql()), spec.readConsistency, task.key());
        if (rows.isEmpty())
            return; // deleted since: the delete's own task cleans up
        for (Map.Entry<String, ByteBuffer> e : rows.get(0).entrySet())
            values.putIfAbsent(e.getKey(), e.getValue());
    }

    /** @return where the fan-out goes on, null when this target is done */
    private ByteBuffer direct(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, ByteBuffer from, long[] rows)
    {
        return onePage(task, target, values, from, rows, row -> apply(task, target, values, row));
    }

    /**
     * Calls {@code action} once with no fan-out row for a target without fan-out (and returns null), else once per
     * row of one page of the fan-out starting at {@code from}, and returns where the next page starts (null after
     * the last one).
     */
    private ByteBuffer onePage(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, ByteBuffer from, long[] rows,
                               Consumer<Map<String, ByteBuffer>> action)
    {
        if (target.fanout == null)
        {
            action.accept(null);
            return null;
        }
        List<ByteBuffer> match = fanoutMatch(task, target, values);
        if (match == null)
            return null;
        CqlGateway.Page page = gateway.fetchPage(statement(fanoutCql(target.fanout)), spec.readConsistency, match, spec.pageSize, from);
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

    /** The fan-out's match values, or null (logged) when one is unknown. */
    private List<ByteBuffer> fanoutMatch(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values)
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
            match.add(value);
        }
        return match;
    }

    /**
     * Calls {@code action} once with no fan-out row for a target without fan-out, else once per row of the fan-out,
     * paging through it (a 100,000-row fan-out is never loaded whole).
     */
    private void eachRow(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Consumer<Map<String, ByteBuffer>> action)
    {
        long[] rows = new long[1];
        ByteBuffer next = onePage(task, target, values, null, rows, action);
        while (next != null)
            next = onePage(task, target, values, next, rows, action);
    }

    private void apply(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
    {
        if (task.operation() == Operation.DELETE)
            deleteDerived(task, target, values, fanoutRow, task.timestamp());
        else
            writeTarget(task, target, values, fanoutRow);
    }

    /** The target's full primary key, or null when a component is unknown or null. */
    private static List<ByteBuffer> targetKey(FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
    {
        List<ByteBuffer> key = new ArrayList<>();
        for (String column : target.primaryKey())
        {
            ByteBuffer value = target.columns.get(column).valueIn(values, fanoutRow);
            if (value == null)
                return null;
            key.add(value);
        }
        return key;
    }

    /** Writes the columns whose value is known (a partial update never blanks the others) at the task's timestamp. */
    private boolean writeTarget(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
    {
        if (targetKey(target, values, fanoutRow) == null)
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
        bound.add(bigint(task.timestamp()));
        gateway.execute(statement(Cql.insert(target.keyspace, target.table, columns)), spec.writeConsistency, bound);
        return true;
    }

    /**
     * Deletes what the task's key names in the target: the full key, or, for a range or partition deletion, the
     * longest known clustering prefix of a fully known partition key.
     */
    private void deleteDerived(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long timestamp)
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
        gateway.execute(statement(Cql.delete(target.keyspace, target.table, columns)), spec.writeConsistency, bound);
    }

    /**
     * Step 1 of a lineage target: record the image (its lineage columns' values) at the task's timestamp, then write
     * the rows derived from it. No image (a lineage column is null) is recorded as the target's sentinel, so that
     * older rows are cleaned up and an older task executed later cannot resurrect its rows.
     */
    private ByteBuffer writeLineageTarget(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, ByteBuffer from, long[] rows)
    {
        ByteBuffer ts = bigint(task.timestamp());
        List<ByteBuffer> image = image(target, values);
        if (image == null || (target.fanout == null && targetKey(target, values, null) == null))
        {
            execute(Cql.lineageInsert(), lineageWrite, flowNameBytes, task.serializedKey(), lineageKey(target, List.of()), ts, ts);
            return null;
        }
        if (from == null) // a resumed fan-out recorded its image with its first page
            execute(Cql.lineageInsert(), lineageWrite, flowNameBytes, task.serializedKey(), lineageKey(target, image), ts, ts);
        return onePage(task, target, values, from, rows, row -> writeTarget(task, target, values, row));
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
    private void converge(Task task)
    {
        ByteBuffer sourceKey = task.serializedKey();
        List<Map<String, ByteBuffer>> entries = gateway.execute(statement(Cql.lineageSelect()), lineageRead, List.of(flowNameBytes, sourceKey));
        Map<Integer, List<LineageEntry>> byTarget = new LinkedHashMap<>();
        for (Map<String, ByteBuffer> row : entries)
        {
            LineageEntry entry = LineageEntry.of(row);
            if (entry == null)
            {
                logger.warn("Flow '{}': unreadable lineage entry of {} dropped", spec.name, task);
                execute(Cql.lineageDelete(), lineageWrite, bigint(row.get("ts") == null ? task.timestamp() : longOf(row.get("ts"))),
                        flowNameBytes, sourceKey, row.get("target_key"));
                continue;
            }
            byTarget.computeIfAbsent(entry.target, t -> new ArrayList<>()).add(entry);
        }
        for (Map.Entry<Integer, List<LineageEntry>> group : byTarget.entrySet())
        {
            LineageEntry newest = null;
            for (LineageEntry entry : group.getValue())
                if (newest == null || entry.ts > newest.ts)
                    newest = entry;
            long deleteAt = newest.image.isEmpty() ? newest.ts : newest.ts - 1;
            for (LineageEntry entry : group.getValue())
            {
                if (entry.ts >= newest.ts)
                    continue;
                deleteRowsOf(task, group.getKey(), entry, deleteAt);
                execute(Cql.lineageDelete(), lineageWrite, bigint(deleteAt), flowNameBytes, sourceKey, entry.targetKey);
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
        eachRow(task, target, old, row -> deleteDerived(task, target, old, row, deleteAt));
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

    private static long longOf(ByteBuffer b)
    {
        return b.getLong(b.position());
    }

    private void execute(String cql, ConsistencyLevel consistency, ByteBuffer... values)
    {
        gateway.execute(statement(cql), consistency, List.of(values));
    }

    private static ByteBuffer bigint(long value)
    {
        return ByteBuffer.allocate(8).putLong(0, value);
    }

    /** What a handler sees; CQL it runs goes through the same gateway at the flow's write consistency. */
    private final class Context implements TaskContext
    {
        private final Task task;
        private final Map<String, ByteBuffer> values;

        Context(Task task, Map<String, ByteBuffer> values)
        {
            this.task = task;
            this.values = Collections.unmodifiableMap(values);
        }

        @Override
        public String flowName()
        {
            return spec.name;
        }

        @Override
        public Operation operation()
        {
            return task.operation();
        }

        @Override
        public long timestamp()
        {
            return task.timestamp();
        }

        @Override
        public Map<String, ByteBuffer> key()
        {
            Map<String, ByteBuffer> key = new LinkedHashMap<>();
            List<String> names = spec.source.primaryKey();
            List<ByteBuffer> components = task.key();
            for (int i = 0; i < components.size(); i++)
                key.put(names.get(i), components.get(i));
            return Collections.unmodifiableMap(key);
        }

        @Override
        public Map<String, ByteBuffer> values()
        {
            return values;
        }

        @Override
        public Object get(String column)
        {
            ByteBuffer value = values.get(column);
            if (value == null)
                return null;
            AbstractType<?> type = types.typeOf(column);
            if (type == null)
                throw new IllegalArgumentException("flow '" + spec.name + "': unknown source column '" + column + "'");
            return type.compose(value.duplicate());
        }

        @Override
        public List<Map<String, ByteBuffer>> execute(String cql, Object... values)
        {
            CqlGateway.Prepared prepared = statement(cql);
            List<ByteBuffer> bound = new ArrayList<>(values.length);
            for (int i = 0; i < values.length; i++)
                bound.add(gateway.bind(prepared, i, values[i]));
            return gateway.execute(prepared, spec.writeConsistency, bound);
        }
    }
}
