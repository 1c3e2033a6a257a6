package org.asynctriggers.testing;

import java.util.concurrent.TimeUnit;

/** Polls a condition of a running node until it holds, or fails the test after the given time. */
public final class Await
{
    @FunctionalInterface
    public interface Condition
    {
        boolean holds() throws Exception;
    }

    private Await()
    {
    }

    public static void until(Condition condition, long seconds) throws Exception
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.holds())
        {
            if (System.nanoTime() > deadline)
                throw new AssertionError("condition not met within " + seconds + " s");
            Thread.sleep(10);
        }
    }
}
