package org.asynctriggers;

import java.util.Collection;
import java.util.Collections;

import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.triggers.ITrigger;
import org.asynctriggers.backup.UnflushedEntries;
import org.asynctriggers.queue.QueueFullException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code CREATE TRIGGER async_triggers ON ks.t USING 'org.asynctriggers.AsyncTrigger'}: back pressure on the coordinator.
 *
 * <p>Stateless. Cassandra runs it before it sends a write to the replicas, so it is where a flow with the {@code block}
 * policy may hold the write while this node's queue of the flow is full, and fail it with OVERLOADED naming the flow
 * (nothing was written then); and where a write's backup entries would not fit in one commit log record, which it
 * refuses naming the flow (capture/EntrySize). It returns no mutation, so it never turns a write into a logged batch; tasks are captured
 * by the replicas themselves ({@link CaptureIndex}). A fault of its own is logged and never fails a write.
 */
public class AsyncTrigger implements ITrigger
{
    private static final Logger logger = LoggerFactory.getLogger(AsyncTrigger.class);

    /** What the backup entries of one write may take: what one commit log record holds (backup/UnflushedEntries). */
    static long entryLimit()
    {
        return UnflushedEntries.recordLimit();
    }

    @Override
    public Collection<Mutation> augment(Partition update)
    {
        if (!SupportedVersion.here())
            return Collections.emptyList();
        try
        {
            Node.get().flows().admit(update.metadata().keyspace, update.metadata().name);
            Node.get().flows().checkEntrySize(update, entryLimit());
        }
        catch (QueueFullException | InvalidRequestException e)
        {
            throw e;
        }
        catch (RuntimeException e)
        {
            logger.error("Async trigger could not check the queues of {}.{}", update.metadata().keyspace, update.metadata().name, e);
        }
        return Collections.emptyList();
    }
}
