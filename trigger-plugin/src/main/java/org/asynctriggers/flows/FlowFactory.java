package org.asynctriggers.flows;

import java.nio.file.Path;
import java.util.function.Function;

import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.EntryCompletion;
import org.asynctriggers.backup.Handover;
import org.asynctriggers.backup.HeldTasks;
import org.asynctriggers.execute.FlowExecutors;
import org.asynctriggers.metrics.FlowMetrics;
import org.asynctriggers.spec.FlowSpec;

/** Starts a version of a flow on this node: what every {@link Flow} is built from. */
public final class FlowFactory
{
    private final FlowExecutors executors;
    private final FlowWorkers workers;
    private final Function<String, Path> spillDirs;
    /** the backup table a flow completes entries in; null for none */
    private final Function<FlowSpec, BackupTable> backupTables;
    private final HeldTasks held;
    /** null: a task queued here always runs here */
    private final Handover handover;

    public FlowFactory(FlowExecutors executors, FlowWorkers workers, Function<String, Path> spillDirs,
                       Function<FlowSpec, BackupTable> backupTables, HeldTasks held, Handover handover)
    {
        this.executors = executors;
        this.workers = workers;
        this.spillDirs = spillDirs;
        this.backupTables = backupTables;
        this.held = held;
        this.handover = handover;
    }

    /**
     * @param replaced the metrics of the version this one replaces (its lag histogram goes on), or null
     * @param paused start it paused: its workers never take a task before it is resumed
     * @throws RuntimeException when the flow cannot start (its handler cannot be loaded, say)
     */
    Flow start(FlowSpec spec, FlowMetrics replaced, boolean paused)
    {
        Flow flow = new Flow(spec, executors.executorOf(spec)::execute, spillDirs.apply(spec.name), workers,
                             replaced == null ? FlowMetrics.newLagHistogram() : replaced.propagationLag());
        flow.backupTable = backupTables.apply(spec);
        flow.entries(new EntryCompletion(flow.backupTable, held, handover));
        if (paused)
            flow.pause();
        flow.start();
        return flow;
    }

    void shutdown()
    {
        executors.shutdown();
    }
}
