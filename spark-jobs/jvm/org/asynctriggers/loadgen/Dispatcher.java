package org.asynctriggers.loadgen;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * One task's share of an open-loop load, sent through the Java driver: the JVM twin of the Python dispatcher in
 * {@code spark_jobs/sending.py}, with the same rules, so that a run's records mean the same whichever sender made them.
 * Each request goes out at its scheduled time and never before; at most {@code inFlight} are outstanding, and a
 * request whose time came while all were taken <em>waited</em> (the system under test was slow, not the generator);
 * one sent more than {@code lateAfterS} after its time is <em>late</em>; with {@code dropAfterS} a request that could
 * go out only later than that is dropped. A request is whatever {@code requests} starts: a write, a query, or the
 * synchronous application's tweet and its fan-out ({@link SyncFanout}), each write retried inside it while it fails
 * transiently ({@link Retrying}). Times are epoch seconds advancing with the monotonic clock.
 */
final class Dispatcher
{
    static final byte OK = 0, ERROR = 1, DROPPED = 2;
    private static final int MAX_ERROR_CHARS = 300;
    private static final long ANSWER_TIMEOUT_S = 600;

    private final int inFlight;
    private final double lateAfterS;
    private final double dropAfterS;   // negative: never dropped
    private final double epoch0 = System.currentTimeMillis() / 1000.0;
    private final long mono0 = System.nanoTime();

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

    Dispatcher(int inFlight, double lateAfterS, double dropAfterS)
    {
        this.inFlight = inFlight;
        this.lateAfterS = lateAfterS;
        this.dropAfterS = dropAfterS;
    }

    double now()
    {
        return epoch0 + (System.nanoTime() - mono0) / 1e9;
    }

    /**
     * Starts request {@code i} ({@code requests.apply(i)}) at {@code dueTimes[i]} and returns the records once every
     * request was answered, or {@link #ANSWER_TIMEOUT_S} after the last was sent (the others: errors).
     */
    Record[] send(double[] dueTimes, IntFunction<CompletionStage<?>> requests) throws InterruptedException
    {
        Record[] records = new Record[dueTimes.length];
        Semaphore slots = new Semaphore(inFlight);
        CountDownLatch answered = new CountDownLatch(dueTimes.length);
        double waitedUntil = Double.NEGATIVE_INFINITY;
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
            CompletionStage<?> answer;
            try
            {
                answer = requests.apply(i);
            }
            catch (RuntimeException e)   // the request failed as it started: a measurement, not a crash
            {
                finish(record, e, slots, answered);
                continue;
            }
            answer.whenComplete((value, error) -> finish(record, error, slots, answered));
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
        return records;
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

    static String describe(Throwable e)
    {
        Throwable cause = Retrying.unwrapped(e);
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
