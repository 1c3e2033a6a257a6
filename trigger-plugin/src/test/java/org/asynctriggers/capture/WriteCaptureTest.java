package org.asynctriggers.capture;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.cassandra.db.BufferClusteringBound;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.Slice;
import org.apache.cassandra.db.rows.BTreeRow;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.asynctriggers.api.Operation;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica's capture of one partition update, driven through the events Cassandra's index transaction sends
 * ({@code insertRow}, {@code updateRow(old, new)}, {@code partitionDelete}, {@code rangeTombstone}, {@code finish}):
 * which flows get a task, and what each task holds (its cells' own timestamps, its row marker and deletion, a static
 * row, a range's bounds, the flow's columns).
 */
class WriteCaptureTest extends WriteCaptureFixture
{
    @Test
    void shouldHandEachFlowOneTaskPerChangeOfAnEventItHandles()
    {
        WriteCapture write = capture(events, "{\"all\": {\"events\": " + ALL_EVENTS + "}, \"inserts\": {\"events\": [\"insert\"]},"
                                             + " \"deletes\": {\"events\": [\"delete\"]}}");
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a")));
        write.insertRow(row(3, SourceChange.NONE, 10, new Cell<?>[0]));
        write.finish();
        assertEquals(1, sink.calls.size(), "one hand-over per write");
        assertEquals("app", sink.keyspaces.get(0));
        assertEquals(KEY.getToken(), sink.tokens.get(0));
        List<Task> tasks = sink.calls.get(0);
        assertEquals(List.of("all", "inserts", "all", "deletes"), tasks.stream().map(Task::flow).collect(Collectors.toList()));
        assertEquals(List.of(Operation.INSERT, Operation.INSERT, Operation.DELETE, Operation.DELETE),
                     tasks.stream().map(Task::operation).collect(Collectors.toList()));
        assertEquals(List.of(i(1), i(2)), tasks.get(0).key());
        assertEquals(t("a"), tasks.get(1).values().get("v"));
        assertEquals(List.of(i(1), i(3)), tasks.get(3).key());
    }

    @Test
    void shouldCountATasksAgeFromTheCapturesClock()
    {
        WriteCapture write = new WriteCapture(events, KEY, CaptureOptions.parse(java.util.Map.of("flows", "{\"all\": {\"events\": " + ALL_EVENTS + "}}")),
                                              null, sink, () -> null, new WriteCapture.ErrorLog(() -> 0L), () -> 42_000L, () -> 7L,
                                              Runnable::run, () -> 0);
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a")));
        write.finish();
        assertEquals(List.of(42_000L), sink.calls.get(0).stream().map(Task::createdNanos).collect(Collectors.toList()),
                     "its retries' max_age_ms counts from the capture's clock");
    }

    @Test
    void shouldHandItsTasksOnOnlyWhenTheStageRunsWhatFollowsTheWrite()
    {
        List<CaptureStage.Capture> later = new java.util.ArrayList<>();
        WriteCapture write = new WriteCapture(events, KEY, CaptureOptions.parse(java.util.Map.of("flows", "{\"all\": {\"events\": " + ALL_EVENTS + "}}")),
                                              null, sink, () -> null, new WriteCapture.ErrorLog(() -> 0L), later::add,
                                              () -> 0.95);
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a")));
        write.finish();
        assertTrue(sink.calls.isEmpty(), "the write does not wait for its tasks' hand-over");
        assertEquals(1, later.size(), "one step after the write");
        assertTrue(later.get(0).mayRun(), "no memtable write of its own waits for room (no backup map here), whatever the memtables hold");
        later.get(0).run();
        assertEquals(List.of(i(1), i(2)), sink.only("all").key(), "the stage hands the task as the write captured it");
    }

    @Test
    void shouldGiveAFlowNoTaskForAnEventItDoesNotHandle()
    {
        WriteCapture write = capture(events, "{\"inserts\": {\"events\": [\"insert\"]}, \"deletes\": {\"events\": [\"delete\"]}}");
        Row old = row(2, 5, SourceChange.NONE, cell("v", 5, "a"));
        write.updateRow(old, row(2, 5, SourceChange.NONE, cell("v", 12, "b")));
        write.finish();
        assertTrue(sink.tasks().isEmpty(), "an update of a row already in the memtable is an update: " + sink.tasks());

        WriteCapture delete = capture(events, "{\"inserts\": {\"events\": [\"insert\"]}, \"deletes\": {\"events\": [\"delete\"]}}");
        delete.partitionDelete(DeletionTime.build(30, NOW));
        delete.finish();
        Task task = sink.only("deletes");
        assertEquals(List.of(i(1)), task.key(), "a partition deletion names its partition");
        assertEquals(30, task.timestamp());
        assertEquals(30, task.deletionTimestamp());
    }

