package org.asynctriggers.agent;

import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;

import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * {@code -javaagent:async-triggers-agent.jar}: Cassandra loads a trigger class at the first write the node
 * coordinates, so after a restart nothing of the plugin would run (no takeover, no recovery of the node's own
 * backup entries) until a client wrote through this node. This agent waits, on a daemon thread, until the node
 * serves CQL (read through JMX, so it initialises none of Cassandra's classes early), then has Cassandra's
 * {@code TriggerExecutor} load the trigger class from the triggers directory; constructing the trigger starts the
 * plugin's runtime. It touches Cassandra only by reflection: the plugin itself stays in the triggers class loader
 * (reloadable by {@code nodetool reloadtriggers}).
 */
public final class StartAtBoot
{
    static final String TRIGGER = "org.asynctriggers.AsyncTrigger";

    private StartAtBoot()
    {
    }

    public static void premain(String args, Instrumentation instrumentation)
    {
        Thread thread = new Thread(StartAtBoot::waitThenLoad, "async-trigger-boot");
        thread.setDaemon(true);
        thread.start();
    }

    private static void waitThenLoad()
    {
        try
        {
            MBeanServer mbeans = ManagementFactory.getPlatformMBeanServer();
            ObjectName storage = new ObjectName("org.apache.cassandra.db:type=StorageService");
            while (!(mbeans.isRegistered(storage) && Boolean.TRUE.equals(mbeans.getAttribute(storage, "NativeTransportRunning"))))
                Thread.sleep(1_000);
            Class<?> executorClass = Class.forName("org.apache.cassandra.triggers.TriggerExecutor");
            Field instance = executorClass.getField("instance");
            Object executor = instance.get(null);
            executorClass.getMethod("loadTriggerInstance", String.class).invoke(executor, TRIGGER);
            System.out.println("async-triggers agent: plugin runtime started");
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        catch (Exception | LinkageError e)
        {
            System.err.println("async-triggers agent: could not start the plugin runtime at boot (it starts with the first "
                               + "write this node coordinates): " + e);
        }
    }
}
