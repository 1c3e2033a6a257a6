package org.asynctriggers.execute;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.LongSupplier;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.marshal.ByteType;
import org.apache.cassandra.db.marshal.DecimalType;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.IntegerType;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.ShortType;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.spec.FlowSpec;

import static org.asynctriggers.execute.Statements.bigint;

/**
 * The totals of a flow's aggregates (docs/design.md, "Aggregates"). An aggregate's members are the rows of a lineage
 * target, one per source row, partitioned by the group, so they are exact whatever order their tasks run in; each
 * task that wrote or deleted a group's members then recomputes the group's row from the whole members partition:
 * <ol>
 * <li>it takes the group's next version, a compare-and-set of its counter in {@code async_triggers.lineage_versions}
 *     (as a source row's lineage version is taken);</li>
 * <li>it reads the members partition at ALL (at the lineage read level when a replica is down: members are written at
 *     the lineage write level, a quorum in each data center);</li>
 * <li>it writes the group's row at the version (the count, each sum, least and greatest value), or deletes it when
 *     the group has no member;</li>
 * <li>when a member expires (a source row or value with a TTL), it records a timer, and the group is recomputed then
 *     ({@link AggregateTimers}).</li>
 * </ol>
 * A member's write happens before its task takes the group's version, so the task with the newest version read every
 * member write of the tasks before it, and its row wins every cell: a task run twice, or out of order, counts once.
 */
final class AggregateTotals
{
    /** how much longer than its due time a timer lives, should no node fire it */
    static final int TIMER_GRACE_SECONDS = 10 * 24 * 3600;
    private static final int MAX_VERSION_TAKES = 64;

    private final FlowSpec spec;
    private final Statements statements;
    private final LongSupplier nowMillis;
    private final ConsistencyLevel read;
    private final ConsistencyLevel write;
    private final BiFunction<String, String, ColumnTypes> types;
    private final ByteBuffer flowNameBytes;

