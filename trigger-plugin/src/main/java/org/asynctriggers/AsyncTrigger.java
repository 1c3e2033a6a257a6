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
 * update to tasks, queues them in the node's runtime and returns their replica backup entries, which Cassandra
 * applies atomically with the update on its replicas (a logged batch; docs/design.md, "Replica backup maps").
 * Nothing here talks to another node. The only exception that escapes is the full-queue policy's (back pressure
 * on the client's write); a fault in the plugin itself is logged and never fails a write.
 *
 * <p>Constructing it starts the node's runtime, so that the boot agent ({@code async-triggers-agent.jar}) can start
 * takeover and recovery before the node coordinates any write.
 */
public class AsyncTrigger implements ITrigger
{
    private static final Logger logger = LoggerFactory.getLogger(AsyncTrigger.class);

    public AsyncTrigger()
    {
        TriggerRuntime.get();
    }

    @Override
    public Collection<Mutation> augment(Partition update)
    {
        try
        {
            return TriggerRuntime.get().augment(update);
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
