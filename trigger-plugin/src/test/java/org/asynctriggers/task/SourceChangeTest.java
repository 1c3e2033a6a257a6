package org.asynctriggers.task;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.asynctriggers.api.Operation;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class SourceChangeTest
{
    @Test
    void shouldKeepWhatItHeldWhenTheWritesBuffersAreReusedAfterItWasDetached()
    {
        ByteBuffer key = ByteBuffer.wrap(new byte[]{ 0, 0, 0, 7 });
        ByteBuffer value = ByteBuffer.wrap("kept".getBytes(StandardCharsets.UTF_8));
        Map<String, ByteBuffer> values = new LinkedHashMap<>();
        values.put("v", value);
        values.put("gone", null);
        SourceChange change = new SourceChange(Operation.UPDATE, List.of(key), 42, values, Map.of("v", 41L), Map.of("v", 99L),
                                               0, SourceChange.NONE, SourceChange.NONE, false);
        SourceChange detached = change.detached();
        Task before = Task.captured("f", change, 1);

        key.put(3, (byte) 9);           // the memtable's memory, given back and written over
        value.put(0, (byte) 'X');

        assertEquals(ByteBuffer.wrap(new byte[]{ 0, 0, 0, 7 }), detached.key.get(0));
        assertEquals(ByteBuffer.wrap("kept".getBytes(StandardCharsets.UTF_8)), detached.values.get("v"));
        assertNull(detached.values.get("gone"), "a tombstone stays a tombstone");
        assertEquals(List.of("v", "gone"), List.copyOf(detached.values.keySet()), "in the write's order");
        assertEquals(Map.of("v", 41L), detached.timestamps);
        assertEquals(Map.of("v", 99L), detached.expirations);
        assertEquals(before.id(), Task.captured("f", detached, 1).id(), "the same task, the same id on every replica");
    }
}
