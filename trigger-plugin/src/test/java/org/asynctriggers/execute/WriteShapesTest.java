package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.KeyRange;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The derived rows of each CQL write shape (docs/design.md, "Write shapes"), on the fake: partial updates whose task
 * runs on a replica that missed a write, equal timestamps, and range, partition and prefix deletions of a source with
 * clustering columns, for a target laid out as the source, one laid out otherwise, and a lineage index.
 */
class WriteShapesTest
{
    static Task change(FlowSpec spec, Operation op, List<ByteBuffer> key, long ts, Map<String, ByteBuffer> values, KeyRange range)
    {
        Map<String, Long> timestamps = new LinkedHashMap<>();
        values.keySet().forEach(c -> timestamps.put(c, ts));
        return Task.of(spec, new SourceChange(op, key, ts, values, timestamps, Map.of(), 0,
                                              op == Operation.INSERT ? ts : SourceChange.NONE, op == Operation.DELETE ? ts : SourceChange.NONE,
                                              false, range), 0);
    }

    @Nested
    class PartialUpdates
    {
        private final FakeGateway gateway = Fixtures.usersGateway();
        private final FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        private Task write(Operation op, long ts, Object... values)
        {
            Map<String, ByteBuffer> row = row(values);
            row.put("id", bigint(1));
            return change(spec, op, List.of(bigint(1)), ts, row, null);
        }

        private List<String> index()
        {
            return gateway.rows("app", "users_by_name").stream()
                          .map(r -> string(r.get("name")) + "/" + string(r.get("email"))).sorted().collect(Collectors.toList());
        }

        @Test
        void shouldFollowTheRenameWhenAnEmailUpdateRanOnAReplicaThatMissedIt()
        {
            assertSuccess(runAll(executor, gateway.applied("app", "users", write(Operation.INSERT, 10, "name", "ann", "email", "a@x"))));
            Task rename = write(Operation.UPDATE, 20, "name", "bea", "email", "b@x"); // written at ONE to the other replica only
            // the email update reaches this replica, which still has "ann", and its task runs here
            assertSuccess(runAll(executor, gateway.applied("app", "users", write(Operation.UPDATE, 30, "email", "new@x"))));
            assertEquals(List.of("ann/new@x"), index(), "what this replica knows");

            gateway.applied("app", "users", rename);           // read repair (or the rename's hint) lands here
            assertSuccess(runAll(executor, rename));           // and its task runs
            assertEquals(List.of("bea/new@x"), index(), "the later name with the later email; no row of the old name");
        }

        @Test
        void shouldRecordAReadBackImageAtItsOwnWriteTimeNotTheTasks()
        {
            gateway.applied("app", "users", write(Operation.INSERT, 10, "name", "ann", "email", "a@x"));
            Task email = gateway.applied("app", "users", write(Operation.UPDATE, 30, "email", "new@x"));
            Task rename = gateway.applied("app", "users", write(Operation.UPDATE, 20, "name", "bea"));
            assertSuccess(runAll(executor, email));
            assertSuccess(runAll(executor, rename));
            assertEquals(List.of("bea/new@x"), index());
        }

        @Test
        void shouldGiveEqualTimestampWritesOfOneRowDistinctTasksThatBothRun()
        {
            Task one = gateway.applied("app", "users", write(Operation.INSERT, 10, "name", "ann", "email", "a@x"));
            Task two = gateway.applied("app", "users", write(Operation.INSERT, 10, "name", "ann", "email", "z@x"));
            assertNotEquals(one.id(), two.id(), "two writes with one timestamp are two tasks");
            assertSuccess(runAll(executor, one));
            assertSuccess(runAll(executor, two));
            assertEquals(List.of("ann/z@x"), index(), "Cassandra keeps the greater value of a tie, and so does the index");
        }
    }

