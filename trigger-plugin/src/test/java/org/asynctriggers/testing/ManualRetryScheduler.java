package org.asynctriggers.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;

import org.asynctriggers.work.RetryScheduler;

/** Holds the scheduled retries until the test runs them, and remembers each delay asked for. */
public final class ManualRetryScheduler implements RetryScheduler
{
    public final List<Long> delays = new ArrayList<>();
    private final List<Runnable> due = new ArrayList<>();
    public boolean started;
    public boolean stopped;

    @Override
    public void start()
    {
        started = true;
    }

    @Override
    public synchronized void schedule(Runnable action, long delayMillis)
    {
        if (stopped)
            throw new RejectedExecutionException("stopped");
        delays.add(delayMillis);
        due.add(action);
    }

    /** Runs what is scheduled now (not what those actions schedule in turn). @return how many ran */
    public int runDue()
    {
        List<Runnable> now;
        synchronized (this)
        {
            now = new ArrayList<>(due);
            due.clear();
        }
        now.forEach(Runnable::run);
        return now.size();
    }

    public synchronized int waiting()
    {
        return due.size();
    }

    @Override
    public synchronized void stop()
    {
        stopped = true;
        due.clear();
    }
}
