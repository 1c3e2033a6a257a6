package org.asynctriggers.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** Records every thread it makes and the errors they die of, so a test can assert none leaked and none failed. */
public final class TrackingThreadFactory implements ThreadFactory
{
    public final List<Thread> threads = new CopyOnWriteArrayList<>();
    public final List<Throwable> errors = new CopyOnWriteArrayList<>();

    @Override
    public Thread newThread(Runnable runnable)
    {
        Thread thread = new Thread(() -> {
            try
            {
                runnable.run();
            }
            catch (Throwable t)
            {
                errors.add(t);
                throw t;
            }
        });
        threads.add(thread);
        return thread;
    }

    public long alive()
    {
        return threads.stream().filter(Thread::isAlive).count();
    }

    public void assertAllEnded(long millis) throws InterruptedException
    {
        for (Thread t : threads)
            t.join(millis);
        for (Thread t : threads)
            assertFalse(t.isAlive(), "thread still alive: " + t.getName());
        assertEquals(List.of(), errors, "worker threads died of errors");
    }
}
