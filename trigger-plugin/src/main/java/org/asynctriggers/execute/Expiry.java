package org.asynctriggers.execute;

import java.util.Map;

import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/**
 * What remains of a source write's TTL for the rows one target derives from it (docs/design.md, "TTL"): none (the
 * rows do not expire), a number of seconds, or nothing at all (the source expired before the task ran).
 * <p>
 * A target's rows live as long as the shortest-lived source cell they are computed from: the earliest local expiration
 * time among the row liveness the write set (an {@code INSERT ... USING TTL}), the write's expiring cells of the
 * columns the target reads (its values, its fan-out's match), and the TTLs of those columns read back from the source
 * row. The remaining seconds are counted from the expiration time, never from the execution, and rounded down, so a
 * derived row expires with its source or up to a second before it, never after it.
 */
final class Expiry
{
    static final int MAX_TTL = FlowSpec.MAX_TTL_SECONDS;

    static final Expiry NONE = new Expiry(0, false);
    static final Expiry EXPIRED = new Expiry(0, true);

    /** seconds left; 0: no TTL (or expired) */
    final int ttl;
    /** the source cells the rows derive from have expired: writing them would bring back what the source lost */
    final boolean expired;

    private Expiry(int ttl, boolean expired)
    {
        this.ttl = ttl;
        this.expired = expired;
    }

    /**
     * @param expirations the local expiration time (s) of source columns, by column: the task's, and those read back
     * @param nowMillis the executing node's clock
     */
    static Expiry of(Task task, FlowSpec.Target target, Map<String, Long> expirations, long nowMillis)
    {
        long earliest = task.rowExpiresAt() == 0 ? Long.MAX_VALUE : task.rowExpiresAt();
        for (Expression e : target.columns.values())
            if (e.scope == Expression.Scope.SOURCE)
                earliest = Math.min(earliest, expirations.getOrDefault(e.column, Long.MAX_VALUE));
        if (target.fanout != null)
            for (Expression e : target.fanout.match.values())
                earliest = Math.min(earliest, expirations.getOrDefault(e.column, Long.MAX_VALUE));
        return earliest == Long.MAX_VALUE ? NONE : remaining(earliest, nowMillis);
    }

    /** What is left at {@code nowMillis} of a local expiration time in seconds, counted from the next whole second. */
    static Expiry remaining(long expiresAtSeconds, long nowMillis)
    {
        long nowCeil = Math.floorDiv(nowMillis + 999, 1000);
        long left = expiresAtSeconds - nowCeil;
        return left <= 0 ? EXPIRED : new Expiry((int) Math.min(left, MAX_TTL), false);
    }

    /** The TTL of a derived statement with {@code extra} seconds more (a lineage entry's grace), capped at the maximum. */
    int plus(int extra)
    {
        return (int) Math.min((long) ttl + extra, MAX_TTL);
    }

    @Override
    public String toString()
    {
        return expired ? "expired" : ttl == 0 ? "no TTL" : "TTL " + ttl;
    }
}