    AggregateTotals(FlowSpec spec, Statements statements, LongSupplier nowMillis, BiFunction<String, String, ColumnTypes> types)
    {
        this.spec = spec;
        this.statements = statements;
        this.nowMillis = nowMillis;
        this.types = types;
        this.read = Lineage.readLevel(spec.readConsistency);
        this.write = Lineage.writeLevel(spec.writeConsistency);
        this.flowNameBytes = ByteBuffer.wrap(spec.name.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    void prepare()
    {
        for (FlowSpec.Target target : spec.targets)
        {
            if (target.aggregate == null)
                continue;
            FlowSpec.Aggregate a = target.aggregate;
            statements.prepare(Cql.insert(a.keyspace, a.table, a.columns()));
            statements.prepare(Cql.delete(a.keyspace, a.table, a.primaryKey()));
        }
        statements.prepare(Cql.aggregateTimerInsert());
    }

    /** The version counter of a target's groups: one per group, beside the source rows' in lineage_versions. */
    private LineageVersions versions(FlowSpec.Target members)
    {
        return new LineageVersions(spec.name + "#aggregate" + members.index, statements, read, write);
    }

    /** The group of a members row: its partition key values; null when it has no row (a null or empty key). */
    static List<ByteBuffer> groupOf(FlowSpec.Target members, Map<String, ByteBuffer> values)
    {
        List<ByteBuffer> key = FlowExecutor.keyOf(members, values, null);
        return key == null ? null : key.subList(0, members.partitionKey.size());
    }

    /** Steps 1 to 4 for one group of the target's aggregate. */
    void recompute(FlowSpec.Target members, List<ByteBuffer> group)
    {
        FlowSpec.Aggregate aggregate = members.aggregate;
        ByteBuffer groupKey = KeyCodec.encode(group);
        LineageVersions versions = versions(members);
        Long known = versions.read(groupKey);
        long version = Long.MIN_VALUE;
        for (int take = 0; take < MAX_VERSION_TAKES && version == Long.MIN_VALUE; take++)
        {
            long wanted = Math.max(known == null ? Long.MIN_VALUE : known + 1, nowMillis.getAsLong() * 1000);
            Long current = versions.take(groupKey, known, wanted);
            if (current == null)
                version = wanted;
            else
                known = current == Long.MIN_VALUE ? null : current;
        }
        if (version == Long.MIN_VALUE)
            throw new IllegalStateException("flow '" + spec.name + "': " + MAX_VERSION_TAKES + " other tasks of a group of "
                                            + aggregate.keyspace + '.' + aggregate.table + " took its version first; retried later");
        List<CqlGateway.KeyedRow> rows = readAtAll(members, group);
        Totals totals = Totals.of(aggregate, rows, types.apply(members.keyspace, members.table), types.apply(aggregate.keyspace, aggregate.table));
        List<ByteBuffer> key = new ArrayList<>();
        for (String column : aggregate.primaryKey())
            key.add(group.get(members.partitionKey.indexOf(aggregate.group.get(column))));
        if (totals.count == 0)
        {
            List<ByteBuffer> bound = new ArrayList<>();
            bound.add(bigint(version));
            bound.addAll(key);
            statements.execute(Cql.delete(aggregate.keyspace, aggregate.table, aggregate.primaryKey()), spec.writeConsistency, bound);
        }
        else
        {
            List<ByteBuffer> bound = new ArrayList<>(key);
            for (String column : aggregate.columns().subList(key.size(), aggregate.columns().size()))
                bound.add(totals.values.get(column));
            bound.add(bigint(version));
            statements.execute(Cql.insert(aggregate.keyspace, aggregate.table, aggregate.columns()), spec.writeConsistency, bound);
        }
        if (totals.nextExpiry != 0)
            timer(members, groupKey, totals.nextExpiry, version);
    }

    /** Step 4: the group's recompute due once its next member expires. */
    private void timer(FlowSpec.Target members, ByteBuffer groupKey, long due, long version)
    {
        long now = nowMillis.getAsLong() / 1000;
        int ttl = (int) Math.min(Integer.MAX_VALUE, Math.max(1, due - now) + TIMER_GRACE_SECONDS);
        statements.execute(Cql.aggregateTimerInsert(), write, flowNameBytes, bigint(AggregateTimers.hourOf(due)), bigint(due),
                           ByteBuffer.allocate(4).putInt(0, members.index), groupKey, ByteBuffer.allocate(4).putInt(0, ttl), bigint(version));
    }

    private List<CqlGateway.KeyedRow> readAtAll(FlowSpec.Target members, List<ByteBuffer> group)
    {
        try
        {
            return statements.gateway.readPartition(members.keyspace, members.table, group, ConsistencyLevel.ALL);
        }
        catch (RuntimeException e)
        {
            if (!Lineage.unavailable(e))
                throw e;
            return statements.gateway.readPartition(members.keyspace, members.table, group, read);
        }
    }

    /** What a group's members add up to, and when the next of them expires. */
    static final class Totals
    {
        final long count;
        /** aggregate column to its serialized value, null where no member has a value */
        final Map<String, ByteBuffer> values = new LinkedHashMap<>();
        /** the local expiration time (s) of the member or value that expires first; 0: none */
        final long nextExpiry;

        private Totals(long count, long nextExpiry)
        {
            this.count = count;
            this.nextExpiry = nextExpiry;
        }

        static Totals of(FlowSpec.Aggregate aggregate, List<CqlGateway.KeyedRow> rows, ColumnTypes memberTypes, ColumnTypes aggregateTypes)
        {
            long next = 0;
            for (CqlGateway.KeyedRow row : rows)
            {
                next = earliest(next, row.row.expiresAt);
                for (SourceRow.Cell cell : row.row.cells.values())
                    next = earliest(next, cell.expiresAt);
            }
            Totals totals = new Totals(rows.size(), next);
            if (aggregate.count != null)
                totals.values.put(aggregate.count, encodeInteger(BigInteger.valueOf(rows.size()), typeOf(aggregateTypes, aggregate.count, aggregate)));
            aggregate.sum.forEach((column, member) ->
                totals.values.put(column, sum(rows, member, typeOf(memberTypes, member, aggregate), typeOf(aggregateTypes, column, aggregate))));
            aggregate.min.forEach((column, member) -> totals.values.put(column, extreme(rows, member, typeOf(memberTypes, member, aggregate), -1)));
            aggregate.max.forEach((column, member) -> totals.values.put(column, extreme(rows, member, typeOf(memberTypes, member, aggregate), 1)));
            return totals;
        }

        private static AbstractType<?> typeOf(ColumnTypes types, String column, FlowSpec.Aggregate aggregate)
        {
            AbstractType<?> type = types.typeOf(column);
            if (type == null)
                throw new IllegalStateException("the type of column '" + column + "' of aggregate " + aggregate.keyspace + '.'
                                                + aggregate.table + " is unknown (its table is gone or was altered)");
            return type;
        }

        private static ByteBuffer sum(List<CqlGateway.KeyedRow> rows, String member, AbstractType<?> memberType, AbstractType<?> type)
        {
            BigDecimal total = null;
            for (CqlGateway.KeyedRow row : rows)
            {
                SourceRow.Cell cell = row.row.cells.get(member);
                if (absent(cell, memberType))
                    continue;
                BigDecimal value = number(memberType.compose(cell.value));
                total = total == null ? value : total.add(value);
            }
            if (total == null)
                return null;
            if (type instanceof DecimalType)
                return DecimalType.instance.decompose(total);
            return encodeInteger(total.toBigIntegerExact(), type);
        }

        private static BigDecimal number(Object value)
        {
            if (value instanceof BigDecimal)
                return (BigDecimal) value;
            if (value instanceof BigInteger)
                return new BigDecimal((BigInteger) value);
            if (value instanceof Number)
                return BigDecimal.valueOf(((Number) value).longValue());
            throw new IllegalStateException("cannot sum a value of " + (value == null ? "null" : value.getClass().getSimpleName()));
        }

        private static ByteBuffer encodeInteger(BigInteger value, AbstractType<?> type)
        {
            if (type instanceof IntegerType)
                return IntegerType.instance.decompose(value);
            if (type instanceof DecimalType)
                return DecimalType.instance.decompose(new BigDecimal(value));
            try
            {
                if (type instanceof LongType)
                    return LongType.instance.decompose(value.longValueExact());
                if (type instanceof Int32Type)
                    return Int32Type.instance.decompose(value.intValueExact());
                if (type instanceof ShortType)
                    return ShortType.instance.decompose(value.shortValueExact());
                if (type instanceof ByteType)
                    return ByteType.instance.decompose(value.byteValueExact());
            }
            catch (ArithmeticException e)
            {
                throw new IllegalStateException("the total " + value + " does not fit its column of type " + type.asCQL3Type(), e);
            }
            throw new IllegalStateException("an aggregate column of type " + type.asCQL3Type() + " cannot hold a count or a sum");
        }

        /** The least ({@code sign} -1) or greatest (1) value of a column in the type's own order; null: none. */
        private static ByteBuffer extreme(List<CqlGateway.KeyedRow> rows, String member, AbstractType<?> type, int sign)
        {
            ByteBuffer best = null;
            for (CqlGateway.KeyedRow row : rows)
            {
                SourceRow.Cell cell = row.row.cells.get(member);
                if (absent(cell, type))
                    continue;
                if (best == null || Integer.signum(type.compare(cell.value, best)) == sign)
                    best = cell.value;
            }
            return best;
        }

        /** No value: none, null, or an empty value of a type where it means nothing (a number's; a text's is '') */
        private static boolean absent(SourceRow.Cell cell, AbstractType<?> type)
        {
            return cell == null || cell.value == null || (!cell.value.hasRemaining() && type.isEmptyValueMeaningless());
        }

        private static long earliest(long a, long b)
        {
            return a == 0 ? b : b == 0 ? a : Math.min(a, b);
        }
    }
}
