package org.asynctriggers.task;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Tasks stored by earlier versions of the plugin (backup entries, spill files and dead letters outlive an upgrade)
 * read back as they were: every field, the id their entries are keyed by included.
 */
class StoredTaskFormatsTest
{
    private static byte[] resource(String name) throws Exception
    {
        try (InputStream in = StoredTaskFormatsTest.class.getResourceAsStream(name))
        {
            if (in == null)
                throw new AssertionError("no test resource " + name);
            return in.readAllBytes();
        }
    }

    private static Map<String, String> described(String folder) throws Exception
    {
        Map<String, String> out = new LinkedHashMap<>();
        for (String line : new String(resource(folder + "/described.txt"), StandardCharsets.UTF_8).split("\n"))
            out.put(line.substring(0, line.indexOf(": ")), line.substring(line.indexOf(": ") + 2));
        return out;
    }

    @Test
    void shouldReadEveryTaskStoredWithJavaSerialization() throws Exception
    {
        Map<String, String> stored = described("stored-java");
        Map<String, Task> samples = StoredTaskSamples.samples();
        assertEquals(samples.keySet(), stored.keySet());
        for (Map.Entry<String, String> e : stored.entrySet())
        {
            Task read = Task.deserialize(ByteBuffer.wrap(resource("stored-java/" + e.getKey() + ".ser")));
            assertEquals(e.getValue(), StoredTaskSamples.describe(read), e.getKey() + ": as it was stored");
            assertEquals(StoredTaskSamples.describe(samples.get(e.getKey())), StoredTaskSamples.describe(read),
                         e.getKey() + ": as this version builds it");
        }
    }
}
