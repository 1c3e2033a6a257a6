package org.asynctriggers.spec;

import java.util.Map;

/** What {@link FlowConfigSource} applies the flows table to. */
public interface FlowRegistry
{
    /** flow name to applied version */
    Map<String, Long> appliedVersions();

    /** Starts the flow, replacing the running version if any. @throws RuntimeException when it cannot start */
    void apply(FlowSpec spec);

    void remove(String name);
}
