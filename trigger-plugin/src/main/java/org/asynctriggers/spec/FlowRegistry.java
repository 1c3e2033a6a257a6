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

    /** Pauses or resumes the flow of this name (any version, applied or not yet); called on every poll, before apply. */
    void paused(String name, boolean paused);
}
