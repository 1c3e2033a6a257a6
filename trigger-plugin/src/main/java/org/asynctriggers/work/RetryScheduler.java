package org.asynctriggers.work;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a flow's delayed retries, so that a worker never sleeps through a backoff. One per flow version, started and
 * stopped with it; tests substitute one that runs the delayed actions when they say so.
 */
public interface RetryScheduler
{
    void start();

    /** @throws RejectedExecutionException once stopped */
    void schedule(Runnable action, long delayMillis);

    /** Drops what has not run yet (the caller keeps track of it) and joins the thread. */
    void stop();

    @FunctionalInterface
    interface Factory
    {
        RetryScheduler create(String flow);
    }

    static Factory onThreads(ThreadFactory threadFactory)
    {
        return flow -> new OnThread(flow, threadFactory);
    }

    static String threadName(String flow)
    {
        return "async-trigger-" + flow + "-retry";
    }

    /** One daemon thread, {@code async-trigger-<flow>-retry}, from the node's thread factory. */
    final class OnThread implements RetryScheduler
    {
        private static final Logger logger = LoggerFactory.getLogger(RetryScheduler.class);
        private static final long JOIN_MILLIS = 5_000;

        private final String flow;
        private final ScheduledThreadPoolExecutor executor;

        OnThread(String flow, ThreadFactory threadFactory)
        {
            this.flow = flow;
            this.executor = new ScheduledThreadPoolExecutor(1, runnable -> {
                Thread thread = threadFactory.newThread(runnable);
                thread.setName(threadName(flow));
                thread.setDaemon(true);
                return thread;
            });
            // a cancelled retry must not linger in the queue until its time comes
            executor.setRemoveOnCancelPolicy(true);
        }

        @Override
        public void start()
        {
            executor.prestartCoreThread();
        }

        @Override
        public void schedule(Runnable action, long delayMillis)
        {
            executor.schedule(action, delayMillis, TimeUnit.MILLISECONDS);
        }

        @Override
        public void stop()
        {
            executor.shutdownNow();
            try
            {
                if (!executor.awaitTermination(JOIN_MILLIS, TimeUnit.MILLISECONDS))
                    logger.warn("Retry thread of flow '{}' did not stop within {} ms", flow, JOIN_MILLIS);
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
