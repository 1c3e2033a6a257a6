package org.asynctriggers.work;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import org.apache.cassandra.exceptions.CasWriteUnknownResultException;
import org.apache.cassandra.exceptions.OverloadedException;
import org.apache.cassandra.exceptions.RequestFailureException;
import org.apache.cassandra.exceptions.RequestFailureReason;
import org.apache.cassandra.exceptions.RequestTimeoutException;
import org.apache.cassandra.exceptions.UnavailableException;
import org.asynctriggers.backup.TaskEntries;
import org.asynctriggers.metrics.FlowCounters;
import org.asynctriggers.queue.FlowQueue;
import org.asynctriggers.spec.RetryPolicy;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What becomes of a failed execution of one flow version's task (docs/design.md, "Retries and dead letters"): queued
 * again after its backoff by the {@link RetryScheduler}, or, out of attempts or too old, a dead letter. A task is
 * never dropped: a retry that finds the queue full waits again. One the flow version can no longer take (stopped,
 * replaced), like the rest of a chunked fan-out queued again while the version drains, goes back to its backup entry
 * when the flow keeps them: the entry holds it and its recorded resume position, and the next scan (the new version's
 * right after it is applied, or the node's after a restart) runs it; it neither failed nor is it done. Without backup
 * entries it becomes a dead letter that {@code ctl trigger dlq retry} can queue into the running version.
 */
public final class Retries
{
    private static final Logger logger = LoggerFactory.getLogger(Retries.class);
    /** lower bound of the wait before offering again to a full queue, so a 0 ms backoff does not spin */
    static final long FULL_QUEUE_WAIT_MILLIS = 10;
    /** the wait after a failure of the cluster (see {@link #failed}) */
    static final long UNAVAILABLE_WAIT_MILLIS = 1_000;

    private final String flow;
    private final RetryPolicy policy;
    private final RetryPolicy.Jitter jitter;
    private final RetryScheduler scheduler;
    private final FlowQueue queue;
    private final FlowCounters metrics;
    private final DeadLetters deadLetters;
    private final LongSupplier nanoClock;
    /** whether the cluster's schema is settling ({@link SchemaWatch}) */
    private final BooleanSupplier schemaSettling;
    private volatile TaskEntries entries = TaskEntries.NONE;
    /** scheduled and not yet queued: what a stop must leave to the backup entries (or, without them, dead-letter) */
    private final Set<Pending> pending = ConcurrentHashMap.newKeySet();

    public Retries(String flow, RetryPolicy policy, RetryPolicy.Jitter jitter, RetryScheduler scheduler, FlowQueue queue,
            FlowCounters metrics, DeadLetters deadLetters, LongSupplier nanoClock)
    {
        this(flow, policy, jitter, scheduler, queue, metrics, deadLetters, nanoClock, () -> false);
    }

    public Retries(String flow, RetryPolicy policy, RetryPolicy.Jitter jitter, RetryScheduler scheduler, FlowQueue queue,
            FlowCounters metrics, DeadLetters deadLetters, LongSupplier nanoClock, BooleanSupplier schemaSettling)
    {
        this.schemaSettling = schemaSettling;
        this.flow = flow;
        this.policy = policy;
        this.jitter = jitter;
        this.scheduler = scheduler;
        this.queue = queue;
        this.metrics = metrics;
        this.deadLetters = deadLetters;
        this.nanoClock = nanoClock;
    }

    /** A retry waiting for its time, with the failure a dead letter would record. */
    private final class Pending implements Runnable
    {
        final Task task;
        final Throwable cause;

        Pending(Task task, Throwable cause)
        {
            this.task = task;
            this.cause = cause;
        }

        @Override
        public void run()
        {
            if (!pending.remove(this))
                return; // stop() took it
            if (queue.offer(task))
            {
                metrics.retryQueued();
                return;
            }
            pending.add(this);
            if (queue.isClosed())
                stopped(this);
            else // full: the task keeps its place among the retries rather than being dropped
                schedule(this, Math.max(FULL_QUEUE_WAIT_MILLIS, policy.initialBackoffMillis));
        }
    }

    public void entries(TaskEntries entries)
    {
        this.entries = entries;
    }

    /**
     * Queues the rest of a chunked fan-out again without counting a failure, at the tail of the queue behind the
     * flow's other tasks (through the retry scheduler, so a full queue makes it wait like a retry).
     */
    void requeueRest(Task rest)
    {
        Pending again = new Pending(rest, null);
        pending.add(again);
        schedule(again, 0);
    }

    /**
     * Called by a worker after a failed execution; never blocks, never throws. A failure of the cluster rather than
     * of the task (replicas unavailable, a timeout, an overloaded node: a node restarting, the whole cluster
     * restarting; a replica that failed a read or write while the schema settles) costs no attempt: the task waits
     * {@link #UNAVAILABLE_WAIT_MILLIS} and tries again, until {@code max_age_ms}, so an outage or a schema change does
     * not turn healthy tasks into dead letters.
     */
    void failed(Task task, Throwable cause)
    {
        boolean clusterFailure = isClusterFailure(cause, schemaSettling);
        int attempts = clusterFailure ? task.attempts() : task.attempts() + 1;
        if (attempts >= policy.maxAttempts)
        {
            deadLetter(task, attempts, cause, "out of attempts");
            return;
        }
        long ageMillis = TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - task.createdNanos());
        if (ageMillis >= policy.maxAgeMillis)
        {
            deadLetter(task, Math.max(1, attempts), cause, "older than 'retry.max_age_ms' (" + policy.maxAgeMillis + " ms)");
            return;
        }
        if (clusterFailure)
        {
            logger.debug("Flow '{}': {} waits {} ms for the cluster: {}", flow, task, UNAVAILABLE_WAIT_MILLIS, String.valueOf(cause));
            metrics.taskRetrying();
            Pending retry = new Pending(task, cause);
            pending.add(retry);
            schedule(retry, UNAVAILABLE_WAIT_MILLIS);
            return;
        }
        long backoff = policy.jitteredBackoffMillis(attempts, jitter);
        logger.warn("Flow '{}': attempt {} of {} failed on {}, retrying in {} ms: {}", flow, attempts, policy.maxAttempts,
                    task, backoff, String.valueOf(cause));
        metrics.taskRetrying();
        Pending retry = new Pending(task.failedOnce(), cause);
        pending.add(retry);
        schedule(retry, backoff);
    }

    private void schedule(Pending retry, long delayMillis)
    {
        try
        {
            scheduler.schedule(retry, delayMillis);
        }
        catch (RejectedExecutionException e)
        {
            stopped(retry);
        }
    }

    /** A retry its stopped flow version will not run: back to its backup entry if it has one, else a dead letter. */
    private void stopped(Pending retry)
    {
        TaskEntries held = entries;
        if (!held.holdsTasks())
        {
            giveUp(retry, "flow stopped before the retry");
            return;
        }
        if (!pending.remove(retry))
            return;
        metrics.retryReleased();
        held.released(retry.task);
        logger.debug("Flow '{}': {} left to its backup entry as its version stopped; the next scan runs it", flow, retry.task);
    }

    /** A retry that was counted as retrying and will not run: it is finished now, as a failure. */
    private void giveUp(Pending retry, String why)
    {
        if (!pending.remove(retry))
            return;
        metrics.retryAbandoned();
        if (deadLetters.write(retry.task, retry.task.attempts(), retry.cause, why))
        {
            metrics.deadLettered();
            complete(retry.task);
        }
        else
            entries.released(retry.task);
    }

    private void deadLetter(Task task, int attempts, Throwable cause, String why)
    {
        metrics.taskFinished(false);
        if (deadLetters.write(task, attempts, cause, why))
        {
            metrics.deadLettered();
            complete(task);
        }
        else
            entries.released(task); // its entry still holds it: a scan runs it again rather than lose it
    }

    /** A dead letter holds the task now: its backup entry can go. */
    private void complete(Task task)
    {
        try
        {
            entries.completed(task);
        }
        catch (RuntimeException e)
        {
            logger.warn("Flow '{}': could not remove the backup entry of dead letter {}: {}", flow, task, e.toString());
        }
    }

    static boolean isClusterFailure(Throwable cause, BooleanSupplier schemaSettling)
    {
        for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause())
        {
            if (t instanceof UnavailableException || t instanceof RequestTimeoutException || t instanceof OverloadedException
                || t instanceof CasWriteUnknownResultException) // a lineage version's Paxos round cut short by a node down
                return true;
            if (t instanceof RequestFailureException && isSchemaFailure((RequestFailureException) t, schemaSettling))
                return true;
        }
        return false;
    }

    /**
     * A replica's failure that a schema change explains: one that says its schema is not the coordinator's, or one
     * without a reason ("UNKNOWN": a replica's read or write threw, as one does between a column's change and its
     * arrival everywhere) while the schema settles. Any other reason (too many tombstones, a read too large) is the
     * task's and spends an attempt.
     */
    private static boolean isSchemaFailure(RequestFailureException failure, BooleanSupplier schemaSettling)
    {
        if (failure.failureReasonByEndpoint.containsValue(RequestFailureReason.INCOMPATIBLE_SCHEMA))
            return true;
        return failure.failureReasonByEndpoint.containsValue(RequestFailureReason.UNKNOWN) && schemaSettling.getAsBoolean();
    }

    int pending()
    {
        return pending.size();
    }

    /**
     * After the workers stopped: stops the scheduler; the retries it will not run go back to their backup entries,
     * or, for a flow without them, become dead letters.
     */
    public void stop()
    {
        scheduler.stop();
        Pending[] left = pending.toArray(new Pending[0]);
        for (Pending retry : left)
            stopped(retry);
        if (left.length > 0 && entries.holdsTasks())
            logger.info("Flow '{}': {} task(s) waiting for a retry or the rest of their fan-out left to their backup entries as this version stopped",
                        flow, left.length);
    }
}
