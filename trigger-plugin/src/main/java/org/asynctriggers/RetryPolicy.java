package org.asynctriggers;

/** How often a failed task is attempted again, and how long to wait before each new attempt. */
public final class RetryPolicy
{
    public static final RetryPolicy DEFAULT = new RetryPolicy(3, 100, 2_000);

    public final int maxAttempts;
    private final long initialBackoffMillis;
    private final long maxBackoffMillis;

    public RetryPolicy(int maxAttempts, long initialBackoffMillis, long maxBackoffMillis)
    {
        if (maxAttempts <= 0)
            throw new IllegalArgumentException("maxAttempts must be strictly positive, found: " + maxAttempts);
        this.maxAttempts = maxAttempts;
        this.initialBackoffMillis = initialBackoffMillis;
        this.maxBackoffMillis = maxBackoffMillis;
    }

    /** Exponential: the wait after the {@code attempt}-th failure (1-based). */
    public long backoffMillis(int attempt)
    {
        long backoff = initialBackoffMillis << Math.min(20, attempt - 1);
        return Math.min(maxBackoffMillis, backoff);
    }
}
