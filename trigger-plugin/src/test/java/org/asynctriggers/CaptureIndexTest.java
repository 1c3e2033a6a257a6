package org.asynctriggers;

import java.lang.reflect.Field;
import java.util.Map;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.asynctriggers.capture.CaptureOptions;
import org.asynctriggers.testing.FakeGateway;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The capture index as Cassandra sees it: its options refused at CREATE CUSTOM INDEX with the culprit named, and no
 * indexer for what is no write (compaction, cleanup) or when it captures no flow.
 * <p>
 * Its constructor starts the node's plugin ({@link Node#get()}); a unit test must not start the real one (it would
 * wait for a ring), so a node built for tests, never started, is put in its place for the test's duration. A
 * {@code ColumnFamilyStore} cannot be built without a running node: the index gets none (null), which covers every
 * path but the one that returns a {@code WriteCapture} (that one reads the table's metadata from it; WriteCaptureTest
 * drives the indexer itself).
 */
class CaptureIndexTest
{
    private static final String FLOWS = "{\"users_by_name\": {\"events\": [\"insert\", \"update\", \"delete\"], \"columns\": [\"name\"]}}";

    @TempDir
    java.nio.file.Path spillRoot;
    private Node previous;

    @BeforeAll
    static void initCassandra()
    {
        DatabaseDescriptor.clientInitialization(false);
    }

    @BeforeEach
    void testNode() throws Exception
    {
        previous = swapNode(Node.builder(new FakeGateway()).spillDirs(spillRoot::resolve).build());
    }

    @AfterEach
    void realNode() throws Exception
    {
        swapNode(previous);
    }

    /** Sets the node {@link Node#get()} returns, and returns the one it replaced. */
    private static Node swapNode(Node node) throws Exception
    {
        Field instance = Node.class.getDeclaredField("instance");
        instance.setAccessible(true);
        Node was = (Node) instance.get(null);
        instance.set(null, node);
        return was;
    }

    private static IndexMetadata metadata(Map<String, String> options)
    {
        return IndexMetadata.fromSchemaMetadata("users_capture", IndexMetadata.Kind.CUSTOM, options);
    }

    private static Map<String, String> options(String flows)
    {
        return Map.of("class_name", CaptureIndex.class.getName(), "flows", flows);
    }

    private static org.apache.cassandra.index.Index.Indexer indexer(CaptureIndex index, IndexTransaction.Type type)
    {
        return index.indexerFor(Murmur3Partitioner.instance.decorateKey(Int32Type.instance.decompose(1)), RegularAndStaticColumns.NONE,
                                1_700_000_000L, null, type, null);
    }

    @Test
    void shouldAcceptValidOptionsAsAllKnown()
    {
        assertEquals(Map.of(), CaptureIndex.validateOptions(options(FLOWS)), "no option is left unrecognized");
    }

    @Test
    void shouldRefuseABadOptionWithItsMessage()
    {
        ConfigurationException e = assertThrows(ConfigurationException.class, () -> CaptureIndex.validateOptions(Map.of("flows", "{\"f\": 1}")));
        assertEquals("capture index: flow 'f': must be an object with 'events', 'backup' and 'columns', found: 1", e.getMessage());
        e = assertThrows(ConfigurationException.class, () -> CaptureIndex.validateOptions(Map.of("flow", "{}")));
        assertEquals("capture index: unknown option 'flow' (known: 'flows')", e.getMessage());
    }

    @Test
    void shouldCaptureNothingDuringCompactionOrCleanup()
    {
        CaptureIndex index = new CaptureIndex(null, metadata(options(FLOWS)));
        assertNull(indexer(index, IndexTransaction.Type.COMPACTION), "compaction is no write");
        assertNull(indexer(index, IndexTransaction.Type.CLEANUP), "cleanup is no write");
    }

    @Test
    void shouldCaptureNothingWhenNoFlowIsCaptured()
    {
        assertNull(indexer(new CaptureIndex(null, metadata(options("{}"))), IndexTransaction.Type.UPDATE));
    }

    @Test
    void shouldCaptureNothingWithUnreadableOptionsRatherThanFailWrites()
    {
        // options written by another plugin version, say: the index loads, logs, and captures nothing
        CaptureIndex index = new CaptureIndex(null, metadata(options("{\"f\": {\"events\": [\"upsert\"]}}")));
        assertNull(indexer(index, IndexTransaction.Type.UPDATE));
    }