    @Nested
    class RangeDeletes
    {
        private final FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace()
                                                             .table("app", "posts", List.of("u"), List.of("p"))
                                                             .table("app", "posts_copy", List.of("u"), List.of("p"))
                                                             .table("app", "posts_by_tag", List.of("tag"), List.of("u", "p"))
                                                             .table("app", "posts_by_tag_u", List.of("u"), List.of("tag", "p"));
        private final FlowSpec spec = FlowSpecParser.parse("{\"name\": \"posts\","
            + "\"source\": {\"keyspace\": \"app\", \"table\": \"posts\", \"partition_key\": [\"u\"], \"clustering\": [\"p\"],"
            + "  \"columns\": {\"u\": \"bigint\", \"p\": \"bigint\", \"tag\": \"text\"}},"
            + "\"targets\": ["
            + " {\"keyspace\": \"app\", \"table\": \"posts_copy\", \"partition_key\": [\"u\"], \"clustering\": [\"p\"],"
            + "  \"columns\": {\"u\": \"source.u\", \"p\": \"source.p\", \"tag\": \"source.tag\"}, \"mode\": \"direct\"},"
            + " {\"keyspace\": \"app\", \"table\": \"posts_by_tag\", \"partition_key\": [\"tag\"], \"clustering\": [\"u\", \"p\"],"
            + "  \"columns\": {\"tag\": \"source.tag\", \"u\": \"source.u\", \"p\": \"source.p\"}, \"mode\": \"lineage\", \"lineage_columns\": [\"tag\"]},"
            + " {\"keyspace\": \"app\", \"table\": \"posts_by_tag_u\", \"partition_key\": [\"u\"], \"clustering\": [\"tag\", \"p\"],"
            + "  \"columns\": {\"u\": \"source.u\", \"tag\": \"source.tag\", \"p\": \"source.p\"}, \"mode\": \"lineage\", \"lineage_columns\": [\"tag\"]}"
            + "]}", null, 1);
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        RangeDeletes()
        {
            for (long u = 1; u <= 2; u++)
                for (long p = 1; p <= 8; p++)
                    assertSuccess(runAll(executor, gateway.applied("app", "posts", change(spec, Operation.INSERT, List.of(bigint(u), bigint(p)), 10,
                                                                                          row("u", u, "p", p, "tag", "t" + (p % 3)), null))));
        }

        private TreeSet<String> keys(String table)
        {
            return gateway.rows("app", table).stream().map(r -> longOf(r.get("u")) + ":" + longOf(r.get("p")))
                          .collect(Collectors.toCollection(TreeSet::new));
        }

        private TreeSet<String> source()
        {
            return keys("posts");
        }

        private void run(Task task)
        {
            assertSuccess(runAll(executor, gateway.applied("app", "posts", task)));
        }

        @Test
        void shouldDeleteExactlyTheDerivedRowsOfARangeDeletion()
        {
            run(change(spec, Operation.DELETE, List.of(bigint(1)), 20, row("u", 1L), new KeyRange(List.of(bigint(5)), true, List.of(), true)));
            assertEquals(12, source().size(), "posts 5-8 of user 1 are gone");
            for (String table : List.of("posts_copy", "posts_by_tag", "posts_by_tag_u"))
                assertEquals(source(), keys(table), table);
            assertTrue(gateway.executed.contains("DELETE FROM \"app\".\"posts_copy\" USING TIMESTAMP ? WHERE \"u\" = ? AND \"p\" >= ?"),
                       "a target laid out as the source gets the same range tombstone");
        }

        @Test
        void shouldDeleteExactlyTheDerivedRowsOfAPartitionDeletion()
        {
            run(change(spec, Operation.DELETE, List.of(bigint(2)), 20, row("u", 2L), null));
            for (String table : List.of("posts_copy", "posts_by_tag", "posts_by_tag_u"))
                assertEquals(source(), keys(table), table);
            assertEquals(8, keys("posts_by_tag").size());
        }

        @Test
        void shouldNotBringBackARowWhoseTaskRunsAfterTheRangeDeletion()
        {
            Task late = gateway.applied("app", "posts", change(spec, Operation.UPDATE, List.of(bigint(1), bigint(6)), 15,
                                                              row("u", 1L, "p", 6L, "tag", "late"), null));
            run(change(spec, Operation.DELETE, List.of(bigint(1)), 20, row("u", 1L), new KeyRange(List.of(bigint(5)), true, List.of(bigint(7)), false)));
            assertSuccess(runAll(executor, late)); // its write was older than the deletion; its task runs after it
            for (String table : List.of("posts_copy", "posts_by_tag", "posts_by_tag_u"))
                assertEquals(source(), keys(table), table);
        }

        /**
         * The differential test's seed 12: a new row's task reads it, then the range deletion lands and its task runs
         * before the first recorded the row in lineage_keys (two workers of the executor), so it finds none of the
         * row's derived rows to delete; the first task then writes them.
         */
        @Test
        void shouldDeleteTheRowsOfAWriteWhoseTaskReadTheRowBeforeARangeDeletionRanAlongside()
        {
            Task racing = gateway.applied("app", "posts", change(spec, Operation.INSERT, List.of(bigint(1), bigint(9)), 15,
                                                                row("u", 1L, "p", 9L, "tag", "new"), null));
            gateway.afterNextLocalRead(() -> run(change(spec, Operation.DELETE, List.of(bigint(1)), 20, row("u", 1L),
                                                        new KeyRange(List.of(bigint(5)), true, List.of(), true))));
            assertSuccess(runAll(executor, racing));
            assertFalse(source().contains("1:9"));
            for (String table : List.of("posts_copy", "posts_by_tag", "posts_by_tag_u"))
                assertEquals(source(), keys(table), table);
        }

