package org.asynctriggers.task;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

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

    /** Each sample stored in {@code folder} reads back as it was stored and as this version builds it. */
    private static void assertEverySampleReadsBack(String folder, java.util.function.Consumer<byte[]> checkBlob) throws Exception
    {
        Map<String, String> stored = described(folder);
        Map<String, Task> samples = StoredTaskSamples.samples();
        assertEquals(samples.keySet(), stored.keySet());
        for (Map.Entry<String, String> e : stored.entrySet())
        {
            byte[] blob = resource(folder + "/" + e.getKey() + ".ser");
            checkBlob.accept(blob);
            Task read = Task.deserialize(ByteBuffer.wrap(blob));
            assertEquals(e.getValue(), StoredTaskSamples.describe(read), e.getKey() + ": as it was stored");
            assertEquals(StoredTaskSamples.describe(samples.get(e.getKey())), StoredTaskSamples.describe(read),
                         e.getKey() + ": as this version builds it");
        }
    }

    @Test
    void shouldReadEveryTaskStoredWithJavaSerialization() throws Exception
    {
        assertEverySampleReadsBack("stored-java", blob -> assertEquals((byte) 0xAC, blob[0], "Java serialization"));
    }

    @Test
    void shouldReadEveryTaskStoredInFormatVersion1() throws Exception
    {
        assertEverySampleReadsBack("stored-v1", blob -> {
            assertEquals('A', blob[0]);
            assertEquals(1, blob[2], "format version 1");
        });
    }

    @Test
    void shouldWriteEveryTaskInItsOwnFormatAndReadItBackWhole()
    {
        for (Map.Entry<String, Task> e : StoredTaskSamples.samples().entrySet())
        {
            ByteBuffer blob = TaskCodec.encodeCurrent(e.getValue());
            assertEquals(TaskCodec.VERSION, blob.get(2), e.getKey());
            assertEquals(StoredTaskSamples.describe(e.getValue()), StoredTaskSamples.describe(TaskCodec.decode(blob)), e.getKey());
            // the compatibility mode's Java serialization reads back alike
            assertEquals(StoredTaskSamples.describe(e.getValue()),
                         StoredTaskSamples.describe(TaskCodec.decode(JavaSerializedTasks.write(e.getValue()))), e.getKey());
        }
        assertFalse(TaskCodec.WRITE_JAVA, "this format unless -D" + TaskCodec.FORMAT_PROPERTY + "=java");
    }

    @Test
    void shouldRefuseANewerFormatNamingBothVersions()
    {
        byte[] blob = bytes(TaskCodec.encodeCurrent(StoredTaskSamples.samples().get("retried")));
        blob[2] = (byte) (TaskCodec.VERSION + 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TaskCodec.decode(ByteBuffer.wrap(blob)));
        assertEquals("a task stored in format version " + (TaskCodec.VERSION + 1) + ", newer than this plugin reads ("
                     + TaskCodec.VERSION + "): a node with a newer plugin wrote it; upgrade this node", e.getMessage());
    }

    @Test
    void shouldRefuseEveryTruncatedOrExtendedBlobWithAnIllegalArgument()
    {
        for (Task task : StoredTaskSamples.samples().values())
        {
            byte[] blob = bytes(TaskCodec.encodeCurrent(task));
            for (int length = 0; length < blob.length; length++)
            {
                ByteBuffer cut = ByteBuffer.wrap(blob, 0, length);
                assertThrows(IllegalArgumentException.class, () -> TaskCodec.decode(cut), "cut at " + length);
            }
            byte[] longer = java.util.Arrays.copyOf(blob, blob.length + 1);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TaskCodec.decode(ByteBuffer.wrap(longer)));
            assertEquals("1 bytes after the last field of format version 1", e.getMessage());
        }
    }

    private static byte[] bytes(ByteBuffer b)
    {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
