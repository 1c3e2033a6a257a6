package org.asynctriggers;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class SupportedVersionTest
{
    @Test
    void shouldAcceptEveryReleaseOfThe50Series()
    {
        assertNull(SupportedVersion.refusal("5.0.9"));
        assertNull(SupportedVersion.refusal("5.0.0"));
        assertNull(SupportedVersion.refusal("5.0.10-SNAPSHOT"));
        assertNull(SupportedVersion.refusal("5.0"));
    }

    @Test
    void shouldRefuseAnyOtherSeriesNamingIt()
    {
        assertEquals("Cassandra 4.1.5 is not supported by this plugin (supported: 5.0.x)", SupportedVersion.refusal("4.1.5"));
        assertEquals("Cassandra 5.1-SNAPSHOT is not supported by this plugin (supported: 5.0.x)", SupportedVersion.refusal("5.1-SNAPSHOT"));
        assertEquals("Cassandra 5.00.1 is not supported by this plugin (supported: 5.0.x)", SupportedVersion.refusal("5.00.1"));
        assertEquals("the Cassandra version is unknown", SupportedVersion.refusal(""));
        assertEquals("the Cassandra version is unknown", SupportedVersion.refusal(null));
    }

    @Test
    void shouldSupportTheCassandraItIsBuiltAgainst()
    {
        assertNull(SupportedVersion.refusal(org.apache.cassandra.utils.FBUtilities.getReleaseVersionString()));
    }
}
