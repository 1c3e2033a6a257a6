package org.asynctriggers.backup;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.marshal.BytesType;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.TimestampType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.marshal.UUIDType;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.api.Operation;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The backup entries a replica writes as it applies a write, built row by row on the write path: the same rows an
 * INSERT of the entry writes (a row marker, the task and its capture time, all at the write's timestamp), whatever
 * the order of the tasks.
 */
class BackupEntriesTest
{
    private static TableMetadata companion;

    @BeforeAll
    static void initCassandra()
    {
        DatabaseDescriptor.clientInitialization(false);
        companion = TableMetadata.builder("twitter", BackupTable.companionOf("tweets")).partitioner(Murmur3Partitioner.instance)
                                 .addPartitionKeyColumn("key_0", LongType.instance)
                                 .addClusteringColumn("flow", UTF8Type.instance)
                                 .addClusteringColumn("id", UUIDType.instance)
                                 .addRegularColumn("task", BytesType.instance)
                                 .addRegularColumn("captured", TimestampType.instance)
                                 .addRegularColumn("resume", BytesType.instance)
                                 .build();
    }

    private static Task task(String flow, long timestamp, String body)
    {
        return Task.captured(flow, new SourceChange(Operation.INSERT, List.of(bigint(7)), timestamp,
                                                    row("tweet_id", 7L, "body", body)), 0);
    }

    @Test
    void shouldWriteWhatAnInsertOfTheEntryWrites()
    {
        DecoratedKey key = companion.partitioner.decorateKey(bigint(7));
        List<Task> tasks = List.of(task("timeline", 30, "c"), task("by_author", 10, "a"), task("timeline", 20, "b"));
        long captured = 1_700_000_000_123L;

        PartitionUpdate built = BackupTable.entries(new BackupTable.Store(null, companion), key, tasks, captured);

        PartitionUpdate.SimpleBuilder inserted = PartitionUpdate.simpleBuilder(companion, key);
        for (Task task : tasks)
            inserted.row(BackupTable.text(task.flow()), BackupTable.uuid(task.id()))
                    .timestamp(task.timestamp())
                    .add("task", task.serialize())
                    .add("captured", ByteBuffer.allocate(8).putLong(0, captured));
        assertEquals(rows(inserted.build()), rows(built));
        assertEquals(3, built.rowCount());
        assertFalse(built.staticRow().hasLiveData(0, false));
    }

    @Test
    void shouldRefuseABackupMapWithoutTheColumnsOfThisPlugin()
    {
        TableMetadata other = TableMetadata.builder("twitter", BackupTable.companionOf("old")).partitioner(Murmur3Partitioner.instance)
                                           .addPartitionKeyColumn("key_0", LongType.instance)
                                           .addClusteringColumn("flow", UTF8Type.instance)
                                           .addClusteringColumn("id", UUIDType.instance)
                                           .addRegularColumn("payload", BytesType.instance)
                                           .build();
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> new BackupTable.Store(null, other));
        assertEquals("backup map twitter.async_backup_old has not the layout of this plugin (no 'task' or 'captured' "
                     + "column): redeploy its flows", refused.getMessage());
    }

    @Test
    void shouldCutTheEntriesAFlushWritesAgainIntoRecordsByPartitionSizeAndRowCount()
    {
        DecoratedKey seven = companion.partitioner.decorateKey(bigint(7));
        DecoratedKey eight = companion.partitioner.decorateKey(bigint(8));
        List<Task> tasks = new ArrayList<>();
        for (int i = 0; i < 2_500; i++)
            tasks.add(task("timeline", 1_000 + i, "b" + i));
        BackupTable.Store store = new BackupTable.Store(null, companion);
        List<Row> many = rows(BackupTable.entries(store, seven, tasks, 1L));

        UnflushedEntries.Copies copies = new UnflushedEntries.Copies(companion, Long.MAX_VALUE);
        many.forEach(row -> copies.add(seven, row));
        rows(BackupTable.entries(store, eight, tasks.subList(0, 3), 1L)).forEach(row -> copies.add(eight, row));
        List<PartitionUpdate> records = copies.take();
        assertEquals(List.of(1_000, 1_000, 500, 3), records.stream().map(PartitionUpdate::rowCount).collect(java.util.stream.Collectors.toList()));
        assertEquals(List.of(seven, seven, seven, eight), records.stream().map(PartitionUpdate::partitionKey).collect(java.util.stream.Collectors.toList()));
        assertEquals(List.of(), copies.take(), "taken once");

        long rowSize = many.get(0).dataSize();
        UnflushedEntries.Copies small = new UnflushedEntries.Copies(companion, 2 * rowSize + rowSize / 2);
        many.subList(0, 5).forEach(row -> small.add(seven, row));
        assertEquals(List.of(2, 2, 1), small.take().stream().map(PartitionUpdate::rowCount).collect(java.util.stream.Collectors.toList()));
    }

    private static List<Row> rows(PartitionUpdate update)
    {
        List<Row> out = new ArrayList<>();
        for (Iterator<Row> it = update.iterator(); it.hasNext(); )
            out.add(it.next());
        return out;
    }
}
