package org.asynctriggers;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.partitions.Partition;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.TimeUUID;

/**
 * The replica backup map of one source table (docs/design.md, "Replica backup maps"): the companion table
 * {@code <ks>."async_backup_<table>"}, whose partition key has the source's types in the source's order, so an entry
 * written in the source's own mutation lands atomically on exactly the source row's replicas.
 */
final class BackupMap
{
    static final String PREFIX = "async_backup_";
    /**
     * A completed entry is deleted at this timestamp: its (flow, id) is never written again, so a late resume update
     * from a slower executor of the same task cannot bring the row back.
     */
    static final long COMPLETED_AT = Long.MAX_VALUE / 2;

    final String keyspace;
    final String table;
    final String companion;
    private final int partitionKeySize;
    private final CqlGateway gateway;
    private final List<String> where = new ArrayList<>();
    private volatile CqlGateway.Prepared select, resume, delete;

    BackupMap(String keyspace, String table, int partitionKeySize, CqlGateway gateway)
    {
        this.keyspace = keyspace;
        this.table = table;
        this.companion = companionOf(table);
        this.partitionKeySize = partitionKeySize;
        this.gateway = gateway;
        for (int i = 0; i < partitionKeySize; i++)
            where.add("key_" + i);
        where.add("flow");
        where.add("id");
    }

    static String companionOf(String table)
    {
        return PREFIX + table;
    }

    /**
     * The entries of these tasks as one update of the companion table in the source update's partition; null when
     * the companion table does not exist (a flow deployed by a ctl without backup maps).
     */
    static Mutation entries(Partition source, List<Task> tasks, String master, long timestampMicros)
    {
        TableMetadata metadata = Schema.instance.getTableMetadata(source.metadata().keyspace, companionOf(source.metadata().name));
        if (metadata == null)
            return null;
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(metadata, source.partitionKey()).timestamp(timestampMicros);
        ByteBuffer masterBytes = text(master);
        for (Task task : tasks)
        {
            UUID id = task.backupId();
            builder.row(text(task.flow()), TimeUUID.fromBytes(id.getMostSignificantBits(), id.getLeastSignificantBits()).toBytes())
                   .add("master", masterBytes)
                   .add("task", task.serialize());
        }
        return new Mutation(builder.build());
    }

    static UUID newId()
    {
        return TimeUUID.Generator.nextTimeUUID().asUUID();
    }

    /** The entry is there (at ONE, or at ALL): the source write it came with was stored on a replica. */
    boolean isStored(Task task, ConsistencyLevel consistency)
    {
        CqlGateway.Prepared statement = select;
        if (statement == null)
            select = statement = gateway.prepare(Cql.select(keyspace, companion, List.of("master"), where));
        return !gateway.execute(statement, consistency, entryKey(task)).isEmpty();
    }

    /** Records where a chunked fan-out goes on (at ONE; a lost update only makes a takeover redo more rows). */
    void recordResume(Task task, int target, ByteBuffer paging)
    {
        CqlGateway.Prepared statement = resume;
        if (statement == null)
            resume = statement = gateway.prepare("UPDATE " + Cql.table(keyspace, companion) + " SET \"resume\" = ? WHERE "
                                                 + String.join(" AND ", where.stream().map(c -> Cql.quote(c) + " = ?").toArray(String[]::new)));
        List<ByteBuffer> values = new ArrayList<>();
        values.add(encodeResume(target, paging));
        values.addAll(entryKey(task));
        gateway.execute(statement, ConsistencyLevel.ONE, values);
    }

    /** The task is done (or a dead letter): its entry goes, through the normal write path so hints carry it. */
    void complete(Task task)
    {
        CqlGateway.Prepared statement = delete;
        if (statement == null)
            delete = statement = gateway.prepare(Cql.delete(keyspace, companion, where));
        List<ByteBuffer> values = new ArrayList<>();
        values.add(ByteBuffer.allocate(8).putLong(0, COMPLETED_AT));
        values.addAll(entryKey(task));
        gateway.execute(statement, ConsistencyLevel.ONE, values);
    }

    private List<ByteBuffer> entryKey(Task task)
    {
        List<ByteBuffer> key = new ArrayList<>(task.partitionKey(partitionKeySize));
        key.add(text(task.flow()));
        UUID id = task.backupId();
        key.add(ByteBuffer.allocate(16).putLong(0, id.getMostSignificantBits()).putLong(8, id.getLeastSignificantBits()));
        return key;
    }

    static ByteBuffer encodeResume(int target, ByteBuffer paging)
    {
        ByteBuffer out = ByteBuffer.allocate(4 + paging.remaining());
        out.putInt(target).put(paging.duplicate()).flip();
        return out;
    }

    /** Target index and paging state of a recorded resume position; null for none. */
    static Map.Entry<Integer, byte[]> decodeResume(ByteBuffer resume)
    {
        if (resume == null || resume.remaining() < 4)
            return null;
        ByteBuffer in = resume.duplicate();
        int target = in.getInt();
        byte[] paging = new byte[in.remaining()];
        in.get(paging);
        return Map.entry(target, paging);
    }

    static ByteBuffer text(String value)
    {
        return ByteBuffer.wrap(value.getBytes(StandardCharsets.UTF_8));
    }

    /** Milliseconds since the epoch at which a time-based UUID was made. */
    static long unixMillis(UUID id)
    {
        return (id.timestamp() - 0x01b21dd213814000L) / 10_000;
    }

    static long nowMicros()
    {
        return FBUtilities.timestampMicros();
    }
}
