package org.asynctriggers.flows;

import java.nio.file.Path;
import java.util.concurrent.ThreadFactory;
import java.util.function.LongSupplier;

import javax.management.ObjectName;

import com.codahale.metrics.Histogram;

import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.TaskEntries;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.queue.BoundedFlowQueue;
import org.asynctriggers.queue.FlowQueue;
import org.asynctriggers.queue.FullQueuePolicy;
import org.asynctriggers.queue.SpillStore;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.work.Retries;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import org.asynctriggers.work.WorkerPool;

/**
 * One running flow version on this node: its queue, worker pool, retry scheduler, metrics, executor, full-queue
 * policy (its {@code overflow} option) and, unless it discards, its spill and drainer, started and stopped together.
 */
public final class Flow
{
    public final FlowSpec spec;
    public final FlowQueue queue;
    public final FlowMetrics metrics;
    final WorkerPool pool;
    final Retries retries;
    private final RetryScheduler retryScheduler;
    final ObjectName objectName;
    /** what a full queue does: replicas offer the flow's tasks through it, coordinators are admitted by it */
    final FullQueuePolicy policy;
    /** null for the discard policy */
    private final SpillStore spill;
    private final ThreadFactory threadFactory;
    private final TaskProcessor processor;
    /** where its tasks' backup entries go; null when the flow keeps none */
    volatile BackupTable backupTable;
    /** what its workers do with their tasks' backup entries */
    private volatile TaskEntries entries = TaskEntries.NONE;
    /** set by {@link Flows} once the MBean is registered */
    volatile boolean registered;
    /** paused ({@code ctl trigger pause}): nothing of it is queued here and its workers take no task */
    private volatile boolean paused;
    /** wall-clock millis of its last resume here; Long.MIN_VALUE: never paused */
    private volatile long resumedAtMillis = Long.MIN_VALUE;
    /** set by {@link Flows}: no version of its name ran here before it; taken once ({@link FollowSweep}) */
    private final java.util.concurrent.atomic.AtomicBoolean firstVersionHere = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * @param executor what runs its tasks (its {@link org.asynctriggers.execute.FlowExecutor}'s {@code execute})
     * @param spillDir the flow's spill directory (used by the spill policy only)
     */
    Flow(FlowSpec spec, TaskProcessor.Executor executor, Path spillDir, FlowWorkers workers)
    {
        this(spec, executor, spillDir, workers, FlowMetrics.newLagHistogram());
    }

    /** @param propagationLag its lag histogram: a new one, or the one of the version it replaces */
    Flow(FlowSpec spec, TaskProcessor.Executor executor, Path spillDir, FlowWorkers workers, Histogram propagationLag)
    {
        ThreadFactory threadFactory = workers.threadFactory;
        LongSupplier nanoClock = workers.nanoClock;
        this.spec = spec;
        this.threadFactory = threadFactory;
        this.queue = new BoundedFlowQueue(spec.queueCapacity);
        this.metrics = new FlowMetrics(queue, spec.workers, nanoClock, workers.wallClockMillis, propagationLag);
        this.retryScheduler = workers.retrySchedulers.create(spec.name);
        this.retries = new Retries(spec.name, spec.retry, workers.jitter, retryScheduler, queue, metrics, workers.deadLetters, nanoClock,
                                   workers.schemaSettling);
        FlowSpec.Overflow overflow = spec.overflow;
        boolean elastic = overflow.policy == FlowSpec.Overflow.Policy.ELASTIC;
        this.processor = new TaskProcessor(executor, metrics, retries, workers.sleeper, nanoClock, spec.startDelayMillis);
        this.pool = new WorkerPool(spec.name, spec.workers, elastic ? overflow.maxWorkers : spec.workers,
                                   workers.idleWorkerMillis, threadFactory, queue, processor, nanoClock);
        metrics.poolSize(pool::currentSize);
        if (overflow.policy == FlowSpec.Overflow.Policy.DISCARD)
        {
            spill = null;
            policy = new FullQueuePolicy.Discard(nanoClock);
        }
        else
        {
            // spill, block and elastic: what a replica cannot queue goes to disk (it never waits)
            spill = new SpillStore(spec.name, spillDir, nanoClock);
            metrics.spilledPending(spill::pending);
            if (overflow.policy == FlowSpec.Overflow.Policy.BLOCK)
                policy = new FullQueuePolicy.BlockThenFail(spill, overflow.blockTimeoutMillis, nanoClock);
            else if (overflow.policy == FlowSpec.Overflow.Policy.ELASTIC)
                policy = new FullQueuePolicy.Elastic(spill, pool::grow);
            else
                policy = new FullQueuePolicy.Spill(spill);
        }
        this.objectName = FlowMetrics.objectName(spec.source.keyspace, spec.source.table, spec.name);
    }

    /** How its workers treat backup entries; before {@link #start()}. */
    void entries(TaskEntries entries)
    {
        this.entries = entries;
        processor.entries(entries);
        retries.entries(entries);
    }

    /** Writes a task's backup entry on its source row's replicas (a retried dead letter); nothing for a flow without entries. */
    public void keepInBackup(org.asynctriggers.task.Task task, long capturedMillis)
    {
        BackupTable table = backupTable;
        if (table != null)
            table.insertEntry(task, capturedMillis);
    }

    void markFirstVersionHere()
    {
        firstVersionHere.set(true);
    }

    /** Whether no version of its name ran here before it, once: false on every later call. */
    boolean takeFirstVersionHere()
    {
        return firstVersionHere.getAndSet(false);
    }

    TaskEntries entries()
    {
        return entries;
    }

    /**
     * Its workers take no more tasks (one running finishes) and {@link Intake} queues none of its new ones: their backup
     * entries keep them. What is queued or spilled here already stays, and runs after {@link #resume}.
     */
    void pause()
    {
        paused = true;
        pool.pause();
        metrics.paused(true);
    }

    /** Its workers go on; the caller has its backup map scanned, which queues the entries that waited. */
    void resume(long nowMillis)
    {
        resumedAtMillis = nowMillis;
        paused = false;
        pool.resume();
        metrics.paused(false);
    }

    public boolean isPaused()
    {
        return paused;
    }

    /** Wall-clock millis of its last resume on this node; Long.MIN_VALUE when it was never paused here. */
    public long resumedAtMillis()
    {
        return resumedAtMillis;
    }

    void start()
    {
        retryScheduler.start();
        pool.start();
        if (spill != null)
            spill.start(threadFactory, queue);
    }

    /**
     * Workers first: while they drain, their failures still schedule retries, which then become dead letters. The
     * spill's drainer stops before them; what is still spilled stays on disk for the next version or run.
     */
    int stop(long drainMillis)
    {
        if (spill != null)
            spill.stopDrainer();
        int left = pool.stop(drainMillis);
        retries.stop();
        if (spill != null)
            spill.close();
        return left;
    }
}
