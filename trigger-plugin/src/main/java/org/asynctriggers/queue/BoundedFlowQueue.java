package org.asynctriggers.queue;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.asynctriggers.task.Task;

/** In-memory bounded MPMC queue (two-lock linked queue: producers and consumers do not contend). */
public final class BoundedFlowQueue implements FlowQueue
{
    private final LinkedBlockingQueue<Task> tasks;
    private final int capacity;
    private volatile boolean closed;

    public BoundedFlowQueue(int capacity)
    {
        if (capacity <= 0)
            throw new IllegalArgumentException("capacity must be strictly positive, found: " + capacity);
        this.capacity = capacity;
        this.tasks = new LinkedBlockingQueue<>(capacity);
    }

    @Override
    public boolean offer(Task task)
    {
        return !closed && tasks.offer(task);
    }

    @Override
    public boolean offer(Task task, long timeout, TimeUnit unit) throws InterruptedException
    {
        return !closed && tasks.offer(task, timeout, unit);
    }

    @Override
    public Task poll(long timeout, TimeUnit unit) throws InterruptedException
    {
        return tasks.poll(timeout, unit);
    }

    @Override
    public int size()
    {
        return tasks.size();
    }

    @Override
    public int capacity()
    {
        return capacity;
    }

    @Override
    public long oldestCreatedNanos()
    {
        Task head = tasks.peek();
        return head == null ? Long.MAX_VALUE : head.createdNanos();
    }

    @Override
    public void close()
    {
        closed = true;
    }

    @Override
    public boolean isClosed()
    {
        return closed;
    }
}
