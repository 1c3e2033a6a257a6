package org.asynctriggers.capture;

import java.nio.ByteBuffer;
import java.util.List;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.api.Operation;
import org.asynctriggers.task.SourceChange;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Real PartitionUpdate objects, built the way the CQL layer builds them, without a running node. */
class TaskExtractorTest
{
    private static TableMetadata events;
    private static TableMetadata composite;

    @BeforeAll
    static void initCassandra()
    {
        DatabaseDescriptor.clientInitialization(false);
        events = TableMetadata.builder("app", "events")
                              .partitioner(Murmur3Partitioner.instance)
                              .addPartitionKeyColumn("p", Int32Type.instance)
                              .addClusteringColumn("c", Int32Type.instance)
                              .addRegularColumn("v", UTF8Type.instance)
                              .addRegularColumn("w", UTF8Type.instance)
                              .addStaticColumn("s", UTF8Type.instance)
                              .build();
        composite = TableMetadata.builder("app", "pairs")
                                 .partitioner(Murmur3Partitioner.instance)
                                 .addPartitionKeyColumn("a", Int32Type.instance)
                                 .addPartitionKeyColumn("b", UTF8Type.instance)
                                 .addRegularColumn("v", UTF8Type.instance)
                                 .build();
    }

    private static PartitionUpdate update(TableMetadata table, long ts, java.util.function.Consumer<PartitionUpdate.SimpleBuilder> rows, Object... key)
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(table, key).timestamp(ts);
        rows.accept(builder);
        return builder.build();
    }

    private static ByteBuffer i(int v)
    {
        return Int32Type.instance.decompose(v);
    }

    private static ByteBuffer t(String v)
    {
        return UTF8Type.instance.decompose(v);
    }

    @Test
    void shouldClassifyARowMarkerAsInsert()
    {
        PartitionUpdate update = update(events, 10, b -> b.row(2).add("v", "a"), 1);
        List<SourceChange> changes = TaskExtractor.extract(update);
        assertEquals(1, changes.size());
        SourceChange change = changes.get(0);
        assertEquals(Operation.INSERT, change.operation);
        assertEquals(List.of(i(1), i(2)), change.key);
        assertEquals(10, change.timestamp);
        assertEquals(t("a"), change.values.get("v"));
        assertEquals(i(1), change.values.get("p"));
        assertEquals(i(2), change.values.get("c"));
        assertFalse(change.values.containsKey("w"), "a column the update does not carry is absent, not null");
    }

    @Test
    void shouldClassifyCellsOnlyAsUpdate()
    {
        PartitionUpdate update = update(events, 10, b -> b.row(2).noPrimaryKeyLivenessInfo().add("v", "a"), 1);
        SourceChange change = TaskExtractor.extract(update).get(0);
        assertEquals(Operation.UPDATE, change.operation);
    }

    @Test
    void shouldKeepANullCellAsPresentAndNull()
    {
        PartitionUpdate update = update(events, 10, b -> b.row(2).noPrimaryKeyLivenessInfo().add("v", null), 1);
        SourceChange change = TaskExtractor.extract(update).get(0);
        assertEquals(Operation.UPDATE, change.operation);
        assertTrue(change.values.containsKey("v"));
        assertNull(change.values.get("v"));
    }

    @Test
    void shouldClassifyARowDeletionAsDelete()
    {
        PartitionUpdate update = update(events, 20, b -> b.row(2).delete(), 1);
        SourceChange change = TaskExtractor.extract(update).get(0);
        assertEquals(Operation.DELETE, change.operation);
        assertEquals(List.of(i(1), i(2)), change.key);
        assertEquals(20, change.timestamp);
    }

    @Test
    void shouldCaptureARowThatLostCellsAndGainedNoneAsAnUpdate()
    {
        // what Cassandra hands an index for SET c = null on a row in the memtable: the cells it removed, no new one
        // (its collection deletion is not passed on)
        org.apache.cassandra.db.rows.Row.Builder removed = org.apache.cassandra.db.rows.BTreeRow.sortedBuilder();
        removed.newRow(org.apache.cassandra.db.Clustering.make(i(2)));
        removed.addCell(org.apache.cassandra.db.rows.BufferCell.live(events.getColumn(new org.apache.cassandra.cql3.ColumnIdentifier("v", true)), 30, t("a")));
        org.apache.cassandra.db.rows.Row.Builder none = org.apache.cassandra.db.rows.BTreeRow.sortedBuilder();
        none.newRow(org.apache.cassandra.db.Clustering.make(i(2)));
        TaskExtractor.Collector collector = new TaskExtractor.Collector(events, i(1));
        collector.updated(removed.build(), none.build());
        List<SourceChange> changes = collector.changes();
        assertEquals(1, changes.size(), "a change: the row lost a cell");
        assertEquals(Operation.UPDATE, changes.get(0).operation);
        assertEquals(List.of(i(1), i(2)), changes.get(0).key);
        assertEquals(30, changes.get(0).timestamp, "at least the newest timestamp of what it lost");

        TaskExtractor.Collector nothing = new TaskExtractor.Collector(events, i(1));
        nothing.updated(none.build(), none.build());
        assertEquals(List.of(), nothing.changes(), "a repeat of what is there changes nothing");
    }

    @Test
    void shouldMakeOneChangePerRow()
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(events, 1).timestamp(10);
        builder.row(1).add("v", "a");
        builder.row(2).add("v", "b");
        builder.row(3).add("v", "c");
        List<SourceChange> changes = TaskExtractor.extract(builder.build());
        assertEquals(3, changes.size());
        assertEquals(List.of(i(1), i(3)), changes.get(2).key);
    }

    @Test
    void shouldKeyAPartitionDeletionByThePartitionKey()
    {
        PartitionUpdate update = PartitionUpdate.fullPartitionDelete(events, i(1), 30, 1_000);
        List<SourceChange> changes = TaskExtractor.extract(update);
        assertEquals(1, changes.size());
        assertEquals(Operation.DELETE, changes.get(0).operation);
        assertEquals(List.of(i(1)), changes.get(0).key);
        assertEquals(30, changes.get(0).timestamp);
    }

    @Test
    void shouldKeyARangeDeletionByTheCommonClusteringPrefix()
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(events, 1).timestamp(40);
        builder.addRangeTombstone().start(5).end(5).inclStart().inclEnd();
        builder.addRangeTombstone().start(6).end(9);
        List<SourceChange> changes = TaskExtractor.extract(builder.build());
        assertEquals(2, changes.size());
        assertEquals(List.of(i(1), i(5)), changes.get(0).key);
        assertEquals(List.of(i(1)), changes.get(1).key, "an open range names only its partition");
        assertTrue(changes.stream().allMatch(c -> c.operation == Operation.DELETE && c.timestamp == 40));
    }

    @Test
    void shouldReportAStaticRowAsAPartitionLevelUpdate()
    {
        PartitionUpdate update = update(events, 10, b -> b.row().add("s", "x"), 1);
        List<SourceChange> changes = TaskExtractor.extract(update);
        assertEquals(1, changes.size());
        assertEquals(List.of(i(1)), changes.get(0).key);
        assertEquals(t("x"), changes.get(0).values.get("s"));
    }

    @Test
    void shouldSplitACompositePartitionKey()
    {
        PartitionUpdate update = update(composite, 10, b -> b.row().add("v", "a"), 7, "k");
        SourceChange change = TaskExtractor.extract(update).get(0);
        assertEquals(List.of(i(7), t("k")), change.key);
        assertEquals(t("k"), change.values.get("b"));
    }

    @Test
    void shouldLetAWriteAfterADeletionInTheSameUpdateWin()
    {
        assertEquals(Operation.INSERT, TaskExtractor.classify(20, 10, 20));
        assertEquals(Operation.DELETE, TaskExtractor.classify(10, 10, 10));
        assertEquals(Operation.UPDATE, TaskExtractor.classify(Long.MIN_VALUE, 10, 20));
        assertEquals(Operation.DELETE, TaskExtractor.classify(Long.MIN_VALUE, 10, Long.MIN_VALUE));
    }

    @Test
    void shouldKeepTheLocalExpirationTimeOfAnInsertWithTtl()
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(events, 1).timestamp(10).ttl(20).nowInSec(1_700_000_000L);
        builder.row(2).add("v", "a");
        PartitionUpdate update = builder.build();
        SourceChange change = TaskExtractor.extract(update).get(0);
        assertEquals(Operation.INSERT, change.operation);
        assertEquals(1_700_000_020L, change.rowExpiresAt, "the row's liveness: now + ttl, as the coordinator fixed it");
        assertEquals(java.util.Map.of("v", 1_700_000_020L), change.expirations);
    }

    @Test
    void shouldKeepEachCellsOwnExpirationInAnUpdate()
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(events, 1).timestamp(10).nowInSec(1_700_000_000L);
        builder.row(2).noPrimaryKeyLivenessInfo().ttl(5).add("v", "a");
        builder.row(2).noPrimaryKeyLivenessInfo().ttl(0).add("w", "b");
        SourceChange change = TaskExtractor.extract(builder.build()).get(0);
        assertEquals(Operation.UPDATE, change.operation);
        assertEquals(0, change.rowExpiresAt, "an update adds a TTL to its cells, not to the row");
        assertEquals(java.util.Map.of("v", 1_700_000_005L), change.expirations, "w has no TTL");
        assertEquals(t("b"), change.values.get("w"));
    }

    @Test
    void shouldCaptureNoExpirationWithoutTtl()
    {
        SourceChange change = TaskExtractor.extract(update(events, 10, b -> b.row(2).add("v", "a"), 1)).get(0);
        assertEquals(0, change.rowExpiresAt);
        assertTrue(change.expirations.isEmpty());
        SourceChange nulled = TaskExtractor.extract(update(events, 10, b -> b.ttl(30).row(2).noPrimaryKeyLivenessInfo().add("v", null), 1)).get(0);
        assertTrue(nulled.expirations.isEmpty(), "a null cell is a tombstone, never an expiring cell");
    }

    @Test
    void shouldKeepTheExpirationsOfAWriteSeenTwice()
    {
        PartitionUpdate.SimpleBuilder builder = PartitionUpdate.simpleBuilder(events, 1).timestamp(10).ttl(20).nowInSec(1_700_000_000L);
        builder.row(2).add("v", "a");
        PartitionUpdate update = builder.build();
        SourceChange first = TaskExtractor.extract(update).get(0);
        // a contended memtable partition: the index heard the same write once as cells only, then with its marker
        SourceChange merged = new SourceChange(Operation.UPDATE, first.key, 10, java.util.Map.of("w", t("b"))).mergedWith(first);
        assertEquals(Operation.INSERT, merged.operation);
        assertEquals(1_700_000_020L, merged.rowExpiresAt);
        assertEquals(java.util.Map.of("v", 1_700_000_020L), merged.expirations);
    }
}
