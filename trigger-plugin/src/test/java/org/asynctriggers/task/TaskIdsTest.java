package org.asynctriggers.task;

import java.util.Random;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A task's id never changes between plugin versions: the digest kept per thread gives the JDK's name-based UUID. */
class TaskIdsTest
{
    @Test
    void shouldGiveWhatTheJdksNameBasedUuidGivesForAnyName()
    {
        Random random = new Random(7);
        for (int length = 0; length < 300; length++)
        {
            byte[] name = new byte[length];
            random.nextBytes(name);
            assertEquals(UUID.nameUUIDFromBytes(name), TaskIds.nameUuid(name), "a name of " + length + " bytes");
        }
    }

    @Test
    void shouldGiveTheSameIdOnEveryThread() throws Exception
    {
        byte[] name = "flow/key/1700000000000000".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        UUID[] seen = new UUID[4];
        Thread[] threads = new Thread[seen.length];
        for (int i = 0; i < threads.length; i++)
        {
            int slot = i;
            threads[i] = new Thread(() -> {
                for (int n = 0; n < 1000; n++)
                    seen[slot] = TaskIds.nameUuid(name);
            });
            threads[i].start();
        }
        for (Thread thread : threads)
            thread.join();
        for (UUID id : seen)
            assertEquals(UUID.nameUUIDFromBytes(name), id);
    }
}