        @Test
        void shouldKeepWhatAWriteNewerThanTheDeletionBroughtAndDropWhatItKeptOfOlderCells()
        {
            run(change(spec, Operation.DELETE, List.of(bigint(1)), 20, row("u", 1L), null));
            run(change(spec, Operation.INSERT, List.of(bigint(1), bigint(3)), 30, row("u", 1L, "p", 3L, "tag", "back"), null));
            for (String table : List.of("posts_copy", "posts_by_tag", "posts_by_tag_u"))
                assertEquals(source(), keys(table), table);
            List<String> tags = gateway.rows("app", "posts_by_tag").stream().filter(r -> longOf(r.get("u")) == 1)
                                       .map(r -> string(r.get("tag"))).collect(Collectors.toList());
            assertEquals(List.of("back"), tags);
        }

        @Test
        void shouldSearchATargetLaidOutOtherwiseForTheRowsOfARangeDeletion()
        {
            List<String> before = new ArrayList<>(keys("posts_by_tag_u"));
            run(change(spec, Operation.DELETE, List.of(bigint(2)), 20, row("u", 2L), new KeyRange(List.of(), true, List.of(bigint(4)), true)));
            assertEquals(source(), keys("posts_by_tag_u"));
            assertEquals(before.size() - 4, keys("posts_by_tag_u").size());
        }
    }

    @Nested
    class StaticColumns
    {
        private final FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace()
                                                             .table("app", "events", List.of("p"), List.of("c"))
                                                             .table("app", "events_copy", List.of("p"), List.of("c"));
        private final FlowSpec spec = FlowSpecParser.parse("{\"name\": \"copy\","
            + "\"source\": {\"keyspace\": \"app\", \"table\": \"events\", \"partition_key\": [\"p\"], \"clustering\": [\"c\"],"
            + "  \"columns\": {\"p\": \"bigint\", \"c\": \"bigint\", \"s\": \"text\", \"v\": \"text\"}},"
            + "\"targets\": [{\"keyspace\": \"app\", \"table\": \"events_copy\", \"partition_key\": [\"p\"], \"clustering\": [\"c\"],"
            + "  \"columns\": {\"p\": \"source.p\", \"c\": \"source.c\", \"s\": \"source.s\", \"v\": \"source.v\"},"
            + "  \"mode\": \"lineage\", \"lineage_columns\": []}]}", null, 1); // a static column's copy: as ctl renders it
        private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

        private Task staticWrite(long ts, String value)
        {
            Map<String, ByteBuffer> values = row("p", 1L, "s", value);
            return Task.of(spec, new SourceChange(Operation.UPDATE, List.of(bigint(1)), ts, values, Map.of("s", ts), Map.of(), 0,
                                                  SourceChange.NONE, SourceChange.NONE, true), 0);
        }

        /** Applies the write to the source, then runs its task to its end. */
        private void run(Task task)
        {
            assertSuccess(runAll(executor, gateway.applied("app", "events", task)));
        }

        private List<String> statics()
        {
            return gateway.rows("app", "events_copy").stream().map(r -> longOf(r.get("c")) + "=" + string(r.get("s"))).sorted()
                          .collect(Collectors.toList());
        }

        @Test
        void shouldGiveAStaticChangeToTheDerivedRowOfEveryRowOfThePartition()
        {
            for (long c = 1; c <= 3; c++)
                run(change(spec, Operation.INSERT, List.of(bigint(1), bigint(c)), 10,
                                                                                        row("p", 1L, "c", c, "v", "v" + c), null));
            run(staticWrite(20, "shared"));
            assertEquals(List.of("1=shared", "2=shared", "3=shared"), statics());
        }

        @Test
        void shouldGiveANewRowThePartitionsStaticValue()
        {
            gateway.applied("app", "events", change(spec, Operation.INSERT, List.of(bigint(1), bigint(1)), 10, row("p", 1L, "c", 1L, "v", "a"), null));
            run(staticWrite(20, "shared"));
            run(change(spec, Operation.INSERT, List.of(bigint(1), bigint(2)), 30,
                                                                                    row("p", 1L, "c", 2L, "v", "b"), null));
            assertEquals(List.of("1=shared", "2=shared"), statics(), "the new row's task reads the static value back, with its write time");
        }