    @Test
    void shouldHandNothingForAWriteWithoutChanges()
    {
        capture(events, "{\"all\": {\"events\": " + ALL_EVENTS + "}}").finish();
        WriteCapture repeat = capture(events, "{\"all\": {\"events\": " + ALL_EVENTS + "}}");
        // a repeat of what the memtable holds, or a write its cells supersede: Cassandra hands the index neither an
        // added cell nor a removed one (SecondaryIndexManager's onUpdated diffs the merged row against the old)
        repeat.updateRow(row(2, 5, SourceChange.NONE), row(2, 5, SourceChange.NONE));
        repeat.finish();
        assertEquals(0, sink.calls.size());
    }

    @Test
    void shouldMakeAnUpdateOfARowThatOnlyLostCells()
    {
        // SET v = null on a collection, or DELETE v: the merged row no longer has the elements; the index is handed
        // them as removed and no added cell
        WriteCapture write = capture(events, "{\"all\": {\"events\": " + ALL_EVENTS + "}}");
        write.updateRow(row(2, 5, SourceChange.NONE, cell("v", 5, "a"), cell("w", 7, "b")), row(2, 5, SourceChange.NONE));
        write.finish();
        Task task = sink.only("all");
        assertEquals(Operation.UPDATE, task.operation());
        assertEquals(7, task.timestamp(), "no older than the newest cell it lost");
    }

    @Test
    void shouldKeepEachCellsOwnTimestampInABatch()
    {
        WriteCapture write = capture(events, F);
        // INSERT (v) USING TIMESTAMP 10 and UPDATE SET w USING TIMESTAMP 20 of one row, in one batch
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a"), cell("w", 20, "b")));
        write.finish();
        Task task = sink.only("f");
        assertEquals(Operation.INSERT, task.operation());
        assertEquals(20, task.timestamp(), "the newest of what the write holds");
        assertEquals(10, task.timestampOf("v"));
        assertEquals(20, task.timestampOf("w"));
        assertEquals(10, task.livenessTimestamp());
        assertEquals(SourceChange.NONE, task.deletionTimestamp());
        assertFalse(task.isStatic());
        assertNull(task.range());
    }

    @Test
    void shouldKeepTheRowDeletionAndMarkerOfADeleteThenInsert()
    {
        WriteCapture write = capture(events, F);
        write.insertRow(row(2, 20, 15, cell("v", 20, "a")));
        write.finish();
        Task task = sink.only("f");
        assertEquals(Operation.INSERT, task.operation(), "written after its deletion: the insert wins");
        assertEquals(20, task.livenessTimestamp());
        assertEquals(15, task.deletionTimestamp());
        assertEquals(20, task.timestamp());
    }

    @Test
    void shouldTakeOnlyWhatAnUpdateChangedInTheMemtableAsItsOwn()
    {
        WriteCapture write = capture(events, F);
        Row old = row(2, 5, SourceChange.NONE, cell("v", 5, "a"));
        // the update brought w at 12; the marker in the merged row is the old one's, not this write's
        write.updateRow(old, row(2, 5, SourceChange.NONE, cell("w", 12, "b")));
        write.finish();
        Task task = sink.only("f");
        assertEquals(Operation.UPDATE, task.operation());
        assertEquals(SourceChange.NONE, task.livenessTimestamp());
        assertEquals(12, task.timestampOf("w"));
        assertFalse(task.values().containsKey("v"), "v was not written by this update");

        WriteCapture delete = capture(events, F);
        delete.updateRow(old, row(2, SourceChange.NONE, 25));
        delete.finish();
        Task deleted = sink.tasks().get(1);
        assertEquals(Operation.DELETE, deleted.operation());
        assertEquals(25, deleted.deletionTimestamp());
    }

    @Test
    void shouldMarkAStaticRowsChangeStaticAndKeyItByItsPartition()
    {
        WriteCapture write = capture(events, F);
        Row.Builder builder = BTreeRow.unsortedBuilder();
        builder.newRow(Clustering.STATIC_CLUSTERING);
        builder.addCell(cell("s", 7, "x"));
        write.insertRow(builder.build());
        write.insertRow(row(2, 7, SourceChange.NONE, cell("v", 7, "a")));
        write.finish();
        List<Task> tasks = sink.tasks();
        assertEquals(2, tasks.size(), "the static row and the row are two changes, even at one timestamp");
        Task statik = tasks.get(0);
        assertTrue(statik.isStatic());
        assertEquals(Operation.UPDATE, statik.operation());
        assertEquals(List.of(i(1)), statik.key());
        assertEquals(t("x"), statik.values().get("s"));
        assertEquals(7, statik.timestampOf("s"));
        assertFalse(tasks.get(1).isStatic());
        assertNotEquals(statik.id(), tasks.get(1).id());
    }

