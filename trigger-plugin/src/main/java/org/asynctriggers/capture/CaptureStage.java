package org.asynctriggers.capture;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a replica finishes its captures once their writes are done (docs/design.md, "Capture"): a thread of the node
 * makes the tasks, writes their backup entries and hands the tasks to the node, so that a write acknowledges without
 * waiting for any of it. A capture waits here in this node's memory between its write and this thread, as its task
 * then waits in the node's queue: a crash loses both, and the commit log's replay of the write at boot captures it
 * again. Each capture runs exactly once; what it holds while it waits (its write's operation group, see {@link
 * WriteCapture}) it releases when it has run, whether it ran well or not.
 *
 * <p>It waits {@link #LINGER_NANOS} once a capture arrives, then runs it and all that came meanwhile: on a node short
 * of cores, work that starts the moment a write is applied competes with the write's own acknowledgement.
 *
 * <p>A flush waits for the captures of the writes it saves. One of them must never wait behind a capture that waits
 * for memtable room, which only a flush gives back: the stage passes over a capture that {@link Capture#mayRun may
 * not run} yet (for at most {@link #MAX_DEFER_NANOS}), and a second thread, the rescuer, runs the captures a flush
 * waits for ({@link Capture#flushWaits}, which never wait for room) whenever the first has been inside one capture
 * for {@link #STUCK_NANOS}.
 *
 * <p>Bounded: when {@link #CAPACITY} captures wait, a write runs its own capture (it pays what a capture costs, and
 * the flushes that wait for the captures' operation groups wait for no long queue).
 */
public final class CaptureStage
{
    /** What the stage runs: the rest of one write's capture. */
    public interface Capture extends Runnable
    {
        /**
         * Whether it may run now. False while its memtable write could wait for room and no flush waits for it: the
         * stage runs the others first and tries it again (docs/design.md, "Capture").
         */
        boolean mayRun();

        /** Whether a flush waits for it: then its memtable write never waits for room. */
        boolean flushWaits();
    }

    private static final Logger logger = LoggerFactory.getLogger(CaptureStage.class);
    static final int CAPACITY = 4_096;
    static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    /** how long it waits when every capture it holds may not run yet */
    private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** a capture passed over this long runs all the same (a table's drop waits for it without marking it) */
    static final long MAX_DEFER_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** inside one capture this long, the stage's thread may be waiting for memtable room: the rescuer looks */
    static final long STUCK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long START_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** The node's stage: its threads start with the first capture handed to it. */
    private static volatile CaptureStage node;

    /** One capture handed to the stage: run by whichever thread claims it first. */
    private static final class Slot
    {
        final Capture capture;
        final long handedAt = System.nanoTime();
        final AtomicBoolean claimed = new AtomicBoolean();

        Slot(Capture capture)
        {
            this.capture = capture;
        }
    }

    private final int capacity;
    private final LinkedBlockingQueue<Slot> waiting;
    /** taken off {@link #waiting} by the stage's thread, not run yet; the rescuer looks here too */
    private final ConcurrentLinkedQueue<Slot> passedOver = new ConcurrentLinkedQueue<>();
    private final ThreadFactory threads;
    private final long lingerNanos;
    /** when the stage's thread started the capture it runs; 0: none */
    private volatile long busySince;
    private volatile boolean started;
    private boolean stageStarted, rescuerStarted;
    private long nextStart = System.nanoTime();

    /**
     * @param lingerNanos how long the thread waits, once a capture arrives, before it runs it and all that came
     * meanwhile
     * @param threads makes the stage's two threads (daemon threads of the node)
     */
    CaptureStage(int capacity, long lingerNanos, ThreadFactory threads)
    {
        this.capacity = capacity;
        this.waiting = new LinkedBlockingQueue<>(capacity);
        this.lingerNanos = lingerNanos;
        this.threads = threads;
    }

    public static CaptureStage node()
    {
        CaptureStage stage = node;
        if (stage != null)
            return stage;
        synchronized (CaptureStage.class)
        {
            if (node == null)
                node = new CaptureStage(CAPACITY, LINGER_NANOS, run -> {
                    Thread thread = new Thread(run, "AsyncTriggerCapture");
                    thread.setDaemon(true);
                    return thread;
                });
            return node;
        }
    }

    /** Runs {@code capture} once: on the stage, or here and now when the stage is full or its threads cannot start. */
    public void hand(Capture capture)
    {
        if (!startOnce() || !waiting.offer(new Slot(capture)))
            runLogged(capture);
    }

    /** How many captures wait for the stage. */
    public int waiting()
    {
        return waiting.size() + passedOver.size();
    }

    /** @return whether both threads run (a failure to start them is retried a second later; never throws) */
    private boolean startOnce()
    {
        if (started)
            return true;
        synchronized (this)
        {
            if (started)
                return true;
            long now = System.nanoTime();
            if (now - nextStart < 0)
                return false;
            try
            {
                if (!rescuerStarted)
                {
                    threads.newThread(this::rescueForever).start();
                    rescuerStarted = true;
                }
                if (!stageStarted)
                {
                    threads.newThread(this::runForever).start();
                    stageStarted = true;
                }
                started = true;
            }
            catch (Throwable e)
            {
                nextStart = now + START_RETRY_NANOS;
                logger.error("Async trigger capture: the capture stage's threads could not start; writes run their own captures", e);
            }
            return started;
        }
    }

    private void runForever()
    {
        List<Slot> arrived = new ArrayList<>();
        while (true)
        {
            try
            {
                if (passedOver.isEmpty())
                {
                    passedOver.add(waiting.take());
                    // the writes' acknowledgements go first: on a busy node what follows a write competes with them
                    LockSupport.parkNanos(lingerNanos);
                }
                waiting.drainTo(arrived, Math.max(0, capacity - passedOver.size()));
                passedOver.addAll(arrived);
                arrived.clear();
                if (!runWhatMay())
                    LockSupport.parkNanos(RETRY_NANOS); // none may run before a flush or a moment gives room back
            }
            catch (InterruptedException e)
            {
                logger.warn("The capture stage's thread was interrupted; it goes on");
            }
            catch (Throwable e) // whatever it was, the captures behind it still run, and release what they hold
            {
                logger.error("Async trigger capture: the capture stage's thread caught an error; it goes on", e);
            }
        }
    }

    /** @return whether it ran one, or found every one it held run by the rescuer */
    private boolean runWhatMay()
    {
        boolean progressed = false;
        long now = System.nanoTime();
        for (Iterator<Slot> it = passedOver.iterator(); it.hasNext(); )
        {
            Slot slot = it.next();
            if (!slot.claimed.get() && !mayRun(slot.capture) && now - slot.handedAt < MAX_DEFER_NANOS)
                continue;
            it.remove();
            progressed = true;
            if (!slot.claimed.compareAndSet(false, true))
                continue; // the rescuer ran it
            busySince = Math.max(1, System.nanoTime());
            try
            {
                runLogged(slot.capture);
            }
            finally
            {
                busySince = 0;
            }
        }
        return progressed;
    }

    /** Every {@link #STUCK_NANOS}: when the stage's thread is inside one capture that long, runs those a flush waits for. */
    private void rescueForever()
    {
        while (true)
        {
            try
            {
                LockSupport.parkNanos(STUCK_NANOS);
                long since = busySince;
                if (since == 0 || System.nanoTime() - since < STUCK_NANOS)
                    continue;
                for (Slot slot : waiting)
                    rescue(slot);
                for (Slot slot : passedOver)
                    rescue(slot);
            }
            catch (Throwable e)
            {
                logger.error("Async trigger capture: the capture stage's rescuer caught an error; it goes on", e);
            }
        }
    }

    private static void rescue(Slot slot)
    {
        if (!slot.claimed.get() && flushWaits(slot.capture) && slot.claimed.compareAndSet(false, true))
            runLogged(slot.capture);
    }

    private static boolean mayRun(Capture capture)
    {
        try
        {
            return capture.mayRun();
        }
        catch (Throwable e)
        {
            return true; // it runs, and its own failure is logged there
        }
    }

    private static boolean flushWaits(Capture capture)
    {
        try
        {
            return capture.flushWaits();
        }
        catch (Throwable e)
        {
            return false;
        }
    }

    /** Never throws: every capture handed runs, and releases what it holds, whatever the one before it did. */
    private static void runLogged(Capture capture)
    {
        try
        {
            capture.run();
        }
        catch (Throwable e)
        {
            logger.error("Async trigger capture: a capture failed after its write", e);
        }
    }
}
