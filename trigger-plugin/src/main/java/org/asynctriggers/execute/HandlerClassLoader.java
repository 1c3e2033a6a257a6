package org.asynctriggers.execute;

import java.io.File;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.cassandra.utils.FBUtilities;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the Java handlers of flows come from ({@code handler=} in a flow): the jars in the node's triggers directory,
 * over the plugin's own classes. A new loader for every flow it starts, over copies of the jars (so a jar replaced in
 * place is read whole), so a handler jar copied in before a deploy is found without a restart.
 */
public final class HandlerClassLoader
{
    private static final Logger logger = LoggerFactory.getLogger(HandlerClassLoader.class);

    private HandlerClassLoader()
    {
    }

    public static ClassLoader fromTriggersDirectory()
    {
        ClassLoader parent = HandlerClassLoader.class.getClassLoader();
        org.apache.cassandra.io.util.File dir = FBUtilities.cassandraTriggerDir();
        if (dir == null || !dir.isDirectory())
            return parent;
        return over(dir.toJavaIOFile(), parent);
    }

    static ClassLoader over(File dir, ClassLoader parent)
    {
        File[] jars = dir.listFiles((d, name) -> name.endsWith(".jar"));
        if (jars == null || jars.length == 0)
            return parent;
        Arrays.sort(jars);
        List<URL> urls = new ArrayList<>();
        for (File jar : jars)
        {
            try
            {
                Path copy = Files.createTempFile("async-triggers-handler-", ".jar");
                copy.toFile().deleteOnExit();
                Files.copy(jar.toPath(), copy, StandardCopyOption.REPLACE_EXISTING);
                urls.add(copy.toUri().toURL());
            }
            catch (IOException e)
            {
                logger.warn("Could not read handler jar {}: {}", jar, e.toString());
            }
        }
        return new URLClassLoader(urls.toArray(new URL[0]), parent);
    }
}
