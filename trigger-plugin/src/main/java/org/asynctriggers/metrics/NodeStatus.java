package org.asynctriggers.metrics;

import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The node's MBean, {@code org.asynctriggers:type=Runtime}: which flows run here, whether they were read, what waits. */
public final class NodeStatus implements NodeStatusMBean
{
    private static final Logger logger = LoggerFactory.getLogger(NodeStatus.class);
    public static final ObjectName NAME = objectName("org.asynctriggers:type=Runtime");

    private final String id = UUID.randomUUID().toString();
    private final Supplier<String[]> flowNames;
    private final BooleanSupplier ready;
    private final IntSupplier parked;

    public NodeStatus(Supplier<String[]> flowNames, BooleanSupplier ready, IntSupplier parked)
    {
        this.flowNames = flowNames;
        this.ready = ready;
        this.parked = parked;
    }

    private static ObjectName objectName(String name)
    {
        try
        {
            return new ObjectName(name);
        }
        catch (MalformedObjectNameException e)
        {
            throw new IllegalArgumentException(e);
        }
    }

    public void register(MBeanServer mbeans)
    {
        try
        {
            if (!mbeans.isRegistered(NAME))
                mbeans.registerMBean(this, NAME);
        }
        catch (Exception e)
        {
            logger.error("Could not register {}", NAME, e);
        }
    }

    public void unregister(MBeanServer mbeans)
    {
        try
        {
            if (mbeans.isRegistered(NAME))
                mbeans.unregisterMBean(NAME);
        }
        catch (Exception e)
        {
            logger.debug("Could not unregister {}: {}", NAME, e.getMessage());
        }
    }

    @Override
    public String[] getFlowNames()
    {
        return flowNames.get();
    }

    @Override
    public boolean isReady()
    {
        return ready.getAsBoolean();
    }

    @Override
    public String getId()
    {
        return id;
    }

    @Override
    public int getParkedTasks()
    {
        return parked.getAsInt();
    }
}
