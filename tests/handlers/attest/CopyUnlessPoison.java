package attest;

import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.api.TaskContext;

/** A handler flow for tests/cluster/test_handler_flow.py: copies src to dst, and throws for the value "poison". */
public class CopyUnlessPoison implements FlowHandler
{
    @Override
    public void execute(TaskContext ctx)
    {
        Object value = ctx.get("v");
        if ("poison".equals(value))
            throw new IllegalStateException("poison value for key " + ctx.get("id"));
        ctx.execute("INSERT INTO hnd.dst (id, v) VALUES (?, ?) USING TIMESTAMP ?", ctx.get("id"), value, ctx.timestamp());
    }
}