        private Task rowWrite(long c, long ts, String v)
        {
            return change(spec, Operation.INSERT, List.of(bigint(1), bigint(c)), ts, row("p", 1L, "c", c, "v", v), null);
        }

        private Task rowDelete(long c, long ts)
        {
            return change(spec, Operation.DELETE, List.of(bigint(1), bigint(c)), ts, row("p", 1L, "c", c), null);
        }

        @Test
        void shouldKeepTheStaticValueInARowDeletedAndWrittenAgain()
        {
            run(rowWrite(1, 10, "a"));
            run(rowWrite(2, 10, "b"));
            run(staticWrite(20, "shared"));
            run(rowDelete(1, 30));
            run(change(spec, Operation.DELETE, List.of(bigint(1)), 31,
                                                                                    row("p", 1L), new KeyRange(List.of(bigint(2)), true, List.of(bigint(2)), true)));
            assertEquals(List.of(), statics(), "the deleted rows are gone, the static value stays in the source's static row");
            run(rowWrite(1, 40, "a2"));
            run(rowWrite(2, 41, "b2"));
            assertEquals(List.of("1=shared", "2=shared"), statics(), "a row written again after its deletion has the partition's static value");
            run(staticWrite(50, "newest"));
            assertEquals(List.of("1=newest", "2=newest"), statics());
        }

        /** Runs tasks on the fake's clock, which the TTL tests move. */
        private final FlowExecutor clocked = new FlowExecutor(spec, gateway, null, c -> null, null, () -> gateway.nowSeconds * 1000);

        /** An insert of row {@code c} whose marker and cell expire at {@code expires}. */
        private Task insertExpiring(long c, long ts, String v, long expires)
        {
            return Task.of(spec, new SourceChange(Operation.INSERT, List.of(bigint(1), bigint(c)), ts, row("p", 1L, "c", c, "v", v),
                                                  Map.of("v", ts), Map.of("v", expires), expires, ts, SourceChange.NONE, false, null), 0);
        }

        @Test
        void shouldLetTheDerivedRowOfARowWhoseCellsAllExpireExpireWithItsStaticCopy()
        {
            long expires = gateway.nowSeconds + 10;
            assertSuccess(runAll(clocked, gateway.applied("app", "events", insertExpiring(1, 10, "a", expires))));
            assertSuccess(runAll(clocked, gateway.applied("app", "events", rowWrite(2, 10, "b"))));
            assertSuccess(runAll(clocked, gateway.applied("app", "events", staticWrite(20, "shared"))));
            assertEquals(List.of("1=shared", "2=shared"), statics());
            gateway.nowSeconds = expires;
            assertEquals(List.of("2=shared"), statics(), "the static copy lives no longer than the row it was copied into");
        }

        @Test
        void shouldKeepTheStaticCopyOfARowWhoseTtlALaterWriteMadePermanent()
        {
            long expires = gateway.nowSeconds + 10;
            assertSuccess(runAll(clocked, gateway.applied("app", "events", insertExpiring(1, 10, "a", expires))));
            assertSuccess(runAll(clocked, gateway.applied("app", "events", staticWrite(20, "shared"))));
            Task permanent = Task.of(spec, new SourceChange(Operation.UPDATE, List.of(bigint(1), bigint(1)), 30, row("p", 1L, "c", 1L, "v", "b"),
                                                            Map.of("v", 30L), Map.of(), 0, SourceChange.NONE, SourceChange.NONE, false, null), 0);
            assertSuccess(runAll(clocked, gateway.applied("app", "events", permanent)));
            gateway.nowSeconds = expires + 1;
            assertEquals(List.of("1=shared"), statics(), "the row lives on through its permanent cell, and so does its static copy");
        }

            @Test
        void shouldLetADeletionAtTheTimestampOfTheRowsWriteShadowItsStaticCopy()
        {
            // the row and its static value written at one timestamp, then the row deleted at exactly that timestamp:
            // the deletion wins the tie in the source, and must in the derived row (the differential test's seed 29)
            run(staticWrite(20, "shared"));
            run(rowWrite(1, 20, "a"));
            assertEquals(List.of("1=shared"), statics());
            run(rowDelete(1, 20));
            assertEquals(List.of(), statics(), "no derived row is left of the deleted row, nor its static copy");
        }

            private Task rowUpdate(long c, long ts, String v)
        {
            return change(spec, Operation.UPDATE, List.of(bigint(1), bigint(c)), ts, row("p", 1L, "c", c, "v", v), null);
        }

