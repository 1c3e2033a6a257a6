package org.asynctriggers.capture;

import java.util.List;

import org.apache.cassandra.dht.Token;
import org.asynctriggers.task.Task;

/** Where a replica's captured tasks go once their backup entries are written here. */
public interface CaptureSink
{
    /**
     * Called inside the write, on the write path: never waits, never throws.
     * @param withEntries the tasks (of {@code tasks}) whose backup entries were written here
     */
    void captured(String keyspace, Token token, List<Task> tasks, List<Task> withEntries);
}
