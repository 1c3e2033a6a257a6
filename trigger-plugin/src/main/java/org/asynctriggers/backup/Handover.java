package org.asynctriggers.backup;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.BiFunction;

import org.apache.cassandra.db.marshal.ByteBufferAccessor;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.task.Task;

/**
 * When a worker leaves a queued task to another node (docs/design.md, "Who executes a task": handover). A node
 * queues a task as it captures the write when it executes the row. If the ring changes before a worker takes the task (a node joined
 * before it in the row's replica order, a replacement took its place, a node it stood in for came back), the row's
 * executor now is another live node, which holds the task's entry (it is a replica: streaming or the write itself
 * brought it) and runs it from its scans. Running it here as well would run it twice: a node that bootstraps or
 * replaces another while the executor has a backlog would repeat the whole backlog of its rows.
 * <p>
 * Left only: a task captured here with its entry written here (recorded in {@link HeldTasks} as it is queued; a
 * task spilled and adopted by a new flow version, parked, or queued again from a dead letter has no such record,
 * and runs here), to a node this one did not stand in for when it captured the task. So never left: a task read
 * back from an entry (a takeover, an adopted orphan, the safety net; left, an orphan would be adopted and left again
 * at every scan); one whose entry could not be written here (its queue may be its only copy); and one captured
 * while the node that executes its row now was down (it came back, and may not hold the write until a hint brings
 * it, or ever, if hints were off or expired: running it here repeats it at worst). A node that joins the ring
 * (bootstrap, replacement at a new address) was sent the write while it joined, or streamed it.
 */
public final class Handover
{
    private final Ownership ownership;
    private final HeldTasks held;
    /** the token of a task's row in its source table; null when the table is unknown */
    private final BiFunction<BackupTable, Task, Token> tokens;

    public Handover(Ownership ownership, HeldTasks held)
    {
        this(ownership, held, Handover::tokenOf);
    }

    Handover(Ownership ownership, HeldTasks held, BiFunction<BackupTable, Task, Token> tokens)
    {
        this.ownership = ownership;
        this.held = held;
        this.tokens = tokens;
    }

    /** Whether a worker leaves this task of the source table of {@code table} to the row's executor now. */
    public boolean leaves(BackupTable table, Task task)
    {
        java.util.Set<String> stoodInFor = task.isRecovered() ? null : held.stoodInFor(task);
        if (stoodInFor == null)
            return false;
        Token token;
        try
        {
            token = tokens.apply(table, task);
        }
        catch (RuntimeException e)
        {
            return false; // a key it cannot read: run it here
        }
        if (token == null)
            return false;
        String executor = ownership.executorElsewhere(table.keyspace, token);
        return executor != null && !stoodInFor.contains(executor);
    }

    /** The token Cassandra gives the task's source row. */
    static Token tokenOf(BackupTable table, Task task)
    {
        TableMetadata source = Schema.instance.getTableMetadata(table.keyspace, table.table);
        if (source == null)
            return null;
        List<ByteBuffer> parts = task.partitionKey(source.partitionKeyColumns().size());
        ByteBuffer key = parts.size() == 1 ? parts.get(0)
                                           : CompositeType.build(ByteBufferAccessor.instance, parts.toArray(new ByteBuffer[0]));
        return source.partitioner.getToken(key);
    }
}
