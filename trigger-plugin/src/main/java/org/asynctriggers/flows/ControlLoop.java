package org.asynctriggers.flows;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.asynctriggers.backup.ScanSchedule;
import org.asynctriggers.spec.FlowConfigSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's control thread: waits for the node to serve, reads the flows, then every 2 s polls the flows table,
 * registers MBeans, runs the housekeeping (status rows, dead letter retries) and has the backup maps scanned when due.
 * The node is ready once the flows were read the first time: captured tasks are queued from then on.
 */
public final class ControlLoop
{
    private static final Logger logger = LoggerFactory.getLogger(ControlLoop.class);
    public static final long POLL_MILLIS = 2_000;
    static final long STOP_MILLIS = 30_000;

    private final ThreadFactory threadFactory;
    private final BooleanSupplier nodeReady;
    private final Runnable registerNode;
    private final FlowConfigSource config;
    private final Flows flows;
    /** status rows, dead letter retries, forgetting finished tasks: every cycle after the poll */
    private final Runnable housekeeping;
    /** null when this node scans no backup maps (unit tests without Cassandra) */
    private final ScanSchedule scans;
    private final CountDownLatch ready = new CountDownLatch(1);
    private volatile boolean stopped;
    private volatile ScheduledExecutorService thread;

    public ControlLoop(ThreadFactory threadFactory, BooleanSupplier nodeReady, Runnable registerNode, FlowConfigSource config,
                       Flows flows, Runnable housekeeping, ScanSchedule scans)
    {
        this.threadFactory = threadFactory;
        this.nodeReady = nodeReady;
        this.registerNode = registerNode;
        this.config = config;
        this.flows = flows;
        this.housekeeping = housekeeping;
        this.scans = scans;
    }

    public synchronized void start()
    {
        AtomicInteger n = new AtomicInteger();
        ScheduledExecutorService control = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread t = threadFactory.newThread(runnable);
            t.setName("async-trigger-control-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        thread = control;
        control.execute(this::firstCycle);
        control.scheduleWithFixedDelay(this::cycle, POLL_MILLIS, POLL_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** The first step of the control thread, callable directly by tests. */
    public void firstCycle()
    {
        while (!stopped && !nodeReady.getAsBoolean())
        {
            try
            {
                Thread.sleep(500);
            }
            catch (InterruptedException e)
            {
                return;
            }
        }
        if (stopped)
            return;
        registerNode.run();
        try
        {
            config.poll();
        }
        catch (Throwable e)
        {
            // the next cycle polls again: the node must still become ready, or it would drop every capture
            logger.error("Async trigger: could not read the flows at start", e);
        }
        ready.countDown();
        flows.registerMBeans();
        if (scans != null && !stopped)
            scans.start();
    }

    /** Every later step of the control thread, callable directly by tests. */
    public void cycle()
    {
        if (stopped || !isReady())
            return;
        try
        {
            config.poll();
            flows.registerMBeans();
            housekeeping.run();
            if (scans != null)
                scans.cycle();
        }
        catch (RuntimeException | LinkageError e)
        {
            // an exception would cancel the schedule for good: log it, the next cycle tries again
            logger.error("Unexpected error in the async trigger control thread", e);
        }
    }

    /** A flow version was applied; once the node is ready, its backup map is scanned. */
    public void applied(Flow flow)
    {
        if (scans != null && flow.backupTable != null && isReady())
            scans.flowApplied(flow.spec.name);
    }

    /** Reads the flows table now, then runs {@code then}, on the control thread. */
    void pollNow(Runnable then)
    {
        run(() -> {
            config.poll();
            then.run();
        });
    }

    /** Runs a step on the control thread. @return false when it is not running (not started, or stopping) */
    boolean run(Runnable step)
    {
        ScheduledExecutorService control = thread;
        if (control == null)
            return false;
        try
        {
            control.execute(step);
            return true;
        }
        catch (RuntimeException e)
        {
            return false; // stopping
        }
    }

    public boolean isReady()
    {
        return ready.getCount() == 0;
    }

    /** Waits until the flows were read (tests). */
    public boolean awaitReady(long millis)
    {
        try
        {
            return ready.await(millis, TimeUnit.MILLISECONDS);
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Stops the scans and the control thread, waiting for a running step. */
    public void stop()
    {
        ScheduledExecutorService toStop;
        synchronized (this)
        {
            stopped = true;
            toStop = thread;
        }
        ready.countDown();
        if (scans != null)
            scans.stop();
        if (toStop == null)
            return;
        toStop.shutdownNow();
        try
        {
            if (!toStop.awaitTermination(STOP_MILLIS, TimeUnit.MILLISECONDS))
                logger.warn("Async trigger control thread did not stop");
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }
}
