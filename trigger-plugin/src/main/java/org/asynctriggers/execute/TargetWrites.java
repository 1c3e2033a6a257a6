package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.asynctriggers.execute.Statements.bigint;

/**
 * The direct writes of a flow's targets: one derived row written or deleted at a given timestamp (the source
 * write's, so re-execution and reordering converge under last-write-wins), at the flow's write consistency.
 */
final class TargetWrites
{
    private static final Logger logger = LoggerFactory.getLogger(FlowExecutor.class);

    private final FlowSpec spec;
    private final Statements statements;

    TargetWrites(FlowSpec spec, Statements statements)
    {
        this.spec = spec;
        this.statements = statements;
    }

    /** Prepares the target's insert and delete. */
    void prepare(FlowSpec.Target target)
    {
        statements.prepare(Cql.insert(target.keyspace, target.table, new ArrayList<>(target.columns.keySet())));
        statements.prepare(Cql.delete(target.keyspace, target.table, target.primaryKey()));
    }

    /** What the task does to one row of a direct target: deletes it, or writes it. */
    void apply(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
    {
        if (task.operation() == Operation.DELETE)
            delete(task, target, values, fanoutRow, task.timestamp());
        else
            write(task, target, values, fanoutRow);
    }

    /** The target's full primary key, or null when a component is unknown or null. */
    static List<ByteBuffer> targetKey(FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
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
    boolean write(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
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
        statements.execute(Cql.insert(target.keyspace, target.table, columns), spec.writeConsistency, bound);
        return true;
    }

    /**
     * Deletes what the task's key names in the target: the full key, or, for a range or partition deletion, the
     * longest known clustering prefix of a fully known partition key.
     */
    void delete(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long timestamp)
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