        @Test
        void shouldDeleteTheStaticCopyOfARowMadeByUpdateAloneWhenItsLastCellIsDeleted()
        {
            // the differential test's seed 13: UPDATE ... SET v, then DELETE v: the row is gone, its static value stays
            // in the partition; the derived row must go, static copy and all
            run(rowUpdate(1, 10, "a"));
            run(rowWrite(2, 10, "b"));
            run(staticWrite(20, "shared"));
            assertEquals(List.of("1=shared", "2=shared"), statics());
            run(rowUpdate(1, 30, null));
            assertEquals(List.of("2=shared"), statics(), "row 1 is gone in the source");
            run(rowUpdate(1, 25, "older"));
            assertEquals(List.of("2=shared"), statics(), "a write older than the deletion leaves the row gone");
            run(rowUpdate(1, 40, "again"));
            assertEquals(List.of("1=shared", "2=shared"), statics(), "the row is back, with its partition's static value");
            assertEquals("again", string(gateway.rows("app", "events_copy").get(0).get("v")));
            run(rowUpdate(1, 50, null));
            assertEquals(List.of("2=shared"), statics(), "gone again");
            run(rowUpdate(1, 45, "between"));
            assertEquals(List.of("2=shared"), statics());
            run(rowUpdate(1, 60, "last"));
            run(staticWrite(70, "newest"));
            assertEquals(List.of("1=newest", "2=newest"), statics(), "back again, and a static change reaches it");
        }

        @Test
        void shouldDeleteTheStaticCopyOfAGoneRowOnAReplicaThatMissedTheStaticWrite()
        {
            // the differential test's seed 13 with a node down: the task that finds the row gone runs on the replica
            // that missed the static write, whose copy the other replica's task wrote
            run(rowUpdate(1, 10, "a"));
            run(staticWrite(20, "shared"));
            assertEquals(List.of("1=shared"), statics());
            gateway.staticsMissedHere = true;
            run(rowUpdate(1, 30, null));
            assertEquals(List.of(), statics(), "the copy goes above the static value's write time read from every replica");
            boolean atAll = false;
            for (int i = 0; i < gateway.executed.size(); i++)
                atAll |= gateway.executed.get(i).equals("READ ROW app.events") && gateway.consistencies.get(i) == org.apache.cassandra.db.ConsistencyLevel.ALL;
            assertTrue(atAll, "the row and its static row read at ALL");
        }

        @Test
        void shouldGiveANewRowTheStaticValueItsReplicaMissed()
        {
            // the differential test's seed 4: the static write reached one replica (a node down, hints off), its task
            // ran there before the row existed; the new row's task runs on the replica that missed it
            run(rowWrite(1, 10, "a"));
            run(staticWrite(20, "shared"));
            gateway.staticsMissedHere = true;
            run(rowUpdate(2, 30, "b"));
            assertEquals(List.of("1=shared", "2=shared"), statics(), "the static value read at the flow's level");
        }

        @Test
        void shouldKeepTheStaticCopyOfARowWrittenAgainWhileItsGoneTaskTakesItsVersion()
        {
            // the task that finds the row gone is about to take its version when the row is written again and that
            // write's task runs whole, taking a version first: the gone task takes a newer one, reads the row back,
            // and its copy stays
            run(rowUpdate(1, 10, "a"));
            run(staticWrite(20, "shared"));
            boolean[] once = {false};
            gateway.beforeEach = cql -> {
                if (cql.startsWith("UPDATE \"async_triggers\".\"lineage_versions\"") && !once[0])
                {
                    once[0] = true;
                    run(rowUpdate(1, 40, "back"));
                }
            };
            run(rowUpdate(1, 30, null));
            assertTrue(once[0], "the version was taken by the other task first");
            assertEquals(List.of("1=shared"), statics(), "the row is back: its copy stays");
        }

        @Test
        void shouldDeleteTheStaticCopyOfARowDeletedAfterANewerStaticWrite()
        {
            // the static value is newer than the row's deletion: the row's tombstone alone would leave the copy
            run(rowWrite(1, 10, "a"));
            run(rowWrite(2, 10, "b"));
            run(staticWrite(40, "shared"));
            run(rowDelete(1, 30));
            assertEquals(List.of("2=shared"), statics());
            run(rowWrite(1, 35, "again"));
            assertEquals(List.of("1=shared", "2=shared"), statics(), "written again after its deletion, before the static value");
        }

        @Test
        void shouldDeleteTheDerivedRowOfARowDeletedAfterTheStaticWrite()
        {
            run(rowWrite(1, 10, "a"));
            run(staticWrite(20, "shared"));
            run(rowWrite(2, 25, "b"));
            run(rowDelete(1, 30));
            assertEquals(List.of("2=shared"), statics());
        }
    }
}
