package org.asynctriggers.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The stage runs every capture handed to it exactly once: on its thread, or on the caller's when it cannot queue. */
class CaptureStageTest
{
    @Test
    void shouldRunWhatItIsHandedOnItsOwnThreadInOrder() throws InterruptedException
    {
        List<Thread> started = new ArrayList<>();
        CaptureStage stage = new CaptureStage(16, 0, run -> {
            Thread thread = new Thread(run, "stage");
            thread.setDaemon(true);
            started.add(thread);
            return thread;
        });
        List<Integer> ran = java.util.Collections.synchronizedList(new ArrayList<>());
        List<String> threads = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(10);
        for (int i = 0; i < 10; i++)
        {
            int n = i;
            stage.hand(always(() -> {
                ran.add(n);
                threads.add(Thread.currentThread().getName());
                done.countDown();
            }));
        }
        assertTrue(done.await(10, TimeUnit.SECONDS));
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), ran);
        assertEquals(2, started.size(), "the stage's thread and its rescuer, started once");
        assertTrue(threads.stream().allMatch("stage"::equals), "run by the stage's thread: " + threads);
    }

    @Test
    void shouldRunACaptureOnTheCallersThreadWhenTheStageIsFull()
    {
        CaptureStage stage = new CaptureStage(2, 0, run -> new Thread(() -> { })); // threads that take nothing: it only fills
        AtomicInteger ran = new AtomicInteger();
        for (int i = 0; i < 5; i++)
            stage.hand(always(ran::incrementAndGet));
        assertEquals(3, ran.get(), "two wait in the stage, three ran in the writes that found it full");
        assertEquals(2, stage.waiting());
    }

    @Test
    void shouldRunACaptureOnTheCallersThreadWhenItsThreadsCannotStart()
    {
        CaptureStage stage = new CaptureStage(16, 0, run -> {
            throw new OutOfMemoryError("unable to create native thread");
        });
        AtomicInteger ran = new AtomicInteger();
        stage.hand(always(ran::incrementAndGet));
        stage.hand(always(ran::incrementAndGet));
        assertEquals(2, ran.get(), "each run once, here, and the write goes on");
        assertEquals(0, stage.waiting());
    }

    @Test
    void shouldKeepRunningAfterACaptureFails() throws InterruptedException
    {
        CaptureStage stage = threaded();
        CountDownLatch after = new CountDownLatch(1);
        stage.hand(always(() -> {
            throw new IllegalStateException("a capture's own failure");
        }));
        stage.hand(always(after::countDown));
        assertTrue(after.await(10, TimeUnit.SECONDS), "the next capture still runs");
    }

    @Test
    void shouldRunTheCapturesBehindOneThatMayNotRunYetAndThatOneOnceItMay() throws InterruptedException
    {
        CaptureStage stage = threaded();
        java.util.concurrent.atomic.AtomicBoolean flushWaits = new java.util.concurrent.atomic.AtomicBoolean();
        List<String> ran = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch behind = new CountDownLatch(1);
        CountDownLatch waiting = new CountDownLatch(1);
        stage.hand(new CaptureStage.Capture()
        {
            @Override
            public boolean mayRun()
            {
                return flushWaits.get();  // its memtable write could wait for room, and no flush waits for it yet
            }

            @Override
            public boolean flushWaits()
            {
                return flushWaits.get();
            }

            @Override
            public void run()
            {
                ran.add("waiting");
                waiting.countDown();
            }
        });
        stage.hand(always(() -> {
            ran.add("behind");
            behind.countDown();
        }));
        assertTrue(behind.await(10, TimeUnit.SECONDS), "the capture behind it runs");
        Thread.sleep(20);
        assertEquals(List.of("behind"), ran, "not the one that may not run");
        flushWaits.set(true);
        assertTrue(waiting.await(10, TimeUnit.SECONDS), "it runs once it may");
        assertEquals(List.of("behind", "waiting"), ran);
    }

    /** A stage on a thread of its own, named "stage", that runs captures at once. */
    private static CaptureStage threaded()
    {
        return new CaptureStage(16, 0, run -> {
            Thread thread = new Thread(run, "stage");
            thread.setDaemon(true);
            return thread;
        });
    }

    static CaptureStage.Capture always(Runnable run)
    {
        return new CaptureStage.Capture()
        {
            @Override
            public boolean mayRun()
            {
                return true;
            }

            @Override
            public boolean flushWaits()
            {
                return false;
            }

            @Override
            public void run()
            {
                run.run();
            }
        };
    }

    @Test
    void shouldRunWhatAFlushWaitsForWhileItsThreadIsStuckInAnotherCapture() throws InterruptedException
    {
        CaptureStage stage = threaded();
        CountDownLatch room = new CountDownLatch(1);      // the memtable room the stuck capture waits for
        CountDownLatch rescued = new CountDownLatch(1);
        stage.hand(always(() -> {
            try
            {
                room.await(30, TimeUnit.SECONDS);        // waits for room that only the flush below gives back
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }));
        stage.hand(new CaptureStage.Capture()
        {
            @Override
            public boolean mayRun()
            {
                return true;
            }

            @Override
            public boolean flushWaits()
            {
                return true;
            }

            @Override
            public void run()
            {
                rescued.countDown();
                room.countDown();                         // the flush that waited for it ends and gives room back
            }
        });
        assertTrue(rescued.await(10, TimeUnit.SECONDS), "the capture a flush waits for runs on the rescuer");
    }
}
