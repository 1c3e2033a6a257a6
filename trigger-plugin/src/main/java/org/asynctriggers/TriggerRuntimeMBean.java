package org.asynctriggers;

/**
 * JMX face of the runtime, {@code org.asynctriggers:type=Runtime}. A runtime loaded by a newer class loader (after
 * {@code nodetool reloadtriggers}) calls {@code shutdown} on the previous one through the MBean server, which is the
 * only channel shared by both class loaders.
 */
public interface TriggerRuntimeMBean
{
    /** Stops accepting, drains the queues, stops every thread and unregisters every MBean of this runtime. */
    void shutdown();

    String[] getFlowNames();

    boolean isReady();

    /** Identifies the runtime (and its class loader) in logs. */
    String getId();
}
