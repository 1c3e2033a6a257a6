package org.asynctriggers.flows;

import java.nio.file.Path;
import java.util.concurrent.ThreadFactory;
import java.util.function.Function;
import java.util.function.LongSupplier;

import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.EntryCompletion;
import org.asynctriggers.backup.HeldTasks;
import org.asynctriggers.execute.FlowExecutors;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;

/** Starts a version of a flow on this node: what every {@link Flow} is built from. */
public final class FlowFactory
{
    private final FlowExecutors executors;
    private final Workers workers;
    private final Function<String, Path> spillDirs;
    /** the backup table a flow completes entries in; null for none */
    private final Function<FlowSpec, BackupTable> backupTables;
    private final HeldTasks held;

    /** How the workers of every flow run: threads, clocks, retries, dead letters. */
    public static final class Workers
    {
        final ThreadFactory threadFactory;
        final LongSupplier nanoClock;
        final RetryScheduler.Factory retrySchedulers;
        final RetryPolicy.Jitter jitter;
        final TaskProcessor.Sleeper sleeper;
        final DeadLetters deadLetters;

        public Workers(ThreadFactory threadFactory, LongSupplier nanoClock, RetryScheduler.Factory retrySchedulers,
                       RetryPolicy.Jitter jitter, TaskProcessor.Sleeper sleeper, DeadLetters deadLetters)
        {
            this.threadFactory = threadFactory;
            this.nanoClock = nanoClock;
            this.retrySchedulers = retrySchedulers;
            this.jitter = jitter;
            this.sleeper = sleeper;
            this.deadLetters = deadLetters;
        }
    }

    public FlowFactory(FlowExecutors executors, Workers workers, Function<String, Path> spillDirs,
                       Function<FlowSpec, BackupTable> backupTables, HeldTasks held)
    {
        this.executors = executors;
        this.workers = workers;
        this.spillDirs = spillDirs;
        this.backupTables = backupTables;
        this.held = held;
    }

    /** @throws RuntimeException when the flow cannot start (its handler cannot be loaded, say) */
    Flow start(FlowSpec spec)
    {
        Flow flow = new Flow(spec, executors.executorOf(spec), spillDirs.apply(spec.name), workers.retrySchedulers,
                             workers.jitter, workers.deadLetters, workers.sleeper, workers.threadFactory, workers.nanoClock);
        flow.backupTable = backupTables.apply(spec);
        flow.entries(new EntryCompletion(flow.backupTable, held));
        flow.start();
        return flow;
    }

    void shutdown()
    {
        executors.shutdown();
    }
}
