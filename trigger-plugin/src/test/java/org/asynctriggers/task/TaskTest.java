package org.asynctriggers.task;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;

import org.asynctriggers.api.Operation;
import org.asynctriggers.cql.KeyCodec;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
        byte[] now = bytes(JavaSerializedTasks.write(task));
        byte[] former = renamed(now, Task.class.getName(), JavaSerializedTasks.FORMER_NAME);
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
        assertEquals(TaskIds.idOf("f", task.key(), 42, new byte[0]), old.id(), "a stored task keeps the id its entry was written under");
        assertEquals(java.util.Map.of(), old.expirations());
        assertEquals(0, old.rowExpiresAt());
        Task again = Task.deserialize(old.failedOnce().serialize());
        assertEquals(java.util.Map.of(), again.expirations(), "and stays without TTL once written again by this version");
        assertEquals(2, again.attempts());
    }

    @Test
    void shouldReadATaskStoredUnderItsFormerClassNameWithFewerFields() throws Exception
    {
        // the plugin before its packages also had fewer fields: the blob's own field list must be the one read
        byte[] stored;
        try (java.io.InputStream in = TaskTest.class.getResourceAsStream("task-before-ttl.ser"))
        {
            stored = in.readAllBytes();
        }
        Task old = Task.deserialize(ByteBuffer.wrap(renamed(stored, Task.class.getName(), JavaSerializedTasks.FORMER_NAME)));
        assertEquals("update key=0x0000000000000001:6b ts=42 flow=f v3 attempts=1", old.toString());
        assertEquals(task.values(), old.values());
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
    void shouldTellItsKeysSizeWithoutCopyingIt()
    {
        assertEquals(task.key().size(), task.keySize());
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

    // ---- the task id: the same for the same write on every replica, different for any other write ----

    private static final List<ByteBuffer> ROW = List.of(bigint(1), text("k"));

    /** A write of one row: an INSERT of v (at 10) and w (at 12), with its own row marker. */
    private static SourceChange write(java.util.Map<String, ByteBuffer> values, java.util.Map<String, Long> timestamps)
    {
        return new SourceChange(Operation.INSERT, ROW, 12, values, timestamps, java.util.Map.of(), 0, 10, SourceChange.NONE, false);
    }

    private static java.util.UUID idOf(SourceChange change)
    {
        return Task.captured("f", change, 0).id();
    }

    private static final SourceChange WRITE = write(row("v", "x", "w", "y"), java.util.Map.of("v", 10L, "w", 12L));

    @Test
    void shouldGiveEqualWritesOneIdWhateverTheBookkeeping()
    {
        SourceChange reordered = write(row("w", "y", "v", "x"), java.util.Map.of("w", 12L, "v", 10L));
        assertEquals(idOf(WRITE), idOf(reordered), "columns in another order: the same write");
        assertEquals(idOf(WRITE), new Task("f", 7, WRITE, 99).id(), "the flow's version and the capture time are no part of it");
        assertEquals(idOf(WRITE), Task.captured("f", WRITE, 0).failedOnce().recovered(5, 1, null).id());
    }

    @Test
    void shouldGiveAnotherWriteOfTheRowAnotherId()
    {
        java.util.UUID id = idOf(WRITE);
        assertNotEquals(id, idOf(write(row("v", "x", "w", "z"), java.util.Map.of("v", 10L, "w", 12L))), "another value, one timestamp");
        assertNotEquals(id, idOf(write(row("v", "x", "w", null), java.util.Map.of("v", 10L, "w", 12L))), "a tombstone instead of a value");
        assertNotEquals(id, idOf(write(row("v", "x"), java.util.Map.of("v", 10L))), "fewer cells");
        assertNotEquals(id, idOf(write(row("v", "x", "w", "y"), java.util.Map.of("v", 11L, "w", 12L))), "a cell at another timestamp");
        assertNotEquals(id, Task.captured("g", WRITE, 0).id(), "another flow");
        assertNotEquals(id, idOf(new SourceChange(Operation.INSERT, ROW, 13, WRITE.values, WRITE.timestamps, java.util.Map.of(), 0, 10,
                                                  SourceChange.NONE, false)), "another write timestamp");
        assertNotEquals(id, idOf(new SourceChange(Operation.INSERT, ROW, 12, WRITE.values, WRITE.timestamps, java.util.Map.of(), 0, 11,
                                                  SourceChange.NONE, false)), "another row marker");
        assertNotEquals(id, idOf(new SourceChange(Operation.INSERT, ROW, 12, WRITE.values, WRITE.timestamps, java.util.Map.of(), 0, 10,
                                                  5, false)), "a row deletion as well");
        assertNotEquals(id, idOf(new SourceChange(Operation.INSERT, ROW, 12, WRITE.values, WRITE.timestamps, java.util.Map.of("v", 1_700_000_000L),
                                                  0, 10, SourceChange.NONE, false)), "a TTL on a cell");
    }

    @Test
    void shouldTellAStaticRowsChangeFromTheRowsOfItsPartition()
    {
        java.util.Map<String, ByteBuffer> values = row("id", 1L, "s", "x");
        SourceChange partition = new SourceChange(Operation.UPDATE, List.of(bigint(1)), 10, values, java.util.Map.of("s", 10L),
                                                  java.util.Map.of(), 0, SourceChange.NONE, SourceChange.NONE, false);
        SourceChange statik = new SourceChange(Operation.UPDATE, List.of(bigint(1)), 10, values, java.util.Map.of("s", 10L),
                                               java.util.Map.of(), 0, SourceChange.NONE, SourceChange.NONE, true);
        assertNotEquals(idOf(partition), idOf(statik));
    }

    private static SourceChange rangeDelete(KeyRange range)
    {
        return new SourceChange(Operation.DELETE, List.of(bigint(1)), 40, row("id", 1L), java.util.Map.of(), java.util.Map.of(), 0,
                                SourceChange.NONE, 40, false, range);
    }

    @Test
    void shouldGiveEachRangeOfOnePrefixAndTimestampItsOwnId()
    {
        KeyRange range = new KeyRange(List.of(bigint(5)), true, List.of(bigint(9)), false);
        java.util.UUID id = idOf(rangeDelete(range));
        assertEquals(id, idOf(rangeDelete(new KeyRange(List.of(bigint(5)), true, List.of(bigint(9)), false))));
        assertNotEquals(id, idOf(rangeDelete(new KeyRange(List.of(bigint(5)), false, List.of(bigint(9)), false))), "start excluded");
        assertNotEquals(id, idOf(rangeDelete(new KeyRange(List.of(bigint(5)), true, List.of(bigint(9)), true))), "end included");
        assertNotEquals(id, idOf(rangeDelete(new KeyRange(List.of(bigint(5)), true, List.of(bigint(8)), false))), "another end");
        assertNotEquals(id, idOf(rangeDelete(new KeyRange(List.of(), true, List.of(bigint(9)), false))), "unbounded start");
        assertNotEquals(id, idOf(rangeDelete(null)), "the whole partition");
    }

    @Test
    void shouldKeepItsIdRangeAndStaticFlagThroughSerialization()
    {
        KeyRange range = new KeyRange(List.of(bigint(5), text("a")), false, List.of(bigint(9)), true);
        Task ranged = Task.captured("f", rangeDelete(range), 0);
        Task copy = Task.deserialize(ranged.failedOnce().serialize());
        assertEquals(ranged.id(), copy.id());
        assertEquals(List.of(bigint(5), text("a")), copy.range().start());
        assertFalse(copy.range().startInclusive());
        assertEquals(List.of(bigint(9)), copy.range().end());
        assertTrue(copy.range().endInclusive());
        assertEquals(40, copy.deletionTimestamp());
        assertEquals(SourceChange.NONE, copy.livenessTimestamp());

        Task statik = Task.captured("f", new SourceChange(Operation.UPDATE, List.of(bigint(1)), 10, row("id", 1L, "s", "x"),
                                                          java.util.Map.of("s", 9L), java.util.Map.of(), 0, SourceChange.NONE,
                                                          SourceChange.NONE, true), 0);
        Task again = Task.deserialize(statik.serialize());
        assertEquals(statik.id(), again.id());
        assertTrue(again.isStatic());
        assertEquals(9, again.timestampOf("s"));
        assertEquals(idOf(WRITE), Task.deserialize(Task.captured("f", WRITE, 0).serialize()).id());
    }

    @Test
    void shouldKeepTheKeyAndTheFlowsColumnsAndLeaveTheOthersAsSetOrDeleted()
    {
        KeyRange range = new KeyRange(List.of(bigint(5)), true, List.of(bigint(9)), false);
        SourceChange change = new SourceChange(Operation.UPDATE, ROW, 12, row("id", 1L, "k", "k", "v", "x", "w", "y", "gone", null),
                                               java.util.Map.of("v", 10L, "w", 11L, "gone", 12L), java.util.Map.of("w", 1_700_000_000L),
                                               1_700_000_005L, 9, 8, true, range);
        SourceChange kept = change.keeping(Set.of("v"), List.of("id", "k"));
        assertEquals(List.of("id", "k", "v", "w", "gone"), List.copyOf(kept.values.keySet()), "every column the write set stays, in order");
        assertEquals(bigint(1), kept.values.get("id"));
        assertEquals(text("k"), kept.values.get("k"));
        assertEquals(text("x"), kept.values.get("v"));
        assertEquals(ByteBuffer.allocate(0), kept.values.get("w"), "set, not carried: an empty value");
        assertNull(kept.values.get("gone"), "a tombstone stays null");
        assertEquals(change.timestamps, kept.timestamps);
        assertEquals(change.expirations, kept.expirations);
        assertEquals(List.of(change.operation, change.key, change.timestamp, change.rowExpiresAt, change.livenessTimestamp,
                             change.deletionTimestamp, change.isStatic, change.range),
                     List.of(kept.operation, kept.key, kept.timestamp, kept.rowExpiresAt, kept.livenessTimestamp,
                             kept.deletionTimestamp, kept.isStatic, kept.range));
        assertEquals(change.values, change.keeping(Set.of("v", "w", "gone"), List.of("id", "k")).values, "every column carried: unchanged");
    }

    @Test
    void shouldGiveTwoWritesDifferingOnlyInColumnsAFlowDoesNotCarryOneIdForThatFlow()
    {
        SourceChange other = write(row("v", "x", "w", "z"), java.util.Map.of("v", 10L, "w", 12L));
        List<String> key = List.of("id", "k");
        assertEquals(idOf(WRITE.keeping(Set.of("v"), key)), idOf(other.keeping(Set.of("v"), key)),
                     "the flow's tasks of both hold the same: running one is running both");
        assertNotEquals(idOf(WRITE.keeping(Set.of("w"), key)), idOf(other.keeping(Set.of("w"), key)));
    }
}
