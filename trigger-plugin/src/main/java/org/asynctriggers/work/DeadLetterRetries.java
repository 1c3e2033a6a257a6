package org.asynctriggers.work;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.InternalConsistency;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves {@code ctl trigger dlq retry}: polls this node's partition of {@code async_triggers.dead_letter_retries}
 * on the control thread, writes each requested dead letter's task a backup entry of its own (under a new id: the
 * first entry's completion would hide it) so that a stop or a crash before it runs does not lose it, queues it again
 * into the running version of its flow, then deletes the request and the dead letter. A request stays until it can be
 * served (flow not running here, queue full), so nothing is lost by asking at a bad time.
 */
public final class DeadLetterRetries
{
    /** A running flow as a retry sees it: how it takes a task, and how it keeps it durable until it runs. */
    public interface RetryTarget
    {
        /**
         * Queues the task as a scan would its entry (never twice: a scan may find the new entry first); true when it
         * is taken, or held or done here already.
         */
        boolean offer(Task task);

        /** Writes the task's backup entry (a flow without entries keeps none: its queue is the only copy). */
        void keep(Task task);
    }

    private static final Logger logger = LoggerFactory.getLogger(DeadLetterRetries.class);

    private final CqlGateway gateway;
    private final Supplier<String> node;
    private final Function<String, RetryTarget> runningQueue;
    private final LongSupplier nanoClock;
    private final LongSupplier wallClockMillis;
    private CqlGateway.Prepared selectRequests, selectTask, deleteRequest, deleteDeadLetter;
    private String lastReadProblem;
    /** requests (flow/id) whose flow is not running here, already reported */
    private final Set<String> waiting = new HashSet<>();

    public DeadLetterRetries(CqlGateway gateway, Supplier<String> node, Function<String, RetryTarget> runningQueue, LongSupplier nanoClock,
                      LongSupplier wallClockMillis)
    {
        this.gateway = gateway;
        this.node = node;
        this.runningQueue = runningQueue;
        this.nanoClock = nanoClock;
        this.wallClockMillis = wallClockMillis;
    }

    /** One poll; never throws. */
    public void poll()
    {
        ByteBuffer nodeName = DeadLetters.text(node.get());
        List<Map<String, ByteBuffer>> requests;
        try
        {
            if (selectRequests == null)
            {
                selectRequests = gateway.prepare(Cql.deadLetterRetriesSelect());
                selectTask = gateway.prepare(Cql.deadLetterTaskSelect());
                deleteRequest = gateway.prepare(Cql.deadLetterRetryDelete());
                deleteDeadLetter = gateway.prepare(Cql.deadLetterDelete());
            }
            requests = gateway.execute(selectRequests, InternalConsistency.DEAD_LETTERS, List.of(nodeName));
            lastReadProblem = null;
        }
        catch (RuntimeException e)
        {
            // the tables come with the first `ctl trigger deploy` of a version that has dead letters: stay quiet
            String problem = String.valueOf(e.getMessage());
            if (!problem.equals(lastReadProblem))
                logger.debug("async_triggers.dead_letter_retries not readable yet: {}", problem);
            lastReadProblem = problem;
            selectRequests = null;
            return;
        }
        Set<String> seen = new HashSet<>();
        for (Map<String, ByteBuffer> request : requests)
        {
            ByteBuffer flowBytes = request.get("flow"), id = request.get("id");
            if (flowBytes == null || id == null)
                continue;
            String flow = StandardCharsets.UTF_8.decode(flowBytes.duplicate()).toString();
            String key = flow + '/' + hex(id);
            seen.add(key);
            try
            {
                serve(flow, id, nodeName, key);
            }
            catch (RuntimeException e)
            {
                logger.error("Could not retry dead letter {} of flow '{}'; the request stays: {}", hex(id), flow, e.toString());
            }
        }
        waiting.retainAll(seen);
    }

    private void serve(String flow, ByteBuffer id, ByteBuffer nodeName, String key)
    {
        ByteBuffer flowBytes = DeadLetters.text(flow);
        List<Map<String, ByteBuffer>> rows = gateway.execute(selectTask, InternalConsistency.DEAD_LETTERS, List.of(flowBytes, id));
        ByteBuffer blob = rows.isEmpty() ? null : rows.get(0).get("task");
        if (blob != null)
        {
            RetryTarget running = runningQueue.apply(flow);
            if (running == null)
            {
                if (waiting.add(key))
                    logger.warn("Dead letter {} of flow '{}' cannot be retried: the flow is not running on this node "
                                + "(or is paused); the request stays until it runs", hex(id), flow);
                return;
            }
            Task task = Task.deserialize(blob).retried(id, nanoClock.getAsLong());
            running.keep(task); // durable before the dead letter goes; a failure leaves the request for the next poll
            if (!running.offer(task))
            {
                logger.debug("Queue of flow '{}' full or closed; dead letter {} retried at a later poll", flow, hex(id));
                return;
            }
            logger.info("Flow '{}': dead letter {} queued again: {}", flow, hex(id), task);
        }
        else
        {
            logger.warn("Dead letter {} of flow '{}' asked to be retried does not exist (already retried or purged)", hex(id), flow);
        }
        ByteBuffer timestamp = DeadLetters.bigint(wallClockMillis.getAsLong() * 1_000);
        gateway.execute(deleteRequest, InternalConsistency.DEAD_LETTERS, List.of(timestamp, nodeName, flowBytes, id));
        gateway.execute(deleteDeadLetter, InternalConsistency.DEAD_LETTERS, List.of(timestamp, flowBytes, id));
        waiting.remove(key);
    }

    private static String hex(ByteBuffer bytes)
    {
        if (bytes.remaining() == 16)
            return new java.util.UUID(bytes.getLong(bytes.position()), bytes.getLong(bytes.position() + 8)).toString();
        StringBuilder sb = new StringBuilder();
        for (int i = bytes.position(); i < bytes.limit(); i++)
            sb.append(Character.forDigit((bytes.get(i) >> 4) & 0xF, 16)).append(Character.forDigit(bytes.get(i) & 0xF, 16));
        return sb.toString();
    }
}
