package org.asynctriggers.api;

/**
 * A flow written in Java instead of declarative targets. Named by the flow spec's {@code handler}; one instance per
 * flow version, called from the flow's worker threads, possibly concurrently and possibly more than once per task
 * (delivery is at least once): implementations must be thread safe and idempotent, which writes carrying
 * {@link TaskContext#timestamp()} are.
 */
public interface FlowHandler
{
    void execute(TaskContext ctx) throws Exception;
}
