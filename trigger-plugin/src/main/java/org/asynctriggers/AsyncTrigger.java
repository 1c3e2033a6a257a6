package org.asynctriggers;

import java.util.Collection;
import java.util.Collections;

import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.triggers.ITrigger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code CREATE TRIGGER async_triggers ON ks.t USING 'org.asynctriggers.AsyncTrigger'}.
 *
 * <p>Stateless: Cassandra makes one instance per class loader and drops it on {@code reloadtriggers}. It maps the
 * update to tasks, queues them in the node's runtime and returns no mutation, so the write is not turned into a
 * logged batch. Nothing here talks to another node. The only exception that escapes is the full-queue policy's
 * (back pressure on the client's write); a fault in the plugin itself is logged and never fails a write.
 */
public class AsyncTrigger implements ITrigger
{
    private static final Logger logger = LoggerFactory.getLogger(AsyncTrigger.class);

    @Override
    public Collection<Mutation> augment(Partition update)
    {
        try
        {
            TriggerRuntime.get().enqueue(update);
        }
        catch (QueueFullException e)
        {
            throw e;
        }
        catch (RuntimeException e)
        {
            logger.error("Async trigger could not queue an update of {}.{}; no task created",
                         update.metadata().keyspace, update.metadata().name, e);
        }
        return Collections.emptyList();
    }
}
