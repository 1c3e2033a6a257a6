package org.asynctriggers.execute;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.OnReplica;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.execute.WriteShapesTest.change;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A lineage index that copies a static column into its rows, against row and range deletions older than the row's
 * image: they leave the source's static cell, so the copy stays, whatever its own timestamp (found in review).
 */
class LineageStaticCopyTest
{
    private final FakeGateway gateway = new FakeGateway().withAsyncTriggersKeyspace()
                                                         .table("app", "events", List.of("p"), List.of("c"))
                                                         .table("app", "events_by_v", List.of("v"), List.of("p", "c"));
    private final FlowSpec spec = FlowSpecParser.parse("{\"name\": \"by_v\","
        + "\"source\": {\"keyspace\": \"app\", \"table\": \"events\", \"partition_key\": [\"p\"], \"clustering\": [\"c\"],"
        + "  \"columns\": {\"p\": \"bigint\", \"c\": \"bigint\", \"s\": \"text\", \"v\": \"text\"}},"
        + "\"targets\": [{\"keyspace\": \"app\", \"table\": \"events_by_v\", \"partition_key\": [\"v\"], \"clustering\": [\"p\", \"c\"],"
        + "  \"columns\": {\"v\": \"source.v\", \"p\": \"source.p\", \"c\": \"source.c\", \"s\": \"source.s\"}, \"mode\": \"lineage\"}]}", null, 1);
    private final FlowExecutor executor = new FlowExecutor(spec, gateway, null, c -> null);

    private Task staticWrite(long ts, String value)
    {
        return Task.of(spec, new SourceChange(Operation.UPDATE, List.of(bigint(1)), ts, row("p", 1L, "s", value), Map.of("s", ts), Map.of(), 0,
                                              SourceChange.NONE, SourceChange.NONE, true), 0);
    }

    private List<String> index()
    {
        return gateway.rows("app", "events_by_v").stream().map(r -> string(r.get("v")) + "/" + longOf(r.get("c")) + " s=" + string(r.get("s")))
                      .sorted().collect(Collectors.toList());
    }

    @Test
    void shouldKeepTheStaticCopyThroughARowDeletionOlderThanTheImage()
    {
        assertSuccess(runAll(executor, gateway.applied("app", "events", staticWrite(5, "shared"))));
        assertSuccess(runAll(executor, gateway.applied("app", "events", change(spec, Operation.INSERT, List.of(bigint(1), bigint(1)), 20,
                                                                                row("p", 1L, "c", 1L, "v", "x"), null))));
        assertEquals(List.of("x/1 s=shared"), index());
        // a row deletion with an explicit timestamp older than the image: it deletes neither v@20 nor the static s
        assertSuccess(runAll(executor, gateway.applied("app", "events", change(spec, Operation.DELETE, List.of(bigint(1), bigint(1)), 10,
                                                                                row("p", 1L, "c", 1L), null))));
        assertEquals(List.of("x/1 s=shared"), index(), "source row (1,1): v=x@20, static s=shared@5");
    }

    @Test
    void shouldKeepTheStaticCopyThroughARangeDeletionOlderThanTheImage()
    {
        assertSuccess(runAll(executor, gateway.applied("app", "events", staticWrite(5, "shared"))));
        assertSuccess(runAll(executor, gateway.applied("app", "events", change(spec, Operation.INSERT, List.of(bigint(1), bigint(1)), 20,
                                                                                row("p", 1L, "c", 1L, "v", "x"), null))));
        assertSuccess(runAll(executor, gateway.applied("app", "events", change(spec, Operation.DELETE, List.of(bigint(1)), 10,
                                                                                row("p", 1L), new org.asynctriggers.task.KeyRange(List.of(bigint(0)), true, List.of(bigint(5)), true)))));
        assertEquals(List.of("x/1 s=shared"), index(), "source row (1,1): v=x@20, static s=shared@5");
    }

    /** one clock: the executor's replica missed the row deletion (hints on their way), and the deletion's task ran last */
    @Test
    void shouldKeepTheStaticCopyWhenTheImagesReplicaMissedTheRowDeletion()
    {
        FakeGateway stale = new FakeGateway().table("app", "events", List.of("p"), List.of("c"));
        Task st = staticWrite(5, "shared");
        gateway.applied("app", "events", st);
        stale.applied("app", "events", st);
        assertSuccess(runAll(executor, st));
        Task del = gateway.applied("app", "events", change(spec, Operation.DELETE, List.of(bigint(1), bigint(1)), 10, row("p", 1L, "c", 1L), null));
        Task ins = change(spec, Operation.INSERT, List.of(bigint(1), bigint(1)), 20, row("p", 1L, "c", 1L, "v", "x"), null);
        gateway.applied("app", "events", ins);
        stale.applied("app", "events", ins);
        assertSuccess(runAll(new FlowExecutor(spec, new OnReplica(gateway, stale), null, c -> null), ins));
        assertEquals(List.of("x/1 s=shared"), index());
        assertSuccess(runAll(executor, del));
        assertEquals(List.of("x/1 s=shared"), index(), "source row (1,1): v=x@20, static s=shared@5 (a row deletion keeps statics)");
    }

}
