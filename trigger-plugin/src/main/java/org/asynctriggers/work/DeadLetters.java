package org.asynctriggers.work;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.apache.cassandra.utils.TimeUUID;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.InternalConsistency;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the tasks a node gave up on to {@code async_triggers.dead_letters} (docs/design.md, "Retries and dead
 * letters"), at LOCAL_QUORUM: this node reads them back at the same level when asked to retry
 * one, {@code ctl trigger dlq} sees them from any node once they arrive there, and the other data center being down
 * does not keep them from being written. Shared by the flows of a node.
 */
public final class DeadLetters
{
    private static final Logger logger = LoggerFactory.getLogger(DeadLetters.class);
    static final int MAX_ERROR_CHARS = 2_000;

    private final CqlGateway gateway;
    private final Supplier<String> node;
    private final LongSupplier wallClockMillis;
    private final Supplier<ByteBuffer> timeUuids;
    private volatile CqlGateway.Prepared insert;

    public DeadLetters(CqlGateway gateway, Supplier<String> node, LongSupplier wallClockMillis)
    {
        this(gateway, node, wallClockMillis, () -> ByteBuffer.wrap(TimeUUID.Generator.nextTimeUUIDAsBytes()));
    }

    public DeadLetters(CqlGateway gateway, Supplier<String> node, LongSupplier wallClockMillis, Supplier<ByteBuffer> timeUuids)
    {
        this.gateway = gateway;
        this.node = node;
        this.wallClockMillis = wallClockMillis;
        this.timeUuids = timeUuids;
    }

    /**
     * Never throws: it runs on a worker or the retry thread, whose other tasks must go on.
     * @param attempts the executions the task had
     * @param why the reason in the log line (the error column holds the failure itself)
     */
    /** @return true when the dead letter was written */
    public boolean write(Task task, int attempts, Throwable lastFailure, String why)
    {
        String error = "unknown";
        try
        {
            error = error(lastFailure);
            CqlGateway.Prepared statement = insert;
            if (statement == null)
                insert = statement = gateway.prepare(Cql.deadLetterInsert());
            long now = wallClockMillis.getAsLong();
            gateway.execute(statement, InternalConsistency.DEAD_LETTERS,
                            Arrays.asList(text(task.flow()), timeUuids.get(), text(node.get()),
                                          text(task.operation().eventName()), bigint(task.timestamp()),
                                          task.serializedKey(), task.serialize(), text(error), integer(attempts),
                                          bigint(now), bigint(now * 1_000)));
            logger.error("Flow '{}': task for key {} is a dead letter after {} attempt(s) ({}): {}", task.flow(),
                         task.keyHex(), attempts, why, error);
            return true;
        }
        catch (RuntimeException e)
        {
            insert = null;
            logger.error("Flow '{}': task for key {} failed after {} attempt(s) ({}) and could not be written to "
                         + "async_triggers.dead_letters ({}); its backup entry keeps it for the next scan (without a "
                         + "backup map the task is LOST): {}; its last failure: {}",
                         task.flow(), task.keyHex(), attempts, why, e, task, error);
            return false;
        }
    }

    static String error(Throwable failure)
    {
        String error = failure == null ? "unknown" : failure.getClass().getName() + ": " + failure.getMessage();
        return error.length() > MAX_ERROR_CHARS ? error.substring(0, MAX_ERROR_CHARS) : error;
    }

    static ByteBuffer text(String s)
    {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    static ByteBuffer bigint(long v)
    {
        return ByteBuffer.allocate(8).putLong(0, v);
    }

    static ByteBuffer integer(int v)
    {
        return ByteBuffer.allocate(4).putInt(0, v);
    }
}
