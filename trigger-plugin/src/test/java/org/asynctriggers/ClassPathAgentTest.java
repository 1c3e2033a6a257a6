package org.asynctriggers;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

class ClassPathAgentTest
{
    @Test
    void shouldAnnounceItselfInPropertiesCassandraShowsInSystemViews()
    {
        ClassPathAgent.premain(null, null);
        // Cassandra's system_views.system_properties lists every property whose name starts with "cassandra."
        assertNotNull(System.getProperty(ClassPathAgent.VERSION_PROPERTY));
        assertNotNull(System.getProperty(ClassPathAgent.SHA256_PROPERTY));
        assertEquals(true, ClassPathAgent.VERSION_PROPERTY.startsWith("cassandra."));
        assertEquals(true, ClassPathAgent.SHA256_PROPERTY.startsWith("cassandra."));
    }

    @Test
    void shouldHashTheJarsContent(@TempDir Path dir) throws Exception
    {
        Path file = dir.resolve("x.jar");
        Files.write(file, "abc".getBytes(StandardCharsets.US_ASCII));
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ClassPathAgent.sha256(file));
        assertEquals("unknown", ClassPathAgent.sha256(dir.resolve("absent.jar")));
    }
}
