package org.asynctriggers.loadgen;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

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
 * One task's share of an open-loop load, sent through the Java driver: the JVM twin of the Python dispatcher in
 * {@code spark_jobs/sending.py}, with the same rules, so that a run's records mean the same whichever sender made them.
 * Each request goes out at its scheduled time and never before; at most {@code inFlight} are outstanding, and a
 * request whose time came while all were taken <em>waited</em> (the system under test was slow, not the generator);
 * one sent more than {@code lateAfterS} after its time is <em>late</em>; with {@code dropAfterS} a request that could
 * go out only later than that is dropped. A write that fails with a transient error (unavailable, timeouts, no node)
 * is written again with backoff (50 ms doubling to 1 s) for up to {@code retryS} seconds after its first failure, as
 * the Python applications do (the report's failure model: write again and rely on idempotent writes); the retries
 * wait on a timer thread, never on the dispatcher or the driver's I/O threads. Times are epoch seconds advancing with
 * the monotonic clock.
 */
final class Dispatcher
{
    static final byte OK = 0, ERROR = 1, DROPPED = 2;
    private static final int MAX_ERROR_CHARS = 300;
    private static final long ANSWER_TIMEOUT_S = 600;
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);   // as the Python sessions' default_timeout

    private final CqlSession session;
    private final int inFlight;
    private final double lateAfterS;
    private final double dropAfterS;   // negative: never dropped
    private final double retryS;
    private final double epoch0 = System.currentTimeMillis() / 1000.0;
    private final long mono0 = System.nanoTime();
    private final ScheduledExecutorService retries = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "loadgen-retries");
        t.setDaemon(true);
        return t;
    });

    /** What the generator saw of one request ({@code sent}, {@code acked}: NaN when it never was). */
    static final class Record
    {
        final int seq;
        final double scheduled;
        final double sent;
        volatile double acked = Double.NaN;
        volatile byte status;
        final boolean late;
        final boolean waited;
        volatile String error = "";

        Record(int seq, double scheduled, double sent, boolean late, boolean waited)
        {
            this.seq = seq;
            this.scheduled = scheduled;
            this.sent = sent;
            this.late = late;
            this.waited = waited;
        }

        byte[] errorBytes()
        {
            return error.getBytes(StandardCharsets.UTF_8);
        }
    }

    Dispatcher(CqlSession session, int inFlight, double lateAfterS, double dropAfterS, double retryS)
    {
        this.session = session;
        this.inFlight = inFlight;
        this.lateAfterS = lateAfterS;
        this.dropAfterS = dropAfterS;
        this.retryS = retryS;
    }

    double now()
    {
        return epoch0 + (System.nanoTime() - mono0) / 1e9;
    }

    /**
     * Sends request {@code i} (its statement from {@code statements}) at {@code dueTimes[i]} and returns their records
     * once every request was answered, or {@link #ANSWER_TIMEOUT_S} after the last was sent (the others: errors).
     */
    Record[] send(double[] dueTimes, IntFunction<Statement<?>> statements) throws InterruptedException
    {
        Record[] records = new Record[dueTimes.length];
        Semaphore slots = new Semaphore(inFlight);
        CountDownLatch answered = new CountDownLatch(dueTimes.length);
        double waitedUntil = Double.NEGATIVE_INFINITY;
        try
        {
            for (int i = 0; i < dueTimes.length; i++)
            {
                double due = dueTimes[i];
                if (!slots.tryAcquire())
                {
                    slots.acquire();
                    waitedUntil = now();
                }
                boolean waited = due < waitedUntil;
                double sent = waitUntil(due);
                Record record = new Record(i, due, sent, sent - due > lateAfterS, waited);
                records[i] = record;
                if (dropAfterS >= 0 && sent - due > dropAfterS)
                {
                    record.status = DROPPED;
                    slots.release();
                    answered.countDown();
                    continue;
                }
                Statement<?> statement;
                try
                {
                    // idempotent (a tweet written again is the same row): the driver may try another node itself
                    statement = statements.apply(i).setTimeout(REQUEST_TIMEOUT).setIdempotent(true);
                }
                catch (RuntimeException e)   // the request failed as it started: a measurement, not a crash
                {
                    finish(record, e, slots, answered);
                    continue;
                }
                execute(statement, record, Double.NaN, 0.05, slots, answered);
            }
            if (!answered.await(ANSWER_TIMEOUT_S, TimeUnit.SECONDS))
            {
                double gone = now();
                for (Record r : records)
                {
                    if (r != null && Double.isNaN(r.acked) && r.status != DROPPED)
                    {
                        r.status = ERROR;
                        r.error = "no answer " + ANSWER_TIMEOUT_S + " s after the last request was sent";
                        r.acked = gone;
                    }
                }
            }
        }
        finally
        {
            retries.shutdownNow();
        }
        return records;
    }

    /** @param deadline when retries stop (NaN: not failed yet) */
    private void execute(Statement<?> statement, Record record, double deadline, double backoff, Semaphore slots,
                         CountDownLatch answered)
    {
        CompletionStage<AsyncResultSet> answer = session.executeAsync(statement);
        answer.whenComplete((rows, error) -> {
            if (error == null || !transient_(error))
            {
                finish(record, error, slots, answered);
                return;
            }
            double stop = Double.isNaN(deadline) ? now() + retryS : deadline;
            if (now() + backoff > stop)
            {
                finish(record, error, slots, answered);
                return;
            }
            try
            {
                retries.schedule(() -> execute(statement, record, stop, Math.min(1.0, backoff * 2), slots, answered),
                                 (long) (backoff * 1000), TimeUnit.MILLISECONDS);
            }
            catch (RuntimeException rejected)   // the run ended: the answer is the error
            {
                finish(record, error, slots, answered);
            }
        });
    }

    private void finish(Record record, Throwable error, Semaphore slots, CountDownLatch answered)
    {
        if (!Double.isNaN(record.acked))
            return;
        if (error != null)
        {
            record.status = ERROR;
            record.error = describe(error);
        }
        record.acked = now();
        slots.release();
        answered.countDown();
    }

    /**
     * The errors the Python applications retry (Unavailable, timeouts, NoHostAvailable), and a connection closed under
     * a request (a node killed: the Python driver retries that on another node by itself).
     */
    private static boolean transient_(Throwable e)
    {
        Throwable cause = unwrapped(e);
        return cause instanceof UnavailableException || cause instanceof WriteTimeoutException
               || cause instanceof WriteFailureException || cause instanceof ReadTimeoutException
               || cause instanceof DriverTimeoutException || cause instanceof AllNodesFailedException
               || cause instanceof ClosedConnectionException || cause instanceof HeartbeatException;
    }

    /** The driver's error itself, not the CompletionException a chained stage wraps it in. */
    private static Throwable unwrapped(Throwable e)
    {
        return e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    static String describe(Throwable e)
    {
        Throwable cause = unwrapped(e);
        String text = (cause.getClass().getSimpleName() + ": " + cause.getMessage()).trim();
        return text.length() <= MAX_ERROR_CHARS ? text : text.substring(0, MAX_ERROR_CHARS - 1) + "…";
    }

    /** Never early: a park may return a little before its time. */
    private double waitUntil(double due)
    {
        double left;
        while ((left = due - now()) > 0)
            LockSupport.parkNanos((long) (left * 1e9));
        return now();
    }
}
