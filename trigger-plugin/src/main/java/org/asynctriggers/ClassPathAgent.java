package org.asynctriggers;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * {@code -javaagent:async-triggers-plugin.jar}: the JVM puts an agent's jar on the system class path, which is where
 * Cassandra loads index classes from ({@link CaptureIndex}); this is how a node gets the plugin (one line in
 * {@code jvm-server.options}, nothing copied into Cassandra's {@code lib/}).
 * <p>
 * It also says that the plugin is there, before any flow exists: it sets the system properties
 * {@value #VERSION_PROPERTY} (the jar's version) and {@value #SHA256_PROPERTY} (the jar's content hash, so two
 * builds of one version differ). Cassandra shows every property named {@code cassandra.*} in the node-local virtual
 * table {@code system_views.system_properties}, which is what {@code ctl plugin check} reads from each node over CQL.
 * It touches no Cassandra class: the node has not started yet. The plugin itself starts when Cassandra loads the
 * first capture index.
 */
public final class ClassPathAgent
{
    public static final String VERSION_PROPERTY = "cassandra.async_triggers.version";
    public static final String SHA256_PROPERTY = "cassandra.async_triggers.jar_sha256";
    public static final String JAR_PROPERTY = "cassandra.async_triggers.jar";

    private ClassPathAgent()
    {
    }

    public static void premain(String args, Instrumentation instrumentation)
    {
        announce();
    }

    /** Sets the properties above; a jar that cannot be read still announces its version ("unknown" hash). */
    static void announce()
    {
        String version = ClassPathAgent.class.getPackage().getImplementationVersion();
        System.setProperty(VERSION_PROPERTY, version == null ? "unknown" : version);
        Path jar = ownJar();
        if (jar != null)
            System.setProperty(JAR_PROPERTY, jar.toString());
        System.setProperty(SHA256_PROPERTY, jar == null ? "unknown" : sha256(jar));
    }

    private static Path ownJar()
    {
        CodeSource source = ClassPathAgent.class.getProtectionDomain().getCodeSource();
        if (source == null || source.getLocation() == null)
            return null;
        try
        {
            return Path.of(source.getLocation().toURI());
        }
        catch (URISyntaxException | IllegalArgumentException e)
        {
            return null;
        }
    }

    static String sha256(Path file)
    {
        try (InputStream in = Files.newInputStream(file))
        {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; )
                digest.update(buffer, 0, n);
            StringBuilder hex = new StringBuilder();
            for (byte b : digest.digest())
                hex.append(String.format("%02x", b));
            return hex.toString();
        }
        catch (IOException | NoSuchAlgorithmException e)
        {
            return "unknown";
        }
    }
}
