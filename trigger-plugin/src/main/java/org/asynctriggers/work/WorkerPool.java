package org.asynctriggers.work;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import org.asynctriggers.queue.FlowQueue;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker threads of one flow, named {@code async-trigger-<flow>-worker-<n>}, daemon. {@link #start()} and
 * {@link #stop(long)} are paired: stop closes the queue, lets the workers drain it up to a deadline, interrupts
 * what is left and joins every thread, so nothing survives a reload.
 * <p>
 * Elastic (maximum above the size): {@link #grow()} adds one worker up to the maximum; a worker that found no task
 * for the idle timeout exits while the pool is above its size. A new worker takes the lowest free number.
 * <p>
 * Paused ({@link #pause()}, the flow paused by {@code ctl trigger pause}): the workers take no task from the queue
 * (a task running finishes) until {@link #resume()}; a paused pool stops at once, leaving its queue to the tasks'
 * backup entries.
 */
public final class WorkerPool
{
    private static final Logger logger = LoggerFactory.getLogger(WorkerPool.class);
    private static final long POLL_MILLIS = 100;
    public static final long DEFAULT_IDLE_MILLIS = 5_000;

    private final String flow;
    private final int size;
    private final int maxSize;
    private final long idleNanos;
    /** what decides that an extra worker has idled long enough (System::nanoTime; a test's own clock) */
    private final LongSupplier nanoClock;
    /** the numbers of the live workers (guarded by this) */
    private final java.util.BitSet numbers = new java.util.BitSet();
    private final ThreadFactory threadFactory;
    private final FlowQueue queue;
    private final Consumer<Task> processor;
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stopping;
    private volatile boolean paused;
    private boolean started;

    public WorkerPool(String flow, int size, ThreadFactory threadFactory, FlowQueue queue, Consumer<Task> processor)
    {
        this(flow, size, size, DEFAULT_IDLE_MILLIS, threadFactory, queue, processor);
    }

    public WorkerPool(String flow, int size, int maxSize, long idleMillis, ThreadFactory threadFactory, FlowQueue queue,
                      Consumer<Task> processor)
    {
        this(flow, size, maxSize, idleMillis, threadFactory, queue, processor, System::nanoTime);
    }

    public WorkerPool(String flow, int size, int maxSize, long idleMillis, ThreadFactory threadFactory, FlowQueue queue,
                      Consumer<Task> processor, LongSupplier nanoClock)
    {
        if (size <= 0)
            throw new IllegalArgumentException("pool size must be strictly positive, found: " + size);
        if (maxSize < size)
            throw new IllegalArgumentException("maximum pool size must be at least " + size + ", found: " + maxSize);
        this.flow = flow;
        this.size = size;
        this.maxSize = maxSize;
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(idleMillis);
        this.threadFactory = threadFactory;
        this.queue = queue;
        this.processor = processor;
        this.nanoClock = nanoClock;
    }

    public static String threadName(String flow, int n)
    {
        return "async-trigger-" + flow + "-worker-" + n;
    }

    public synchronized void start()
    {
        if (started)
            throw new IllegalStateException("worker pool of flow '" + flow + "' already started");
        started = true;
        List<Thread> created = new ArrayList<>();
        for (int n = 1; n <= size; n++)
            created.add(newWorker());
        created.forEach(Thread::start);
    }

    /** guarded by this */
    private Thread newWorker()
    {
        int n = numbers.nextClearBit(1);
        numbers.set(n);
        Thread[] self = new Thread[1];
        Thread thread = threadFactory.newThread(() -> runWorker(self[0], n));
        self[0] = thread;
        thread.setName(threadName(flow, n));
        thread.setDaemon(true);
        threads.add(thread);
        return thread;
    }

    /**
     * Adds one worker, if the pool is running and below its maximum.
     * @return whether it grew
     */
    public boolean grow()
    {
        Thread thread;
        synchronized (this)
        {
            if (!started || stopping || threads.size() >= maxSize)
                return false;
            thread = newWorker();
        }
        thread.start();
        logger.info("Flow '{}': queue full, worker pool grown to {} (max {})", flow, currentSize(), maxSize);
        return true;
    }

    public int size()
    {
        return size;
    }

    /** The live workers now: the size, more while an elastic pool has grown. */
    public synchronized int currentSize()
    {
        return threads.size();
    }

    public int maxSize()
    {
        return maxSize;
    }

    /** Workers take no more tasks (a running one finishes); before {@link #start()} too. */
    public void pause()
    {
        paused = true;
    }

    public void resume()
    {
        synchronized (this)
        {
            paused = false;
            notifyAll();
        }
    }

    public boolean isPaused()
    {
        return paused;
    }

    /** Waits while paused. @return false when the worker must exit (stopping while paused, or interrupted) */
    private boolean awaitRunning()
    {
        synchronized (this)
        {
            while (paused)
            {
                if (stopping)
                    return false;
                try
                {
                    wait(POLL_MILLIS);
                }
                catch (InterruptedException e)
                {
                    return false;
                }
            }
        }
        return true;
    }

    /** An idle worker leaves if the pool is above its size; false when it must stay. */
    private synchronized boolean retire(Thread thread, int n)
    {
        if (stopping || threads.size() <= size || !threads.remove(thread))
            return false;
        numbers.clear(n);
        return true;
    }

    private void runWorker(Thread self, int n)
    {
        long idleSince = nanoClock.getAsLong();
        while (true)
        {
            if (paused && !awaitRunning())
                return;
            Task task;
            try
            {
                task = queue.poll(POLL_MILLIS, TimeUnit.MILLISECONDS);
            }
            catch (InterruptedException e)
            {
                return;
            }
            if (task == null)
            {
                // drained: only a closed queue can be considered finished
                if (stopping && queue.size() == 0)
                    return;
                if (maxSize > size && nanoClock.getAsLong() - idleSince >= idleNanos && retire(self, n))
                {
                    logger.info("Flow '{}': idle worker {} left the pool", flow, threadName(flow, n));
                    return;
                }
                continue;
            }
            try
            {
                processor.accept(task);
            }
            catch (Throwable t)
            {
                // the processor counts and logs its failures; this only guards the thread itself
                logger.error("Unexpected error in worker of flow '{}' on {}", flow, task, t);
            }
            idleSince = nanoClock.getAsLong();
        }
    }

    /**
     * Stops accepting, waits up to {@code drainMillis} for the queued tasks to run, then interrupts and joins.
     * @return the number of tasks left in the queue (dropped)
     */
    public int stop(long drainMillis)
    {
        List<Thread> toJoin;
        synchronized (this)
        {
            queue.close();
            stopping = true;
            notifyAll();
            toJoin = new ArrayList<>(threads);
            threads.clear();
            numbers.clear();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(drainMillis);
        for (Thread thread : toJoin)
            joinUntil(thread, deadline);
        for (Thread thread : toJoin)
            if (thread.isAlive())
                thread.interrupt();
        for (Thread thread : toJoin)
            joinUntil(thread, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        for (Thread thread : toJoin)
            if (thread.isAlive())
                logger.warn("Worker {} of flow '{}' did not stop within 5 s after interruption", thread.getName(), flow);
        int left = queue.size();
        if (left > 0)
            logger.warn("Flow '{}' stopped with {} queued tasks not executed", flow, left);
        return left;
    }

    private static void joinUntil(Thread thread, long deadlineNanos)
    {
        long remaining = deadlineNanos - System.nanoTime();
        if (remaining <= 0 || thread == Thread.currentThread())
            return;
        try
        {
            thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining)));
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }
}
