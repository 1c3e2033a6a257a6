package org.asynctriggers.capture;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.rows.BTreeRow;
import org.apache.cassandra.db.rows.BufferCell;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.schema.TableMetadata;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.junit.jupiter.api.BeforeAll;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What the tests of a replica's capture share: the tables, real rows and tombstones built as Cassandra's index
 * transaction hands them to an indexer, and a sink that records what the capture hands the node. No node runs: the
 * schema holds no companion backup table, so no entry can be written here, and the write context is never reached
 * (null).
 */
abstract class WriteCaptureFixture
{
    static final long NOW = 1_700_000_000L;
    static TableMetadata events;
    static TableMetadata ranges;

    @BeforeAll
    static void initCassandra()
    {
        DatabaseDescriptor.clientInitialization(false);
        events = TableMetadata.builder("app", "events").partitioner(Murmur3Partitioner.instance)
                              .addPartitionKeyColumn("p", Int32Type.instance)
                              .addClusteringColumn("c", Int32Type.instance)
                              .addRegularColumn("v", UTF8Type.instance)
                              .addRegularColumn("w", UTF8Type.instance)
                              .addStaticColumn("s", UTF8Type.instance)
                              .build();
        ranges = TableMetadata.builder("app", "ranges").partitioner(Murmur3Partitioner.instance)
                              .addPartitionKeyColumn("p", Int32Type.instance)
                              .addClusteringColumn("c1", Int32Type.instance)
                              .addClusteringColumn("c2", Int32Type.instance)
                              .addRegularColumn("v", UTF8Type.instance)
                              .build();
    }

    /** What the capture handed the node: one call per write. */
    static final class RecordingSink implements CaptureSink
    {
        final List<String> keyspaces = new ArrayList<>();
        final List<Token> tokens = new ArrayList<>();
        final List<List<Task>> calls = new ArrayList<>();
        final List<Integer> entries = new ArrayList<>();

        @Override
        public void captured(String keyspace, Token token, List<Task> tasks, List<Task> withEntries)
        {
            keyspaces.add(keyspace);
            tokens.add(token);
            calls.add(List.copyOf(tasks));
            entries.add(withEntries.size());
        }

        List<Task> tasks()
        {
            List<Task> all = new ArrayList<>();
            calls.forEach(all::addAll);
            return all;
        }

        Task only(String flow)
        {
            List<Task> of = tasks().stream().filter(t -> t.flow().equals(flow)).collect(Collectors.toList());
            assertEquals(1, of.size(), "tasks of " + flow + ": " + of);
            return of.get(0);
        }
    }

    final RecordingSink sink = new RecordingSink();

    static final DecoratedKey KEY = Murmur3Partitioner.instance.decorateKey(Int32Type.instance.decompose(1));

    WriteCapture capture(TableMetadata table, String flows)
    {
        return capture(table, flows, sink);
    }

    /** The capture of a write of partition 1 on this replica, as the index's options make it. */
    static WriteCapture capture(TableMetadata table, String flows, CaptureSink sink)
    {
        return new WriteCapture(table, KEY, CaptureOptions.parse(Map.of("flows", flows)), null, sink, () -> null,
                                new WriteCapture.ErrorLog());
    }

    static ByteBuffer i(int v)
    {
        return Int32Type.instance.decompose(v);
    }

    static ByteBuffer t(String v)
    {
        return UTF8Type.instance.decompose(v);
    }

    /** A cell of {@code events}. */
    static Cell<?> cell(String column, long ts, String value)
    {
        return BufferCell.live(events.getColumn(ColumnIdentifier.getInterned(column, true)), ts, t(value));
    }

    static Cell<?> tombstone(String column, long ts)
    {
        return BufferCell.tombstone(events.getColumn(ColumnIdentifier.getInterned(column, true)), ts, NOW);
    }

    /** A row of {@code events} at clustering c, with a row marker and a row deletion at these timestamps (NONE: without). */
    static Row row(int c, long liveness, long deletion, Cell<?>... cells)
    {
        Row.Builder builder = BTreeRow.unsortedBuilder();
        builder.newRow(Clustering.make(i(c)));
        if (deletion != SourceChange.NONE)
            builder.addRowDeletion(Row.Deletion.regular(DeletionTime.build(deletion, NOW)));
        if (liveness != SourceChange.NONE)
            builder.addPrimaryKeyLivenessInfo(LivenessInfo.create(liveness, NOW));
        for (Cell<?> cell : cells)
            builder.addCell(cell);
        return builder.build();
    }

    static final String ALL_EVENTS = "[\"insert\", \"update\", \"delete\"]";
    /** one flow, every event, every column */
    static final String F = "{\"f\": {\"events\": " + ALL_EVENTS + "}}";
}