    @Test
    void shouldKeepARangeDeletionsBounds()
    {
        WriteCapture write = capture(ranges, "{\"f\": {\"events\": [\"delete\"]}}");
        // DELETE ... WHERE p = 1 AND c1 >= 5 AND c1 < 9
        write.rangeTombstone(new RangeTombstone(Slice.make(BufferClusteringBound.inclusiveStartOf(i(5)), BufferClusteringBound.exclusiveEndOf(i(9))),
                                                DeletionTime.build(40, NOW)));
        // DELETE ... WHERE p = 1 AND c1 = 3 (a prefix), and one with c1 = 3 AND c2 > 4 at the same timestamp
        write.rangeTombstone(new RangeTombstone(Slice.make(BufferClusteringBound.inclusiveStartOf(i(3)), BufferClusteringBound.inclusiveEndOf(i(3))),
                                                DeletionTime.build(40, NOW)));
        write.rangeTombstone(new RangeTombstone(Slice.make(BufferClusteringBound.exclusiveStartOf(i(3), i(4)), BufferClusteringBound.inclusiveEndOf(i(3))),
                                                DeletionTime.build(40, NOW)));
        write.finish();
        List<Task> tasks = sink.tasks();
        assertEquals(3, tasks.size(), "ranges are never merged: " + tasks);
        Task open = tasks.get(0), prefix = tasks.get(1), tail = tasks.get(2);

        assertEquals(Operation.DELETE, open.operation());
        assertEquals(40, open.timestamp());
        assertEquals(40, open.deletionTimestamp());
        assertEquals(List.of(i(1)), open.key(), "bounds with no common prefix name the partition");
        assertEquals(List.of(i(5)), open.range().start());
        assertTrue(open.range().startInclusive());
        assertEquals(List.of(i(9)), open.range().end());
        assertFalse(open.range().endInclusive());

        assertEquals(List.of(i(1), i(3)), prefix.key(), "a prefix deletion is keyed by its prefix");
        assertEquals(List.of(i(3)), prefix.range().start());
        assertEquals(List.of(i(3)), prefix.range().end());
        assertTrue(prefix.range().startInclusive() && prefix.range().endInclusive());

        assertEquals(List.of(i(1), i(3)), tail.key());
        assertEquals(List.of(i(3), i(4)), tail.range().start());
        assertFalse(tail.range().startInclusive());
        assertNotEquals(prefix.id(), tail.id(), "one prefix and timestamp, two ranges: two tasks");
    }

    @Test
    void shouldCarryOnlyAFlowsColumnsAndKeepTheOthersAsSetOrDeleted()
    {
        WriteCapture write = capture(events, "{\"narrow\": {\"events\": " + ALL_EVENTS + ", \"columns\": [\"v\"]},"
                                             + " \"wide\": {\"events\": " + ALL_EVENTS + "}}");
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a"), cell("w", 11, "b")));
        write.insertRow(row(3, SourceChange.NONE, SourceChange.NONE, cell("v", 10, "c"), tombstone("w", 12)));
        write.finish();
        List<Task> narrow = sink.tasks().stream().filter(t -> t.flow().equals("narrow")).collect(Collectors.toList());
        List<Task> wide = sink.tasks().stream().filter(t -> t.flow().equals("wide")).collect(Collectors.toList());

        assertEquals(i(1), narrow.get(0).values().get("p"), "key columns are always carried");
        assertEquals(i(2), narrow.get(0).values().get("c"));
        assertEquals(t("a"), narrow.get(0).values().get("v"));
        assertEquals(ByteBuffer.allocate(0), narrow.get(0).values().get("w"), "set, but not carried: an empty value");
        assertEquals(11, narrow.get(0).timestampOf("w"), "with its timestamp: the flow knows the write set it, and when");
        assertTrue(narrow.get(1).values().containsKey("w"));
        assertNull(narrow.get(1).values().get("w"), "a tombstone stays a tombstone");
        assertEquals(12, narrow.get(1).timestampOf("w"));

        assertEquals(t("b"), wide.get(0).values().get("w"), "a flow without 'columns' carries every column");
        assertNull(wide.get(1).values().get("w"));
        assertEquals(t("c"), wide.get(1).values().get("v"));
    }
}
