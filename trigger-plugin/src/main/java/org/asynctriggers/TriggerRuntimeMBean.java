package org.asynctriggers;

/** JMX face of the node's runtime, {@code org.asynctriggers:type=Runtime}. */
public interface TriggerRuntimeMBean
{
    String[] getFlowNames();

    /** The flows were read once: captured tasks are queued, not parked. */
    boolean isReady();

    /** Identifies the runtime in logs. */
    String getId();

    /** Tasks captured here for a flow this node has not applied yet (they wait for it, bounded). */
    int getParkedTasks();
}
