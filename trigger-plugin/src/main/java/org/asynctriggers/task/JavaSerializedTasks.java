package org.asynctriggers.task;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;

import org.asynctriggers.api.Operation;

/**
 * Tasks as the plugin stored them before {@link TaskCodec}: Java serialization of {@link Task} (a blob starting
 * {@code 0xACED}). Read whenever met; written only in the compatibility mode of a rolling upgrade from such a version.
 */
final class JavaSerializedTasks
{
    /** Where {@link Task} lived before the plugin had packages: blobs stored by that version name it. */
    static final String FORMER_NAME = "org.asynctriggers.Task";

    /** Only a task and what it holds may come out of a blob read back from a table. */
    private static final ObjectInputFilter ONLY_TASKS = ObjectInputFilter.Config.createFilter(
        Task.class.getName() + ";" + Operation.class.getName() + ";" + KeyRange.class.getName() + ";java.lang.*;java.util.ArrayList;java.util.LinkedHashMap;"
        + "java.util.HashMap;java.util.Map$Entry;[B;!*");

    private JavaSerializedTasks()
    {
    }

    static ByteBuffer write(Task task)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes))
        {
            out.writeObject(task);
        }
        catch (IOException e)
        {
            throw new UncheckedIOException(e); // in memory: only if a field stopped being serializable
        }
        return ByteBuffer.wrap(bytes.toByteArray());
    }

    static Task read(byte[] bytes)
    {
        try (ObjectInputStream in = new TaskInputStream(new ByteArrayInputStream(bytes)))
        {
            in.setObjectInputFilter(ONLY_TASKS);
            return (Task) in.readObject();
        }
        catch (IOException | ClassNotFoundException | ClassCastException e)
        {
            throw new IllegalArgumentException("not a serialized task: " + e, e);
        }
    }

    /**
     * Reads a task whether its blob names {@link Task} or its former name, so backup entries, spill files and dead
     * letters written before an upgrade are still read (same serialVersionUID; fields added since, such as the
     * expirations, are absent from such a blob and read as null or 0, i.e. no TTL: compatible class evolution). The
     * former name resolves to the class while the blob's own description of its fields is the one read (Java
     * serialization matches a renamed class by its simple name).
     */
    private static final class TaskInputStream extends ObjectInputStream
    {
        TaskInputStream(InputStream in) throws IOException
        {
            super(in);
        }

        @Override
        protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException
        {
            return FORMER_NAME.equals(desc.getName()) ? Task.class : super.resolveClass(desc);
        }
    }
}
