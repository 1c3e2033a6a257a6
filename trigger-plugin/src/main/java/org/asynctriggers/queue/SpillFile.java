package org.asynctriggers.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.UUID;

import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One spill file, {@code <dir>/<millis>-<uuid>.spill}, held under an exclusive file lock: records of a 4-byte length
 * and a serialized {@link Task} ({@link Task#serialize()}), appended at its end and read from its start. A torn last
 * record (a crash while writing) is cut off when the file is adopted, or as soon as the write fails.
 */
final class SpillFile
{
    private static final Logger logger = LoggerFactory.getLogger(SpillStore.class);
    static final String SUFFIX = ".spill";

    final Path path;
    private final FileChannel channel;
    private final FileLock lock;
    /** tasks from another run: their createdNanos belong to another clock */
    final boolean adopted;
    /** false once a write failed, and for adopted files: the next task goes to a new file */
    boolean writable;
    /** records not read yet */
    long unread;
    private long readOffset;
    private long writeOffset;
    /** where the record {@link #peek()} returned ends */
    private long peekedEnd;

    private SpillFile(Path path, FileChannel channel, FileLock lock, boolean adopted, boolean writable)
    {
        this.path = path;
        this.channel = channel;
        this.lock = lock;
        this.adopted = adopted;
        this.writable = writable;
    }

    /** A new, empty, locked file in {@code dir} (created if missing). */
    static SpillFile create(Path dir) throws IOException
    {
        Path path = dir.resolve(String.format("%019d-%s%s", System.currentTimeMillis(), UUID.randomUUID(), SUFFIX));
        FileChannel channel;
        try
        {
            Files.createDirectories(dir);
            channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        }
        catch (NoSuchFileException e)
        {
            // another version of the flow just removed the empty directory
            Files.createDirectories(dir);
            channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        }
        FileLock lock;
        try
        {
            lock = channel.lock();
        }
        catch (IOException | RuntimeException e)
        {
            channel.close();
            Files.deleteIfExists(path);
            throw e;
        }
        return new SpillFile(path, channel, lock, false, true);
    }

    /**
     * Takes a file left by another run or version, its records counted and a torn last one cut off.
     * @return null when a running flow version holds it
     */
    static SpillFile adopt(Path path, String flow) throws IOException
    {
        FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        try
        {
            FileLock lock;
            try
            {
                lock = channel.tryLock();
            }
            catch (OverlappingFileLockException e)
            {
                lock = null; // a flow version of this JVM holds it
            }
            if (lock == null)
            {
                channel.close();
                return null;
            }
            SpillFile file = new SpillFile(path, channel, lock, true, false);
            file.unread = file.countRecords(flow);
            return file;
        }
        catch (IOException | RuntimeException e)
        {
            try
            {
                channel.close();
            }
            catch (IOException ignored)
            {
                // already failing
            }
            throw e;
        }
    }

    /** Counts the whole records; a torn last record (crash while writing) is cut off. */
    private long countRecords(String flow) throws IOException
    {
        long size = channel.size();
        long offset = 0;
        long count = 0;
        ByteBuffer length = ByteBuffer.allocate(4);
        while (offset + 4 <= size)
        {
            length.clear();
            readFully(length, offset);
            int n = length.getInt(0);
            if (n < 0 || offset + 4 + n > size)
                break;
            offset += 4 + n;
            count++;
        }
        if (offset < size)
        {
            logger.warn("Flow '{}': spill file {} ends with a torn record ({} bytes), cut off", flow, path, size - offset);
            channel.truncate(offset);
        }
        writeOffset = offset;
        return count;
    }

    /** Appends the task; a failed write is cut off and leaves the file no longer writable. */
    void append(Task task) throws IOException
    {
        ByteBuffer body = task.serialize();
        ByteBuffer record = ByteBuffer.allocate(4 + body.remaining());
        record.putInt(body.remaining()).put(body).flip();
        long at = writeOffset;
        try
        {
            while (record.hasRemaining())
                at += channel.write(record, at);
        }
        catch (IOException e)
        {
            // a partial record must not be read: cut it off and write to a new file next time
            writable = false;
            try
            {
                channel.truncate(writeOffset);
            }
            catch (IOException ignored)
            {
                // the length prefix check on read-back stops at a torn record
            }
            throw e;
        }
        writeOffset = at;
        unread++;
    }

    /** The body of the oldest unread record; it stays unread until {@link #skip()}. */
    ByteBuffer peek() throws IOException
    {
        ByteBuffer length = ByteBuffer.allocate(4);
        readFully(length, readOffset);
        int size = length.getInt(0);
        ByteBuffer body = ByteBuffer.allocate(size);
        readFully(body, readOffset + 4);
        body.flip();
        peekedEnd = readOffset + 4 + size;
        return body;
    }

    /** Marks the record {@link #peek()} returned as read. */
    void skip()
    {
        readOffset = peekedEnd;
        unread--;
    }

    long readOffset()
    {
        return readOffset;
    }

    boolean partlyRead()
    {
        return readOffset > 0;
    }

    /** Rewrites the unread part of the file, so the next run does not read the queued tasks again. */
    void dropRead() throws IOException
    {
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                                                StandardOpenOption.WRITE))
        {
            long position = readOffset;
            long end = writeOffset;
            while (position < end)
                position += channel.transferTo(position, end - position, out);
            out.force(true);
        }
        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Releases the lock and closes the file. */
    void release()
    {
        try
        {
            lock.release();
        }
        catch (IOException | RuntimeException ignored)
        {
            // closing the channel releases it too
        }
        try
        {
            channel.close();
        }
        catch (IOException e)
        {
            logger.warn("Could not close spill file {}", path, e);
        }
    }

    private void readFully(ByteBuffer buffer, long at) throws IOException
    {
        long position = at;
        while (buffer.hasRemaining())
        {
            int n = channel.read(buffer, position);
            if (n < 0)
                throw new IOException("unexpected end of spill file at offset " + position);
            position += n;
        }
    }
}