    @Test
    void shouldCaptureNothingThatCassandraStreamsThroughTheWritePath() throws Exception
    {
        // a table with cdc = true (or materialized views) gets its streamed partitions applied through the write path,
        // on the stream receiver's threads: a bootstrap would otherwise capture every row of the ranges it moves
        CaptureIndex index = new CaptureIndex(null, metadata(options(FLOWS)));
        org.apache.cassandra.index.Index.Indexer[] seen = new org.apache.cassandra.index.Index.Indexer[1];
        Thread receiver = new Thread(() -> seen[0] = indexer(index, IndexTransaction.Type.UPDATE), "StreamReceiveTask:3");
        receiver.start();
        receiver.join();
        assertNull(seen[0]);
        assertTrue(CaptureIndex.isStreamed("StreamReceiveTask:1"));
        assertFalse(CaptureIndex.isStreamed("MutationStage-2"), "a replica's write");
        assertFalse(CaptureIndex.isStreamed("Native-Transport-Requests-4"), "a coordinator's local write");
        assertFalse(CaptureIndex.isStreamed("HintsDispatcher:1"), "a hint is a write the replica missed: captured");
    }

    @Test
    void shouldStopCapturingOnceAReloadedIndexListsNoFlow() throws Exception
    {
        CaptureIndex index = new CaptureIndex(null, metadata(options(FLOWS)));
        IndexMetadata emptied = metadata(options("{}"));
        index.getMetadataReloadTask(emptied).call();
        assertSame(emptied, index.getIndexMetadata());
        assertNull(indexer(index, IndexTransaction.Type.UPDATE), "the flows were removed from the index's options");
    }

    @Test
    void shouldMakeCassandraRefuseToDropAColumnAFlowCarriesOrToRenameAKeyColumn() throws Exception
    {
        CaptureOptions two = CaptureOptions.parse(Map.of("flows",
            "{\"by_name\": {\"events\": [\"insert\"], \"columns\": [\"name\"]},"
            + " \"by_mail\": {\"events\": [\"insert\"], \"columns\": [\"email\", \"name\"]}}"));
        assertTrue(CaptureIndex.dependsOn(two, false, "name"));
        assertTrue(CaptureIndex.dependsOn(two, false, "email"), "a column of either flow");
        assertFalse(CaptureIndex.dependsOn(two, false, "bio"), "a column no flow carries can be dropped");
        assertTrue(CaptureIndex.dependsOn(two, true, "id"), "the flows name the key columns: no rename");
        CaptureOptions handler = CaptureOptions.parse(Map.of("flows", "{\"h\": {\"events\": [\"insert\"]}}"));
        assertFalse(CaptureIndex.dependsOn(handler, false, "bio"), "a handler gets whatever columns the table has");
        assertFalse(CaptureIndex.dependsOn(CaptureOptions.NONE, true, "id"), "an index that captures no flow");
        // and through Cassandra's call, with the options the index was reloaded with
        CaptureIndex index = new CaptureIndex(null, metadata(options(FLOWS)));
        ColumnMetadata name = ColumnMetadata.regularColumn("ks", "users", "name", UTF8Type.instance);
        ColumnMetadata id = ColumnMetadata.partitionKeyColumn("ks", "users", "id", Int32Type.instance, 0);
        assertTrue(index.dependsOn(name));
        assertTrue(index.dependsOn(id));
        ColumnMetadata vector = ColumnMetadata.regularColumn("ks", "users", "name",
                                                             org.apache.cassandra.db.marshal.VectorType.getInstance(org.apache.cassandra.db.marshal.FloatType.instance, 3));
        assertFalse(index.dependsOn(vector), "a vector column is never claimed: vector searches ask dependsOn too");
        index.getMetadataReloadTask(metadata(options("{}"))).call();
        assertFalse(index.dependsOn(name), "the flow was dropped: the column can go");
        assertFalse(index.dependsOn(id));
    }

    @Test
    void shouldNeitherBuildNorAnswerQueries()
    {
        CaptureIndex index = new CaptureIndex(null, metadata(options(FLOWS)));
        assertNull(index.getInitializationTask(), "existing rows get no tasks");
        assertEquals(java.util.Optional.empty(), index.getBackingTable());
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> index.searcherFor(null));
        assertEquals("the async triggers capture index answers no queries", e.getMessage());
    }
}
