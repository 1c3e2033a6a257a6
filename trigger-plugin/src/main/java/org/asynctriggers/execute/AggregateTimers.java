package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.KeyCodec;
import org.asynctriggers.spec.FlowSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.asynctriggers.execute.Statements.bigint;
import static org.asynctriggers.execute.Statements.longOf;

/**
 * Fires the recomputes an aggregate's members owe it when they expire (docs/design.md, "Aggregates"): Cassandra tells
 * no one when a cell's TTL runs out, so each recompute that reads a member with a TTL records a timer in
 * {@code async_triggers.aggregate_timers}, one partition per flow and hour, and every control cycle the node that
 * executes that partition's rows (its first live replica) recomputes the groups whose timers are due, then deletes
 * them. A timer that fails stays and is tried again the next cycle; one fired twice recomputes the group twice, which
 * changes nothing.
 */
public final class AggregateTimers
{
    private static final Logger logger = LoggerFactory.getLogger(AggregateTimers.class);
    /** hours back a node looks for timers it has not fired: as long as a timer lives past its due time */
    static final int WINDOW_HOURS = AggregateTotals.TIMER_GRACE_SECONDS / 3600;
    /** how long a cycle fires timers at most, so that the control thread goes on polling (a backfill's are many) */
    static final long CYCLE_BUDGET_NANOS = 1_000_000_000L;

    private final Statements statements;
    private final Supplier<Collection<FlowSpec>> specs;
    private final BiPredicate<String, Long> fires;
    private final LongSupplier nowMillis;
    private final BiFunction<String, String, ColumnTypes> types;
    /** per flow version: its totals */
    private final Map<String, AggregateTotals> totals = new HashMap<>();
    /** per flow: past hours read empty (no timer is written for a time already past) */
    private final Map<String, Set<Long>> emptyHours = new HashMap<>();
    /** per flow and hour: the due time of the last timer fired, where the next read starts */
    private final Map<String, Long> firedUpTo = new HashMap<>();

    /**
     * @param specs the flows this node runs (not paused)
     * @param fires whether this node fires the timers of a flow's hour: it executes their partition
     */
    public AggregateTimers(CqlGateway gateway, Supplier<Collection<FlowSpec>> specs, BiPredicate<String, Long> fires,
                           LongSupplier nowMillis, BiFunction<String, String, ColumnTypes> types)
    {
        this.statements = new Statements(gateway);
        this.specs = specs;
        this.fires = fires;
        this.nowMillis = nowMillis;
        this.types = types;
    }

    static long hourOf(long seconds)
    {
        return Math.floorDiv(seconds, 3600);
    }

    /** One round: the due timers of every flow that keeps an aggregate; returns how many groups were recomputed. */
    public synchronized int fire()
    {
        int fired = 0;
        long until = System.nanoTime() + CYCLE_BUDGET_NANOS;
        for (FlowSpec spec : specs.get())
        {
            if (spec.targets.stream().noneMatch(t -> t.aggregate != null))
                continue;
            try
            {
                fired += fire(spec, until);
            }
            catch (RuntimeException e)
            {
                logger.warn("Flow '{}': aggregate timers not fired this round ({}); tried again the next", spec.name, e.toString());
            }
            if (System.nanoTime() - until > 0)
                break;
        }
        return fired;
    }

    private int fire(FlowSpec spec, long until)
    {
        AggregateTotals flowTotals = totals.computeIfAbsent(spec.name + '@' + spec.version,
                                                            k -> new AggregateTotals(spec, statements, nowMillis, types));
        ConsistencyLevel read = Lineage.readLevel(spec.readConsistency);
        ConsistencyLevel write = Lineage.writeLevel(spec.writeConsistency);
        ByteBuffer flow = ByteBuffer.wrap(spec.name.getBytes(StandardCharsets.UTF_8));
        long now = nowMillis.getAsLong() / 1000;
        long hour = hourOf(now);
        Set<Long> empty = emptyHours.computeIfAbsent(spec.name, k -> new TreeSet<>());
        empty.removeIf(h -> h < hour - WINDOW_HOURS);
        firedUpTo.keySet().removeIf(k -> k.startsWith(spec.name + '/') && Long.parseLong(k.substring(spec.name.length() + 1)) < hour - WINDOW_HOURS);
        int fired = 0;
        for (long h = hour - WINDOW_HOURS; h <= hour && System.nanoTime() - until < 0; h++)
        {
            if (empty.contains(h) || !fires.test(spec.name, h))
                continue;
            String position = spec.name + '/' + h;
            long from = firedUpTo.getOrDefault(position, Long.MIN_VALUE);
            List<Map<String, ByteBuffer>> due = statements.execute(Cql.aggregateTimersDue(), read, List.of(flow, bigint(h), bigint(from), bigint(now)));
            if (due.isEmpty() && h < hour - 1)
                empty.add(h);
            for (Map<String, ByteBuffer> timer : due)
            {
                if (System.nanoTime() - until > 0)
                    break;
                int index = timer.get("target").getInt(timer.get("target").position());
                FlowSpec.Target members = index < spec.targets.size() ? spec.targets.get(index) : null;
                if (members != null && members.aggregate != null)
                    flowTotals.recompute(members, new ArrayList<>(KeyCodec.decode(timer.get("group_key"))));
                long at = longOf(timer.get("due"));
                statements.execute(Cql.aggregateTimerDelete(), write, bigint(nowMillis.getAsLong() * 1000), flow, bigint(h),
                                   bigint(at), timer.get("target"), timer.get("group_key"));
                firedUpTo.put(position, Math.max(from, at)); // the same second again: a timer of it may come later
                fired++;
            }
        }
        totals.keySet().removeIf(k -> k.startsWith(spec.name + '@') && !k.equals(spec.name + '@' + spec.version));
        return fired;
    }
}
