package org.asynctriggers.execute;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;

import org.asynctriggers.api.FlowHandler;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecException;

/**
 * Makes the executor of each flow version this node starts: its Java handler, if any, instantiated from the triggers
 * directory, and the node's one pool of fan-out row writers, shared by every flow.
 */
public final class FlowExecutors
{
    /** a page of this many fan-out rows is written in about one round trip */
    static final int FANOUT_WRITERS = 32;

    private final CqlGateway gateway;
    private final Function<FlowSpec, ColumnTypes> columnTypes;
    private final Supplier<ClassLoader> handlerLoader;
    private final ExecutorService fanoutWriters;

    public FlowExecutors(CqlGateway gateway, Function<FlowSpec, ColumnTypes> columnTypes, Supplier<ClassLoader> handlerLoader,
                         ThreadFactory threadFactory)
    {
        this.gateway = gateway;
        this.columnTypes = columnTypes;
        this.handlerLoader = handlerLoader;
        this.fanoutWriters = fanoutWriters(threadFactory);
    }

    /** @throws FlowSpecException when the flow's handler cannot be loaded */
    public FlowExecutor executorOf(FlowSpec spec)
    {
        FlowHandler handler = spec.handler == null ? null : handlerOf(spec);
        return new FlowExecutor(spec, gateway, handler, columnTypes.apply(spec), fanoutWriters);
    }

    public void shutdown()
    {
        fanoutWriters.shutdown();
    }

    private FlowHandler handlerOf(FlowSpec spec)
    {
        try
        {
            Class<?> type = Class.forName(spec.handler, true, handlerLoader.get());
            if (!FlowHandler.class.isAssignableFrom(type))
                throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " does not implement " + FlowHandler.class.getName());
            return (FlowHandler) type.getConstructor().newInstance();
        }
        catch (ClassNotFoundException e)
        {
            throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " is not in the triggers directory");
        }
        catch (ReflectiveOperationException e)
        {
            throw new FlowSpecException("flow '" + spec.name + "': 'handler' class " + spec.handler + " cannot be instantiated: " + e);
        }
    }

    /** Threads that write fan-out rows, named {@code async-trigger-fanout-N}. */
    static ExecutorService fanoutWriters(ThreadFactory threadFactory)
    {
        AtomicInteger n = new AtomicInteger();
        return Executors.newFixedThreadPool(FANOUT_WRITERS, runnable -> {
            Thread thread = threadFactory.newThread(runnable);
            thread.setName("async-trigger-fanout-" + n.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
    }
}
