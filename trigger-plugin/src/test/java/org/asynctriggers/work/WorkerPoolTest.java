package org.asynctriggers.work;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.asynctriggers.queue.BoundedFlowQueue;
import org.asynctriggers.queue.FlowQueue;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.queue.FlowQueueContractTest.task;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WorkerPoolTest
{
    private final TrackingThreadFactory threads = new TrackingThreadFactory();
    private final FlowQueue queue = new BoundedFlowQueue(100);

    @Test
    void shouldStartNamedDaemonWorkersAndStopThemAll() throws InterruptedException
    {
        WorkerPool pool = new WorkerPool("timeline", 3, threads, queue, t -> {});
        pool.start();
        assertEquals(List.of("async-trigger-timeline-worker-1", "async-trigger-timeline-worker-2", "async-trigger-timeline-worker-3"),
                     threads.threads.stream().map(Thread::getName).collect(Collectors.toList()));
        assertTrue(threads.threads.stream().allMatch(Thread::isDaemon));
        assertEquals(3, threads.alive());
        assertEquals(0, pool.stop(1_000));
        threads.assertAllEnded(1_000);
    }

    @Test
    void shouldTakeNoTaskWhilePausedThenTakeThemAllOnResume() throws InterruptedException
    {
        List<Task> done = new CopyOnWriteArrayList<>();
        WorkerPool pool = new WorkerPool("f", 2, threads, queue, done::add);
        pool.pause();
        pool.start();
        for (int i = 0; i < 20; i++)
            queue.offer(task(i));
        Thread.sleep(400); // four polls of each worker
        assertEquals(0, done.size());
        assertEquals(20, queue.size());
        pool.resume();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (done.size() < 20 && System.nanoTime() < deadline)
            Thread.sleep(10);
        assertEquals(20, done.size());
        assertEquals(0, pool.stop(1_000));
        threads.assertAllEnded(1_000);
    }

    @Test
    void shouldStopAPausedPoolAtOnceLeavingItsQueue() throws InterruptedException
    {
        List<Task> done = new CopyOnWriteArrayList<>();
        WorkerPool pool = new WorkerPool("f", 2, threads, queue, done::add);
        pool.start();
        pool.pause();
        Thread.sleep(200); // the workers' polls in progress end
        for (int i = 0; i < 5; i++)
            queue.offer(task(i));
        long started = System.nanoTime();
        assertEquals(5, pool.stop(30_000), "left to the tasks' backup entries");
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(2), "no drain while paused");
        assertEquals(0, done.size());
        threads.assertAllEnded(1_000);
    }

    @Test
    void shouldDrainQueuedTasksOnStop() throws InterruptedException
    {
        List<Task> done = new CopyOnWriteArrayList<>();
        WorkerPool pool = new WorkerPool("f", 2, threads, queue, done::add);
        for (int i = 0; i < 50; i++)
            queue.offer(task(i));
        pool.start();
        assertEquals(0, pool.stop(5_000));
        assertEquals(50, done.size());
        threads.assertAllEnded(1_000);
    }

    @Test
    void shouldInterruptWorkersThatOutliveTheDrainDeadline() throws InterruptedException
    {
        CountDownLatch started = new CountDownLatch(1);
        WorkerPool pool = new WorkerPool("slow", 1, threads, queue, t -> {
            started.countDown();
            try
            {
                Thread.sleep(60_000);
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        });
        queue.offer(task(1));
        queue.offer(task(2));
        pool.start();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        assertEquals(1, pool.stop(50));
        threads.assertAllEnded(1_000);
    }

    @Test
    void shouldKeepWorkingAfterAProcessorError() throws InterruptedException
    {
        List<Task> done = new CopyOnWriteArrayList<>();
        WorkerPool pool = new WorkerPool("f", 1, threads, queue, t -> {
            if (t.timestamp() == 1)
                throw new IllegalStateException("boom");
            done.add(t);
        });
        queue.offer(task(1));
        queue.offer(task(2));
        pool.start();
        pool.stop(5_000);
        assertEquals(1, done.size());
        threads.assertAllEnded(1_000);
    }

    @Test
    void shouldRefuseToStartTwice()
    {
        WorkerPool pool = new WorkerPool("f", 1, threads, queue, t -> {});
        pool.start();
        assertThrows(IllegalStateException.class, pool::start);
        pool.stop(1_000);
    }

    @Test
    void shouldLetAnExtraWorkerGoOnlyOnceItIdledLongEnoughOnThePoolsClock() throws InterruptedException
    {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        WorkerPool pool = new WorkerPool("f", 1, 2, 5_000, threads, queue, t -> {}, now::get);
        pool.start();
        assertTrue(pool.grow());
        assertEquals(2, pool.currentSize());
        Thread.sleep(500);   // five idle polls of each worker, and no time passed on the pool's clock
        assertEquals(2, pool.currentSize(), "an extra worker stays while the clock says it idled under 5 s");
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(5_000));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (pool.currentSize() > 1 && System.nanoTime() < deadline)
            Thread.sleep(20);
        assertEquals(1, pool.currentSize(), "the extra worker left; the pool keeps its size");
        assertEquals(0, pool.stop(1_000));
    }
}
