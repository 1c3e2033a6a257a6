package org.asynctriggers.metrics;

/** JMX face of the plugin on one node, {@code org.asynctriggers:type=Runtime}. */
public interface NodeStatusMBean
{
    String[] getFlowNames();

    /** The flows were read once: captured tasks are queued, not parked. */
    boolean isReady();

    /** Identifies the node's plugin instance in logs. */
    String getId();

    /** Tasks captured here for a flow this node has not applied yet (they wait for it, bounded). */
    int getParkedTasks();
}
