package org.asynctriggers.task;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.ByteBuffer;
import java.util.List;

import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.KeyCodec;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TaskTest
{
    private final Task task = new Task("f", 3, List.of(bigint(1), text("k")), Operation.UPDATE, 42, row("v", "x", "gone", null), 7);

    @Test
    void shouldSurviveJavaSerialization() throws Exception
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes))
        {
            out.writeObject(task);
        }
        Task copy;
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray())))
        {
            copy = (Task) in.readObject();
        }
        assertEquals(task.toString(), copy.toString());
        assertEquals(task.key(), copy.key());
        assertEquals(task.values(), copy.values());
        assertEquals(7, copy.createdNanos());
        assertEquals(3, copy.flowVersion());
    }

    @Test
    void shouldReadATaskStoredUnderItsFormerClassName()
    {
        // a blob as the plugin wrote it before its packages (backup entries, spill files, dead letters outlive an upgrade)
        byte[] now = bytes(task.serialize());
        byte[] former = renamed(now, Task.class.getName(), Task.FORMER_NAME);
        Task copy = Task.deserialize(ByteBuffer.wrap(former));
        assertEquals(task.toString(), copy.toString());
        assertEquals(task.key(), copy.key());
        assertEquals(task.values(), copy.values());
        assertThrows(IllegalArgumentException.class,
                     () -> Task.deserialize(ByteBuffer.wrap(renamed(now, Task.class.getName(), "org.asynctriggers.Tusk"))),
                     "another class name is still refused");
    }

    @Test
    void shouldReadATaskStoredBeforeTtlsWereCapturedAsHavingNone() throws Exception
    {
        // written by the plugin as it was before TTL propagation (a Task without its two TTL fields), to show that
        // backup entries, spill files and dead letters of that version still read after an upgrade
        byte[] stored;
        try (java.io.InputStream in = TaskTest.class.getResourceAsStream("task-before-ttl.ser"))
        {
            stored = in.readAllBytes();
        }
        Task old = Task.deserialize(ByteBuffer.wrap(stored));
        assertEquals("update key=0x0000000000000001:6b ts=42 flow=f v3 attempts=1", old.toString());
        assertEquals(task.values(), old.values());
        assertEquals(Task.idOf("f", task.key(), 42, new byte[0]), old.id(), "a stored task keeps the id its entry was written under");
        assertEquals(java.util.Map.of(), old.expirations());
        assertEquals(0, old.rowExpiresAt());
        Task again = Task.deserialize(old.failedOnce().serialize());
        assertEquals(java.util.Map.of(), again.expirations(), "and stays without TTL once written again by this version");
        assertEquals(2, again.attempts());
    }

    @Test
    void shouldCarryItsExpirationsThroughSerializationAndRetries()
    {
        Task expiring = new Task("f", 3, List.of(bigint(1)), Operation.INSERT, 42, row("v", "x", "w", "y"),
                                 java.util.Map.of("v", 1_700_000_020L), 1_700_000_030L, 7);
        Task copy = Task.deserialize(expiring.failedOnce().resumeAt(1, ByteBuffer.wrap(new byte[]{ 1 })).serialize());
        assertEquals(java.util.Map.of("v", 1_700_000_020L), copy.expirations());
        assertEquals(1_700_000_030L, copy.rowExpiresAt());
        assertEquals(expiring.id(), copy.id(), "the id does not depend on the TTL: every replica computes it alike");
        assertTrue(copy.toString().endsWith(" expiring=[v]+row"), copy.toString());
        assertEquals(java.util.Map.of(), task.expirations());
        assertEquals(0, task.rowExpiresAt());
    }

    /** The blob with the class name of its descriptor (a length-prefixed modified UTF-8 string) replaced. */
    private static byte[] renamed(byte[] blob, String from, String to)
    {
        byte[] old = prefixed(from), now = prefixed(to);
        for (int i = 0; i + old.length <= blob.length; i++)
        {
            if (java.util.Arrays.equals(blob, i, i + old.length, old, 0, old.length))
            {
                byte[] out = new byte[blob.length - old.length + now.length];
                System.arraycopy(blob, 0, out, 0, i);
                System.arraycopy(now, 0, out, i, now.length);
                System.arraycopy(blob, i + old.length, out, i + now.length, blob.length - i - old.length);
                return out;
            }
        }
        throw new AssertionError(from + " is not in the blob");
    }

    private static byte[] prefixed(String name)
    {
        byte[] utf = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] out = new byte[utf.length + 2];
        out[0] = (byte) (utf.length >> 8);
        out[1] = (byte) utf.length;
        System.arraycopy(utf, 0, out, 2, utf.length);
        return out;
    }

    private static byte[] bytes(ByteBuffer buffer)
    {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }

    @Test
    void shouldKeepANullValueDistinctFromAnAbsentOne()
    {
        assertTrue(task.values().containsKey("gone"));
        assertNull(task.values().get("gone"));
        assertFalse(task.values().containsKey("other"));
    }

    @Test
    void shouldHandOutWritableCopiesThatCannotChangeTheTask()
    {
        ByteBuffer v = task.values().get("v");
        assertFalse(v.isReadOnly(), "Cassandra's FastByteOperations mistakes read-only heap buffers for direct ones");
        v.put(0, (byte) 'y');
        assertEquals(text("x"), task.values().get("v"));
    }

    @Test
    void shouldRoundTripKeysThroughTheKeyCodec()
    {
        assertEquals(task.key(), KeyCodec.decode(task.serializedKey()));
        assertEquals(List.of(), KeyCodec.decode(KeyCodec.encode(List.of())));
        assertEquals(List.of(ByteBuffer.allocate(0)), KeyCodec.decode(KeyCodec.encode(List.of(ByteBuffer.allocate(0)))));
    }

    @Test
    void shouldRejectACorruptKeyBlob()
    {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KeyCodec.decode(ByteBuffer.wrap(new byte[]{ 0, 0, 0, 9, 1 })));
        assertEquals("corrupt key blob: component length 9 with 1 bytes left", e.getMessage());
    }

    @Test
    void shouldCarryItsAttemptsThroughSerialization()
    {
        Task retried = task.failedOnce().failedOnce();
        assertEquals(0, task.attempts(), "immutable: the original is unchanged");
        Task copy = Task.deserialize(retried.serialize());
        assertEquals(2, copy.attempts());
        assertEquals(7, copy.createdNanos());
        assertEquals(task.values(), copy.values());
        Task restarted = copy.restarted(99);
        assertEquals(0, restarted.attempts());
        assertEquals(99, restarted.createdNanos());
        assertEquals(task.toString(), restarted.toString());
    }

    @Test
    void shouldRefuseToDeserializeAnythingButATask() throws Exception
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes))
        {
            out.writeObject(new java.util.concurrent.atomic.AtomicLong(3));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Task.deserialize(ByteBuffer.wrap(bytes.toByteArray())));
        assertTrue(e.getMessage().startsWith("not a serialized task: "), e.getMessage());
    }
}
