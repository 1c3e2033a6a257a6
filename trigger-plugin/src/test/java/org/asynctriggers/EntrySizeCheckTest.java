package org.asynctriggers;

import java.util.List;
import java.util.Set;

import javax.management.MBeanServerFactory;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.capture.EntrySize;
import org.asynctriggers.flows.Flows;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The coordinator's refusal of a write whose backup entries would not fit in one commit log record
 * ({@link Flows#checkEntrySize}, called by the trigger), with the flows of a node built for tests: every flow on the
 * table that keeps entries counts with the columns it carries, and the refusal names the one that carries the most.
 */
class EntrySizeCheckTest
{
    /** users -> names: carries the name only (besides the key) */
    private static final String NAMES = "{\"name\": \"names\","
        + "\"source\": {\"keyspace\": \"app\", \"table\": \"users\", \"partition_key\": [\"id\"], \"clustering\": [],"
        + "  \"columns\": {\"id\": \"bigint\", \"name\": \"text\", \"email\": \"text\"}},"
        + "\"targets\": [{\"keyspace\": \"app\", \"table\": \"names\", \"partition_key\": [\"name\"], \"clustering\": [\"id\"],"
        + "  \"columns\": {\"name\": \"source.name\", \"id\": \"source.id\"}, \"mode\": \"direct\"}]}";
    /** the same, without backup entries */
    private static final String UNKEPT = NAMES.replace("\"name\": \"names\",", "\"name\": \"unkept\", \"backup\": {\"enabled\": false},");

    private static TableMetadata users;
    private static TableMetadata others;

    @TempDir
    java.nio.file.Path spillRoot;
    private final TrackingThreadFactory threads = new TrackingThreadFactory();
    private Node node;

    @BeforeAll
    static void initCassandra()
    {
        DatabaseDescriptor.clientInitialization(false);
        users = usersLike("users");
        others = usersLike("others");
    }

    private static TableMetadata usersLike(String name)
    {
        return TableMetadata.builder("app", name).partitioner(Murmur3Partitioner.instance)
                            .addPartitionKeyColumn("id", LongType.instance)
                            .addRegularColumn("name", UTF8Type.instance)
                            .addRegularColumn("email", UTF8Type.instance)
                            .build();
    }

    @BeforeEach
    void start()
    {
        FakeGateway gateway = Fixtures.usersGateway().table("app", "names", List.of("name"), List.of("id"));
        node = Node.builder(gateway).mbeans(MBeanServerFactory.newMBeanServer()).threads(threads).spillDirs(spillRoot::resolve)
                   .drainMillis(1_000).build();
    }

    @AfterEach
    void shutdown() throws InterruptedException
    {
        node.shutdown();
        threads.assertAllEnded(10_000);
    }

    private void deploy(String name, String spec)
    {
        node.flows().apply(FlowSpecParser.parse(spec, name, 1));
    }

    private static PartitionUpdate user(TableMetadata table, String name, String email)
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(table, 1L).timestamp(10);
        builder.row().add("name", name).add("email", email);
        return builder.build();
    }

    @Test
    void shouldRefuseAWriteWhoseEntriesExceedTheLimitNamingTheFlowThatCarriesTheMost()
    {
        deploy("names", NAMES);
        deploy("users_by_name", Fixtures.USERS_BY_NAME);
        PartitionUpdate update = user(users, "n".repeat(100), "e".repeat(100_000));
        long names = EntrySize.of(update, List.of(new EntrySize.FlowColumns("names", Set.of("name"))));
        long byName = EntrySize.of(update, List.of(new EntrySize.FlowColumns("users_by_name", Set.of("name", "email"))));
        InvalidRequestException e = assertThrows(InvalidRequestException.class, () -> node.flows().checkEntrySize(update, 60_000));
        assertEquals(EntrySize.refusal("app", "users", "users_by_name", names + byName, 60_000), e.getMessage());
        assertEquals("async triggers: this write to app.users would give its flows backup entries of " + (names + byName)
                     + " bytes (flow 'users_by_name' takes the most), more than the commit log takes in one record "
                     + "(max_mutation_size: 60000 bytes); write smaller rows, or let the flows map fewer of its columns", e.getMessage());
    }

    @Test
    void shouldAcceptAWriteWhoseEntriesFit()
    {
        deploy("names", NAMES);
        deploy("users_by_name", Fixtures.USERS_BY_NAME);
        PartitionUpdate update = user(users, "n".repeat(100), "e".repeat(100_000));
        long total = EntrySize.of(update, List.of(new EntrySize.FlowColumns("names", Set.of("name")),
                                                  new EntrySize.FlowColumns("users_by_name", Set.of("name", "email"))));
        assertDoesNotThrow(() -> node.flows().checkEntrySize(update, total), "exactly at the limit");
        assertThrows(InvalidRequestException.class, () -> node.flows().checkEntrySize(update, total - 1));
    }

    @Test
    void shouldWeighOnlyTheColumnsEachFlowCarries()
    {
        deploy("names", NAMES);
        PartitionUpdate update = user(users, "n", "e".repeat(1_000_000));
        assertDoesNotThrow(() -> node.flows().checkEntrySize(update, 10_000), "a megabyte in a column no flow maps weighs nothing");
        PartitionUpdate named = user(users, "n".repeat(20_000), "e");
        InvalidRequestException e = assertThrows(InvalidRequestException.class, () -> node.flows().checkEntrySize(named, 10_000));
        long bytes = EntrySize.of(named, List.of(new EntrySize.FlowColumns("names", Set.of("name"))));
        assertEquals(EntrySize.refusal("app", "users", "names", bytes, 10_000), e.getMessage());
        assertEquals(EntrySize.of(update, List.of(new EntrySize.FlowColumns("names", Set.of("name")))) + 19_999, bytes);
    }

    @Test
    void shouldIgnoreFlowsWithoutEntriesAndOtherTables()
    {
        deploy("unkept", UNKEPT);
        assertDoesNotThrow(() -> node.flows().checkEntrySize(user(users, "n".repeat(1_000_000), "e"), 10_000),
                           "a flow without backup entries writes none");
        deploy("names", NAMES);
        assertDoesNotThrow(() -> node.flows().checkEntrySize(user(others, "n".repeat(1_000_000), "e"), 10_000),
                           "no flow on the table");
        InvalidRequestException e = assertThrows(InvalidRequestException.class,
                                                 () -> node.flows().checkEntrySize(user(users, "n".repeat(1_000_000), "e"), 10_000));
        assertEquals(EntrySize.refusal("app", "users", "names", EntrySize.of(user(users, "n".repeat(1_000_000), "e"),
                                                                         List.of(new EntrySize.FlowColumns("names", Set.of("name")))), 10_000),
                     e.getMessage(), "the flow without entries adds nothing to the total");
    }
}
