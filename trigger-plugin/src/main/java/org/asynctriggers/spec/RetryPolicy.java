package org.asynctriggers.spec;

/**
 * A flow's {@code retry} option (docs/design.md, "Retries and dead letters"): how many executions a task gets, how
 * long to wait before each new one, and how old it may get before it becomes a dead letter instead.
 */
public final class RetryPolicy
{
    public static final RetryPolicy DEFAULT = new RetryPolicy(5, 100, 10_000, 600_000);

    /** A uniform random long in [min, max], injected so tests choose the jitter. */
    @FunctionalInterface
    public interface Jitter
    {
        long between(long min, long max);

        Jitter RANDOM = (min, max) -> min >= max ? min : java.util.concurrent.ThreadLocalRandom.current().nextLong(min, max + 1);
    }

    public final int maxAttempts;
    public final long initialBackoffMillis;
    public final long maxBackoffMillis;
    public final long maxAgeMillis;

    public RetryPolicy(int maxAttempts, long initialBackoffMillis, long maxBackoffMillis, long maxAgeMillis)
    {
        if (maxAttempts <= 0)
            throw new IllegalArgumentException("maxAttempts must be strictly positive, found: " + maxAttempts);
        this.maxAttempts = maxAttempts;
        this.initialBackoffMillis = initialBackoffMillis;
        this.maxBackoffMillis = maxBackoffMillis;
        this.maxAgeMillis = maxAgeMillis;
    }

    /** {@code min(max_backoff_ms, initial_backoff_ms * 2^(attempt-1))}: the cap of the wait after the {@code attempt}-th failure. */
    public long backoffMillis(int attempt)
    {
        int doublings = Math.min(40, Math.max(0, attempt - 1)); // beyond 2^40 ms every sane cap has been reached
        long backoff = initialBackoffMillis > (Long.MAX_VALUE >> doublings) ? Long.MAX_VALUE : initialBackoffMillis << doublings;
        return Math.min(maxBackoffMillis, backoff);
    }

    /** Full jitter as design.md has it: uniform between half the backoff and all of it, so retries of a burst spread. */
    public long jitteredBackoffMillis(int attempt, Jitter jitter)
    {
        long cap = backoffMillis(attempt);
        return jitter.between(cap / 2, cap);
    }
}
