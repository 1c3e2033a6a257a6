package org.asynctriggers.queue;

import org.apache.cassandra.exceptions.OverloadedException;

/**
 * Thrown from {@code augment} when a flow's queue stays full. Triggers run before the mutation is applied, so the
 * client's write fails and nothing was written. It is an {@link OverloadedException} so that TriggerExecutor passes
 * it through unchanged (it rethrows Cassandra exceptions as they are) and the client sees OVERLOADED with our
 * message, which drivers already treat as "back off or try another coordinator".
 */
public class QueueFullException extends OverloadedException
{
    private static final long serialVersionUID = 1L;

    public QueueFullException(String message)
    {
        super(message);
    }
}
