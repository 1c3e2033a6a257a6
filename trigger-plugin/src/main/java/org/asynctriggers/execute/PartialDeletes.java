package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.marshal.AbstractType;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.KeyRange;
import org.asynctriggers.task.Task;

import static org.asynctriggers.execute.Statements.bigint;

/**
 * What a partition deletion, a clustering-prefix deletion or a range deletion of the source does to a direct target
 * (docs/design.md, "Write shapes"): the derived rows of exactly the source rows it deleted go, at its timestamp, and no
 * other row.
 * <p>
 * When the target is laid out as the source (its partition key is the source's, its clustering starts with the
 * source's clustering columns in the same order and direction), the same deletion is written to it, a partition, prefix
 * or range tombstone, which also shadows a late write of a deleted row whose task runs after this one. Otherwise the
 * derived rows are found by reading the target partitions the deleted rows map to, at ALL (every acknowledged derived
 * write is seen), and deleted one by one; a late write of a deleted row is then caught by its own task, which finds
 * its cells gone from this replica and writes them as tombstones ({@link SourceCells#with}). A target whose partition
 * key needs a source clustering column cannot be searched this way: deploy refuses it on a source with clustering
 * columns.
 */
final class PartialDeletes
{
    private final FlowSpec spec;
    private final Statements statements;
    private final ColumnTypes sourceTypes;
    private final Function<FlowSpec.Target, ColumnTypes> targetTypes;
    private final ClusteringOrder order;

    PartialDeletes(FlowSpec spec, Statements statements, ColumnTypes sourceTypes, Function<FlowSpec.Target, ColumnTypes> targetTypes)
    {
        this.spec = spec;
        this.statements = statements;
        this.sourceTypes = sourceTypes == null ? c -> null : sourceTypes;
        this.targetTypes = targetTypes;
        this.order = new ClusteringOrder(spec.source, this.sourceTypes);
    }

    /**
     * Deletes the target's rows derived from what the task deleted. {@code values} holds the source columns the
     * deletion names (the partition key, a clustering prefix); {@code fanoutRow} one row of the target's fan-out.
     */
    void delete(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long at)
    {
        if (fanoutRow == null && mirrorsSource(target) && sliceable(task))
            deleteAlike(task, target, values, at);
        else
            deleteFound(task, target, values, fanoutRow, at);
    }

    /**
     * Whether a deletion of the source translates into the same deletion of the target: the target's partition key
     * columns are the source's partition key columns (in any order), and its clustering starts with the source's
     * clustering columns, in order, each sorted in the same direction.
     */
    boolean mirrorsSource(FlowSpec.Target target)
    {
        if (target.fanout != null || target.partitionKey.size() != spec.source.partitionKey.size())
            return false;
        Set<String> partition = new HashSet<>();
        for (String column : target.partitionKey)
        {
            Expression e = target.columns.get(column);
            if (e.scope != Expression.Scope.SOURCE || !spec.source.partitionKey.contains(e.column))
                return false;
            partition.add(e.column);
        }
        if (partition.size() != spec.source.partitionKey.size() || target.clustering.size() < spec.source.clustering.size())
            return false;
        ColumnTypes targetTypes = this.targetTypes.apply(target);
        for (int i = 0; i < spec.source.clustering.size(); i++)
        {
            Expression e = target.columns.get(target.clustering.get(i));
            String sourceColumn = spec.source.clustering.get(i);
            if (e.scope != Expression.Scope.SOURCE || !e.column.equals(sourceColumn))
                return false;
            if (reversed(sourceTypes.typeOf(sourceColumn)) != reversed(targetTypes.typeOf(target.clustering.get(i))))
                return false;
        }
        return true;
    }

    /** Whether the range's bounds beyond its prefix sort all one way (a CQL slice; mixed directions are searched instead). */
    private boolean sliceable(Task task)
    {
        KeyRange range = task.range();
        if (range == null)
            return true;
        int prefix = task.keySize() - spec.source.partitionKey.size();
        int last = Math.max(range.start().size(), range.end().size());
        for (int i = prefix + 1; i < last; i++)
            if (reversed(sourceTypes.typeOf(spec.source.clustering.get(i))) != reversed(sourceTypes.typeOf(spec.source.clustering.get(prefix))))
                return false;
        return true;
    }

    private static boolean reversed(AbstractType<?> type)
    {
        return type != null && type.isReversed();
    }

