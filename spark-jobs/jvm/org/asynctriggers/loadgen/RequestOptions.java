package org.asynctriggers.loadgen;

import java.util.List;
import java.util.Map;

import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;

/**
 * The options of a {@link JvmLoad#FANOUT} or {@link JvmLoad#PUBLISH} load, checked before any task starts, so that a
 * bad one is named once, here, not in every task.
 */
final class RequestOptions
{
    private RequestOptions()
    {
    }

    /** The options each kind needs; none for the others. */
    static List<String> required(int kind)
    {
        if (kind == JvmLoad.FANOUT)
            return List.of("followers", "timeline", "read_consistency", "concurrency");
        if (kind == JvmLoad.PUBLISH)
            return List.of("url", "queue");
        return List.of();
    }

    static Map<String, String> check(int kind, Map<String, String> options)
    {
        for (String key : required(kind))
            if (options == null || options.get(key) == null || options.get(key).isBlank())
                throw new IllegalArgumentException("a load of kind " + kind + " needs the option '" + key + "'");
        if (kind != JvmLoad.FANOUT)
            return options == null ? Map.of() : options;
        DefaultConsistencyLevel.valueOf(options.get("read_consistency"));
        int concurrency;
        try
        {
            concurrency = Integer.parseInt(options.get("concurrency"));
        }
        catch (NumberFormatException e)
        {
            throw new IllegalArgumentException("a fan-out load's 'concurrency' must be an integer, found: " + options.get("concurrency"));
        }
        if (concurrency < 1)
            throw new IllegalArgumentException("a fan-out load's 'concurrency' must be at least 1, found: " + concurrency);
        return options;
    }
}
