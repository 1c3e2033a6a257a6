package org.asynctriggers;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Cassandra versions this plugin is built and tested for (CHANGELOG.md): it reads Cassandra's storage engine and
 * write path directly, so on any other version it stays out of the way. A node of an unsupported version logs why
 * once, captures nothing and runs no flow; its writes are never failed or delayed by the plugin.
 */
public final class SupportedVersion
{
    private static final Logger logger = LoggerFactory.getLogger(SupportedVersion.class);

    /** The release series supported: {@code 5.0.x}. */
    public static final String SERIES = "5.0";

    private static volatile Boolean here;

    private SupportedVersion()
    {
    }

    /** Why {@code release} (Cassandra's release version string) is not supported; null when it is. */
    static String refusal(String release)
    {
        if (release == null || release.isBlank())
            return "the Cassandra version is unknown";
        String version = release.trim();
        if (version.equals(SERIES) || version.startsWith(SERIES + "."))
            return null;
        return "Cassandra " + version + " is not supported by this plugin (supported: " + SERIES + ".x)";
    }

    /** Whether this node's Cassandra is supported; the first call on an unsupported one logs why. */
    public static boolean here()
    {
        Boolean known = here;
        if (known != null)
            return known;
        synchronized (SupportedVersion.class)
        {
            if (here == null)
            {
                String why = refusal(org.apache.cassandra.utils.FBUtilities.getReleaseVersionString());
                if (why != null)
                    logger.error("Async triggers: {}: nothing is captured and no flow runs on this node; writes are not "
                                 + "affected. Install the plugin built for this Cassandra version.", why);
                here = why == null;
            }
            return here;
        }
    }
}
