package org.asynctriggers.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The spill of one flow (docs/design.md, "Full queues"): its directory of append-only {@link SpillFile}s, oldest
 * first, and the drainer that moves their tasks into the queue (read back through {@link Task#deserialize}'s
 * filter). Each running flow version holds an exclusive file lock on the files it owns; files nobody holds (left by a
 * previous run, or by a replaced version once it stopped) are adopted: at start, and every second by the drainer.
 * <p>
 * Order: while anything is spilled, {@link #offerOrSpill} spills new tasks too, and the drainer (daemon thread
 * {@code async-trigger-<flow>-spill}) moves the oldest spilled tasks into the queue as room frees, under the same lock;
 * so the flow's tasks reach the queue in the order they were offered. A fully read file is deleted. On stop, what is
 * left of a partly read file is rewritten (temporary file, atomic rename) so that the next run reads only the tasks
 * not yet queued; a crash instead re-reads the file from its start (drained tasks may run twice).
 */
public final class SpillStore
{
    private static final Logger logger = LoggerFactory.getLogger(SpillStore.class);
    static final long ADOPT_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long IDLE_WAIT_MILLIS = 100;
    private static final long FULL_WAIT_MILLIS = 5;
    private static final long ERROR_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

    enum Result { QUEUED, SPILLED, CLOSED, FAILED }

    private final String flow;
    private final Path dir;
    private final LongSupplier nanoClock;
    private final ArrayDeque<SpillFile> segments = new ArrayDeque<>();
    /** tasks on disk not yet in the queue; written under the lock, read by metrics without it */
    private volatile long pending;
    private volatile boolean spilling;
    private boolean closed;
    private volatile boolean stopping;
    private Thread drainer;
    private long lastErrorLogNanos = Long.MIN_VALUE;
    /** a drained file was deleted since the directory was last removed (guarded by this) */
    private boolean deletedFile;

    public SpillStore(String flow, Path dir, LongSupplier nanoClock)
    {
        this.flow = flow;
        this.dir = dir;
        this.nanoClock = nanoClock;
    }

    /** The directory of a flow under the spill root; a flow name that is not a plain identifier is made one. */
    public static Path dirOf(Path root, String flow)
    {
        return root.resolve(flow.replaceAll("[^A-Za-z0-9_-]", "_"));
    }

    public long pending()
    {
        return pending;
    }

    /** Reads back the files a previous run left, then starts the drainer. */
    public synchronized void start(ThreadFactory threadFactory, FlowQueue queue)
    {
        adoptOrphans();
        Thread thread = threadFactory.newThread(() -> runDrainer(queue));
        thread.setName("async-trigger-" + flow + "-spill");
        thread.setDaemon(true);
        drainer = thread;
        thread.start();
    }

    /** Stops and joins the drainer; what is spilled stays on disk. */
    public void stopDrainer()
    {
        Thread thread;
        synchronized (this)
        {
            stopping = true;
            thread = drainer;
            drainer = null;
            notifyAll();
        }
        if (thread == null)
            return;
        thread.interrupt();
        try
        {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        }
        catch (InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive())
            logger.warn("Spill drainer of flow '{}' did not stop within 5 s", flow);
    }

    /** Refuses further tasks, keeps the unread tasks on disk for the next run and releases the files. */
    public synchronized void close()
    {
        if (closed)
            return;
        closed = true;
        for (SpillFile segment : segments)
        {
            try
            {
                if (segment.unread == 0)
                    Files.deleteIfExists(segment.path);
                else if (segment.partlyRead())
                    segment.dropRead();
            }
            catch (IOException e)
            {
                logger.error("Flow '{}': could not rewrite spill file {}; its drained tasks will run again", flow,
                             segment.path, e);
            }
            segment.release();
        }
        if (pending > 0)
            logger.warn("Flow '{}' stopped with {} spilled tasks on disk in {}; they run when the flow starts again",
                        flow, pending, dir);
        segments.clear();
        deleteDirIfEmpty();
    }

    /**
     * Queues the task when nothing is spilled and the queue has room, else appends it to the spill. Never waits for
     * room. {@link Result#FAILED}: the spill could not be written (logged); the caller falls back to blocking.
     */
    synchronized Result offerOrSpill(FlowQueue queue, Task task)
    {
        if (closed || queue.isClosed())
            return Result.CLOSED;
        if (!spilling && queue.offer(task))
            return Result.QUEUED;
        if (queue.isClosed())
            return Result.CLOSED;
        try
        {
            append(task);
            notifyAll();
            return Result.SPILLED;
        }
        catch (IOException | RuntimeException e)
        {
            logRateLimited("could not write the spill in " + dir + "; the task is left to its backup entry", e);
            return Result.FAILED;
        }
    }

    boolean isSpilling()
    {
        return spilling;
    }

    private void append(Task task) throws IOException
    {
        SpillFile tail = segments.peekLast();
        if (tail == null || !tail.writable)
        {
            tail = SpillFile.create(dir);
            segments.addLast(tail);
        }
        tail.append(task);
        pending++;
        spilling = true;
    }

    /**
     * Moves spilled tasks into the queue, oldest first, while it has room.
     * @return how many were moved
     */
    synchronized int drainInto(FlowQueue queue)
    {
        int moved = 0;
        while (!segments.isEmpty())
        {
            SpillFile head = segments.peekFirst();
            if (head.unread == 0)
            {
                segments.removeFirst();
                head.release();
                delete(head.path);
                deletedFile = true;
                continue;
            }
            Task task;
            try
            {
                ByteBuffer body = head.peek();
                try
                {
                    task = Task.deserialize(body);
                }
                catch (IllegalArgumentException e)
                {
                    logger.error("Flow '{}': a spilled task in {} at offset {} cannot be read back and is LOST: {}",
                                 flow, head.path, head.readOffset(), e.getMessage());
                    head.skip();
                    pending--;
                    continue;
                }
            }
            catch (IOException e)
            {
                logRateLimited("could not read the spill file " + head.path, e);
                break;
            }
            if (head.adopted)
                task = task.restarted(nanoClock.getAsLong());
            if (!queue.offer(task))
                break;
            head.skip();
            pending--;
            moved++;
        }
        if (pending == 0)
        {
            spilling = false;
            if (deletedFile)
            {
                deletedFile = false;
                deleteDirIfEmpty();
            }
        }
        return moved;
    }

    /** Takes over the spill files no running flow version holds, oldest first. */
    synchronized void adoptOrphans()
    {
        if (closed || !Files.isDirectory(dir))
            return;
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, "*" + SpillFile.SUFFIX))
        {
            stream.forEach(files::add);
        }
        catch (IOException e)
        {
            logRateLimited("could not list the spill directory " + dir, e);
            return;
        }
        Collections.sort(files);
        for (Path path : files)
        {
            if (segments.stream().anyMatch(s -> s.path.equals(path)))
                continue;
            try
            {
                SpillFile segment = SpillFile.adopt(path, flow);
                if (segment == null)
                    continue;
                if (segment.unread == 0)
                {
                    segment.release();
                    delete(path);
                    continue;
                }
                segments.addLast(segment);
                pending += segment.unread;
                spilling = true;
                logger.info("Flow '{}': read back {} spilled tasks from {}", flow, segment.unread, path);
            }
            catch (IOException e)
            {
                logRateLimited("could not read back the spill file " + path, e);
            }
        }
    }

    private void runDrainer(FlowQueue queue)
    {
        long nextAdopt = nanoClock.getAsLong() + ADOPT_INTERVAL_NANOS;
        while (!stopping)
        {
            try
            {
                if (nanoClock.getAsLong() - nextAdopt >= 0)
                {
                    adoptOrphans();
                    nextAdopt = nanoClock.getAsLong() + ADOPT_INTERVAL_NANOS;
                }
                int moved = drainInto(queue);
                synchronized (this)
                {
                    if (stopping)
                        return;
                    if (pending == 0)
                        wait(IDLE_WAIT_MILLIS);
                    else if (moved == 0)
                        wait(FULL_WAIT_MILLIS);
                }
            }
            catch (InterruptedException e)
            {
                return;
            }
            catch (RuntimeException e)
            {
                logRateLimited("unexpected error in the spill drainer", e);
            }
        }
    }

    private void delete(Path path)
    {
        try
        {
            Files.deleteIfExists(path);
        }
        catch (IOException e)
        {
            logRateLimited("could not delete the drained spill file " + path, e);
        }
    }

    private void deleteDirIfEmpty()
    {
        try
        {
            if (Files.isDirectory(dir))
                Files.deleteIfExists(dir);
        }
        catch (DirectoryNotEmptyException e)
        {
            // another version's files, or ours still being written
        }
        catch (IOException e)
        {
            logRateLimited("could not delete the spill directory " + dir, e);
        }
    }

    private synchronized void logRateLimited(String what, Throwable e)
    {
        long now = nanoClock.getAsLong();
        if (lastErrorLogNanos != Long.MIN_VALUE && now - lastErrorLogNanos < ERROR_LOG_INTERVAL_NANOS)
            return;
        lastErrorLogNanos = now;
        logger.error("Flow '{}': {}", flow, what, e);
    }
}
