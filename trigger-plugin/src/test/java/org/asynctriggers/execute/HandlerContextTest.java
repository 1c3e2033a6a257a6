package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.api.Operation;
import org.asynctriggers.api.TaskContext;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.FlowExecutorTest.assertSuccess;
import static org.asynctriggers.execute.FlowExecutorTest.runAll;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a flow's handler sees of its task and the CQL it runs. */
class HandlerContextTest
{
    /** Nested stub handler, as Cassandra's TriggersTest does with its triggers. */
    public static class RecordingHandler implements FlowHandler
    {
        static final List<TaskContext> seen = new CopyOnWriteArrayList<>();

        @Override
        public void execute(TaskContext ctx)
        {
            seen.add(ctx);
            ctx.execute("INSERT INTO \"app\".\"audit\" (\"id\", \"name\") VALUES (?, ?) USING TIMESTAMP ?",
                        ctx.key().get("id"), ctx.get("name"), ctx.timestamp());
        }
    }

    @Test
    void shouldRunAHandlerWithComposedValuesAndBoundCql()
    {
        FakeGateway gateway = Fixtures.usersGateway().table("app", "audit", List.of("id"), List.of());
        String json = Fixtures.USERS_BY_NAME.replaceFirst("\"targets\": \\[.*\\]\\}$", java.util.regex.Matcher.quoteReplacement("\"handler\": \"" + RecordingHandler.class.getName() + "\"}"));
        FlowSpec spec = FlowSpecParser.parse(json, null, 1);
        ColumnTypes types = c -> c.equals("id") ? LongType.instance : UTF8Type.instance;
        FlowExecutor executor = new FlowExecutor(spec, gateway, new RecordingHandler(), types);
        gateway.insert("app", "users", row("id", 1L, "name", "ann", "email", "old@x"), 5);
        RecordingHandler.seen.clear();

        assertSuccess(runAll(executor, Fixtures.task(spec, Operation.UPDATE, 10, List.of(bigint(1)), row("id", 1L, "email", "new@x"))));

        TaskContext ctx = RecordingHandler.seen.get(0);
        assertEquals("users_by_name", ctx.flowName());
        assertEquals(Operation.UPDATE, ctx.operation());
        assertEquals(1L, ctx.get("id"));
        assertEquals("ann", ctx.get("name"), "read back from the source row");
        assertEquals("new@x", ctx.get("email"));
        assertEquals(5, ctx.writetime("name"), "the write time of the cell read back, on the executor's replica");
        assertEquals(10, ctx.writetime("email"), "the update's own cell");
        List<Map<String, ByteBuffer>> audit = gateway.rows("app", "audit");
        assertEquals("ann", string(audit.get(0).get("name")));
        assertEquals(10, gateway.table("app", "audit").cells.values().iterator().next().get("name").ts);
    }
}
