package org.asynctriggers.loadgen;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import com.datastax.oss.driver.api.core.AllNodesFailedException;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.connection.ClosedConnectionException;
import com.datastax.oss.driver.api.core.connection.HeartbeatException;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.servererrors.ReadTimeoutException;
import com.datastax.oss.driver.api.core.servererrors.UnavailableException;
import com.datastax.oss.driver.api.core.servererrors.WriteFailureException;
import com.datastax.oss.driver.api.core.servererrors.WriteTimeoutException;

/**
 * A request that failed with a transient error (unavailable, timeouts, no node, a connection closed under it) is made
 * again with backoff (50 ms doubling to 1 s) for up to {@code retryS} seconds after its first failure, as the Python
 * applications do (the report's failure model: write again and rely on idempotent writes). The retries wait on a
 * timer thread, never on the dispatcher or the driver's I/O threads.
 */
final class Retrying implements AutoCloseable
{
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);   // as the Python sessions' default_timeout

    private final CqlSession session;
    private final double retryS;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "loadgen-retries");
        t.setDaemon(true);
        return t;
    });

    Retrying(CqlSession session, double retryS)
    {
        this.session = session;
        this.retryS = retryS;
    }

    /**
     * The statement executed, again while it fails transiently; with the Python sessions' request timeout, and
     * idempotent (a tweet or a timeline row written again is the same row: the driver may try another node itself).
     */
    CompletableFuture<AsyncResultSet> execute(Statement<?> statement)
    {
        Statement<?> request = statement.setTimeout(REQUEST_TIMEOUT).setIdempotent(true);
        return call(() -> session.executeAsync(request));
    }

    /** {@code attempt} made, again while its answer is a transient error; the last answer. */
    <T> CompletableFuture<T> call(Supplier<CompletionStage<T>> attempt)
    {
        CompletableFuture<T> answer = new CompletableFuture<>();
        attempt(attempt, answer, Double.NaN, 0.05);
        return answer;
    }

    /** @param deadline when retries stop (NaN: not failed yet) */
    private <T> void attempt(Supplier<CompletionStage<T>> attempt, CompletableFuture<T> answer, double deadline, double backoff)
    {
        CompletionStage<T> stage;
        try
        {
            stage = attempt.get();
        }
        catch (RuntimeException e)   // failed as it started
        {
            answer.completeExceptionally(e);
            return;
        }
        stage.whenComplete((value, error) -> {
            if (error == null)
            {
                answer.complete(value);
                return;
            }
            double now = System.nanoTime() / 1e9;
            double stop = Double.isNaN(deadline) ? now + retryS : deadline;
            if (!isTransient(error) || now + backoff > stop)
            {
                answer.completeExceptionally(unwrapped(error));
                return;
            }
            try
            {
                timer.schedule(() -> attempt(attempt, answer, stop, Math.min(1.0, backoff * 2)),
                               (long) (backoff * 1000), TimeUnit.MILLISECONDS);
            }
            catch (RuntimeException rejected)   // the run ended: the answer is the error
            {
                answer.completeExceptionally(unwrapped(error));
            }
        });
    }

    @Override
    public void close()
    {
        timer.shutdownNow();
    }

    /**
     * The errors the Python applications retry (Unavailable, timeouts, NoHostAvailable), and a connection closed under
     * a request (a node killed: the Python driver retries that on another node by itself).
     */
    static boolean isTransient(Throwable e)
    {
        Throwable cause = unwrapped(e);
        return cause instanceof UnavailableException || cause instanceof WriteTimeoutException
               || cause instanceof WriteFailureException || cause instanceof ReadTimeoutException
               || cause instanceof DriverTimeoutException || cause instanceof AllNodesFailedException
               || cause instanceof ClosedConnectionException || cause instanceof HeartbeatException;
    }

    /** The driver's error itself, not the CompletionException a chained stage wraps it in. */
    static Throwable unwrapped(Throwable e)
    {
        return e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
    }
}
