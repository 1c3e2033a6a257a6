package org.asynctriggers.capture;

import java.util.List;
import java.util.Set;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.schema.TableMetadata;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The estimate of a write's backup entries that the coordinator's trigger holds against the commit log's largest
 * record (Flows.checkEntrySize, tested with a node's flows in EntrySizeCheckTest): it grows with the values of the
 * columns each flow carries, and counts every flow.
 */
class EntrySizeTest
{
    private static TableMetadata users;
    private static TableMetadata events;
    /** the id, a bigint: in the key and again among the values */
    private static final long USER_KEY = 2L * 8;
    /** what the row's cells cost besides their values: name and email, whichever a flow carries */
    private static final long USER_CELLS = 2L * EntrySize.PER_CELL + 2 * "name".length() + 2 * "email".length();

    @BeforeAll
    static void initCassandra()
    {
        DatabaseDescriptor.clientInitialization(false);
        users = TableMetadata.builder("app", "users").partitioner(Murmur3Partitioner.instance)
                             .addPartitionKeyColumn("id", LongType.instance)
                             .addRegularColumn("name", UTF8Type.instance)
                             .addRegularColumn("email", UTF8Type.instance)
                             .build();
        events = TableMetadata.builder("app", "events").partitioner(Murmur3Partitioner.instance)
                              .addPartitionKeyColumn("p", Int32Type.instance)
                              .addClusteringColumn("c", Int32Type.instance)
                              .addRegularColumn("v", UTF8Type.instance)
                              .addStaticColumn("s", UTF8Type.instance)
                              .build();
    }

    private static PartitionUpdate user(String name, String email)
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(users, 1L).timestamp(10);
        builder.row().add("name", name).add("email", email);
        return builder.build();
    }

    private static EntrySize.FlowColumns carrying(String flow, String... columns)
    {
        return new EntrySize.FlowColumns(flow, Set.of(columns));
    }

    private static final EntrySize.FlowColumns EVERY_COLUMN = new EntrySize.FlowColumns("handler", null);

    @Test
    void shouldCountOneEntryWithTheKeyAndTheCarriedValues()
    {
        assertEquals(EntrySize.PER_ENTRY + USER_KEY + USER_CELLS + 100, EntrySize.of(user("n".repeat(100), "e".repeat(1000)), List.of(carrying("f", "name"))));
        assertEquals(EntrySize.PER_ENTRY + USER_KEY + USER_CELLS + 1100, EntrySize.of(user("n".repeat(100), "e".repeat(1000)), List.of(EVERY_COLUMN)),
                     "a flow without 'columns' carries every column");
        PartitionUpdate.SimpleBuilder row = PartitionUpdate.simpleBuilder(events, 1).timestamp(10);
        row.row(2).add("v", "abc");
        assertEquals(EntrySize.PER_ENTRY + 2 * 4 + 4 + EntrySize.PER_CELL + 2 + 3, EntrySize.of(row.build(), List.of(EVERY_COLUMN)),
                     "the clustering counts once, the partition key twice");
    }

    @Test
    void shouldGrowWithTheValuesOfTheCarriedColumnsOnly()
    {
        List<EntrySize.FlowColumns> names = List.of(carrying("f", "name"));
        long small = EntrySize.of(user("n", "e"), names);
        assertEquals(small, EntrySize.of(user("n", "e".repeat(100_000)), names), "a column the flow does not carry weighs nothing");
        assertEquals(small + 99_999, EntrySize.of(user("n".repeat(100_000), "e"), names));
        assertEquals(EntrySize.of(user("n", "e"), List.of(EVERY_COLUMN)) + 99_999,
                     EntrySize.of(user("n", "e".repeat(100_000)), List.of(EVERY_COLUMN)));
    }

    @Test
    void shouldCountEveryFlow()
    {
        PartitionUpdate update = user("n".repeat(300), "e".repeat(5_000));
        EntrySize.FlowColumns names = carrying("names", "name"), emails = carrying("emails", "email");
        assertEquals(EntrySize.of(update, List.of(names)) + EntrySize.of(update, List.of(emails)) + EntrySize.of(update, List.of(EVERY_COLUMN)),
                     EntrySize.of(update, List.of(names, emails, EVERY_COLUMN)));
        assertEquals(0, EntrySize.of(update, List.of()), "no flow keeps entries: nothing to write");
    }

    @Test
    void shouldCountEveryRowAndTheStaticRowOfTheWrite()
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(events, 1).timestamp(10);
        builder.row().add("s", "x".repeat(50));
        builder.row(1).add("v", "a".repeat(10));
        builder.row(2).add("v", "b".repeat(20));
        long perRow = EntrySize.PER_ENTRY + 2 * 4;
        long cell = EntrySize.PER_CELL + 2; // a one-letter column's name, twice, with its timestamp and expiration
        assertEquals((perRow + cell + 50) + (perRow + 4 + cell + 10) + (perRow + 4 + cell + 20), EntrySize.of(builder.build(), List.of(EVERY_COLUMN)));
    }

    @Test
    void shouldCountADeletionAsAnEntryPerFlow()
    {
        List<EntrySize.FlowColumns> two = List.of(carrying("f", "v"), EVERY_COLUMN);
        assertEquals(2L * EntrySize.PER_ENTRY, EntrySize.of(PartitionUpdate.fullPartitionDelete(events, Int32Type.instance.decompose(1), 30, 1_000), two));
        PartitionUpdate.SimpleBuilder range = PartitionUpdate.simpleBuilder(events, 1).timestamp(40);
        range.addRangeTombstone().start(5).end(9);
        assertTrue(EntrySize.of(range.build(), two) >= 2L * EntrySize.PER_ENTRY, "a range deletion: at least an entry per flow");
    }

    @Test
    void shouldNameTheFlowAndTheLimitInItsRefusal()
    {
        assertEquals("async triggers: this write to app.users would give its flows backup entries of 20000000 bytes "
                     + "(flow 'users_by_name' takes the most), more than the commit log takes in one record (max_mutation_size: 16711680 bytes); "
                     + "write smaller rows, or let the flows map fewer of its columns",
                     EntrySize.refusal("app", "users", "users_by_name", 20_000_000, 16_711_680));
    }

    @Test
    void shouldNeverUnderestimateTheSerializedTaskOfAWideRow()
    {
        TableMetadata.Builder wide = TableMetadata.builder("app", "wide").partitioner(Murmur3Partitioner.instance)
                                                  .addPartitionKeyColumn("id", LongType.instance);
        for (int i = 0; i < 1000; i++)
            wide.addRegularColumn(String.format("column_name_number_%04d", i), Int32Type.instance);
        TableMetadata table = wide.build();
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(table, 1L).timestamp(10);
        org.apache.cassandra.db.rows.Row.SimpleBuilder row = builder.row();
        for (int i = 0; i < 1000; i++)
            row.add(String.format("column_name_number_%04d", i), i);
        PartitionUpdate update = builder.build();
        org.asynctriggers.task.SourceChange change = TaskExtractor.extract(update).get(0);
        assertTrue(EntrySize.of(update, List.of(EVERY_COLUMN)) >= org.asynctriggers.task.Task.captured("f", change, 0).serialize().remaining());
        org.asynctriggers.task.SourceChange one = change.keeping(Set.of("column_name_number_0000"), List.of("id"));
        assertTrue(EntrySize.of(update, List.of(carrying("f", "column_name_number_0000")))
                   >= org.asynctriggers.task.Task.captured("f", one, 0).serialize().remaining(),
                   "a flow carrying one column still names the others");
    }
}
