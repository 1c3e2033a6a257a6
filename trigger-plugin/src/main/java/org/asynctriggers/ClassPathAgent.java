package org.asynctriggers;

import java.lang.instrument.Instrumentation;

/**
 * {@code -javaagent:async-triggers-plugin.jar}: the JVM puts an agent's jar on the system class path, which is where
 * Cassandra loads index classes from ({@link CaptureIndex}), so this is one way to install the plugin on a node without
 * touching its {@code lib/} directory (the other: copy the jar into {@code lib/}). It does nothing else: the plugin
 * starts when Cassandra loads the first capture index.
 */
public final class ClassPathAgent
{
    private ClassPathAgent()
    {
    }

    public static void premain(String args, Instrumentation instrumentation)
    {
    }
}