    /** The source's deletion, written to the target: a partition, clustering-prefix or range tombstone. */
    private void deleteAlike(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, long at)
    {
        List<String> where = new ArrayList<>();
        List<ByteBuffer> bound = new ArrayList<>();
        bound.add(bigint(at));
        List<String> sourceKey = spec.source.primaryKey();
        int known = task.keySize();
        for (String column : target.primaryKey())
        {
            Expression e = target.columns.get(column);
            int index = sourceKey.indexOf(e.column);
            if (index < 0 || index >= known)
                continue;
            where.add(Cql.quote(column) + " = ?");
            bound.add(values.get(e.column));
        }
        KeyRange range = task.range();
        if (range != null)
        {
            int prefix = known - spec.source.partitionKey.size();
            // a bound is in the table's clustering order: on a DESC column its start is the greatest value
            boolean descending = prefix < spec.source.clustering.size() && reversed(sourceTypes.typeOf(spec.source.clustering.get(prefix)));
            slice(target, prefix, range.start(), (descending ? "<" : ">") + (range.startInclusive() ? "=" : ""), where, bound);
            slice(target, prefix, range.end(), (descending ? ">" : "<") + (range.endInclusive() ? "=" : ""), where, bound);
        }
        String cql = "DELETE FROM " + Cql.table(target.keyspace, target.table) + " USING TIMESTAMP ? WHERE " + String.join(" AND ", where);
        statements.execute(cql, spec.writeConsistency, bound);
    }

    /** A bound of a range beyond its common prefix: {@code "c" >= ?}, or {@code ("c", "d") >= (?, ?)} for several components. */
    private static void slice(FlowSpec.Target target, int prefix, List<ByteBuffer> bound, String operator, List<String> where, List<ByteBuffer> values)
    {
        if (bound.size() <= prefix)
            return; // unbounded on this side (or equal to the prefix, which the equalities state)
        List<String> columns = new ArrayList<>();
        for (int i = prefix; i < bound.size(); i++)
            columns.add(Cql.quote(target.clustering.get(i)));
        if (columns.size() == 1)
            where.add(columns.get(0) + " " + operator + " ?");
        else
            where.add("(" + String.join(", ", columns) + ") " + operator + " (" + String.join(", ", columns.stream().map(c -> "?").toArray(String[]::new)) + ")");
        values.addAll(bound.subList(prefix, bound.size()));
    }

    /** The derived rows of the deleted source rows, read from the target partition they map to, deleted one by one. */
    private void deleteFound(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow, long at)
    {
        List<ByteBuffer> partition = new ArrayList<>();
        for (String column : target.partitionKey)
        {
            ByteBuffer value = target.columns.get(column).valueIn(values, fanoutRow);
            if (value == null)
                throw new IllegalStateException("flow '" + spec.name + "': " + target + " is partitioned by a column the deletion of "
                                                + task + " does not name; its derived rows cannot be found (redeploy: deploy refuses such a target)");
            partition.add(value);
        }
        List<String> key = target.primaryKey();
        CqlGateway.Prepared select = statements.prepare(Cql.select(target.keyspace, target.table, key, target.partitionKey));
        String delete = Cql.delete(target.keyspace, target.table, key);
        ByteBuffer from = null;
        do
        {
            CqlGateway.Page page = statements.gateway.fetchPage(select, ConsistencyLevel.ALL, partition, spec.pageSize, from);
            for (Map<String, ByteBuffer> row : page.rows)
            {
                if (!derivedFromDeleted(task, target, values, row))
                    continue;
                List<ByteBuffer> bound = new ArrayList<>();
                bound.add(bigint(at));
                for (String column : key)
                    bound.add(row.get(column));
                statements.execute(delete, spec.writeConsistency, bound);
            }
            from = page.next;
        }
        while (from != null);
    }

    /** Whether a target row's source key (read off its key columns) is one the task's deletion covers. */
    private boolean derivedFromDeleted(Task task, FlowSpec.Target target, Map<String, ByteBuffer> values, Map<String, ByteBuffer> row)
    {
        List<String> sourceKey = spec.source.primaryKey();
        List<ByteBuffer> clustering = new ArrayList<>();
        for (String column : spec.source.clustering)
            clustering.add(sourceValueIn(target, column, row));
        for (int i = 0; i < task.keySize(); i++)
        {
            String column = sourceKey.get(i);
            ByteBuffer found = sourceValueIn(target, column, row);
            if (found != null && !found.equals(values.get(column)))
                return false;
        }
        return task.range() == null || order.contains(task.range(), clustering);
    }

    /** The value of a source key column as the target row holds it (the target column mapped from it); null: not held. */
    private static ByteBuffer sourceValueIn(FlowSpec.Target target, String sourceColumn, Map<String, ByteBuffer> row)
    {
        for (String column : target.primaryKey())
        {
            Expression e = target.columns.get(column);
            if (e.scope == Expression.Scope.SOURCE && e.column.equals(sourceColumn))
                return row.get(column);
        }
        return null;
    }
}
