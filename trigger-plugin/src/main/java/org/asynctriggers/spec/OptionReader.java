package org.asynctriggers.spec;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Reads the plain values of a flow spec's options (strings, lists of column names, integers), each with its exact
 * message naming the option and the flow: {@code flow 'x': 'queue.capacity' must be strictly positive, found: 0}.
 */
final class OptionReader
{
    /** {@code flow 'x'}, or {@code flow} before the spec's name is known */
    final String who;

    OptionReader(String who)
    {
        this.who = who;
    }

    FlowSpecException error(String message)
    {
        return new FlowSpecException(who + ": " + message);
    }

    /** fields() exists in every Jackson 2.x that Cassandra 5.0.x ships (its replacement only since 2.15) */
    @SuppressWarnings("deprecation")
    static Iterator<Map.Entry<String, JsonNode>> entries(JsonNode object)
    {
        return object.fields();
    }

    String requiredString(JsonNode parent, String field, String option)
    {
        JsonNode node = parent == null ? null : parent.get(field);
        if (node == null || node.isNull())
            throw error("'" + option + "' is required");
        if (!node.isTextual() || node.asText().isEmpty())
            throw error("'" + option + "' must be a non-empty string, found: " + node);
        return node.asText();
    }

    List<String> stringList(JsonNode parent, String field, String option, boolean nonEmpty)
    {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull())
        {
            if (nonEmpty)
                throw error("'" + option + "' is required");
            return List.of();
        }
        if (!node.isArray())
            throw error("'" + option + "' must be a list of column names, found: " + node);
        List<String> out = new ArrayList<>();
        for (JsonNode item : node)
        {
            if (!item.isTextual() || item.asText().isEmpty())
                throw error("'" + option + "' must be a list of column names, found: " + node);
            out.add(item.asText());
        }
        if (nonEmpty && out.isEmpty())
            throw error("'" + option + "' must not be empty");
        return out;
    }

    int nonNegativeInt(JsonNode parent, String field, int dflt)
    {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull())
            return dflt;
        if (!node.canConvertToInt() || !node.isIntegralNumber() || node.asInt() < 0)
            throw error("'" + field + "' must be a non-negative integer, found: " + node);
        return node.asInt();
    }

    int positiveInt(JsonNode parent, String field, String option, int dflt)
    {
        JsonNode node = parent == null || parent.isNull() ? null : parent.get(field);
        if (node == null || node.isNull())
            return dflt;
        int value = integer(parent, field, option, dflt);
        if (value <= 0)
            throw error("'" + option + "' must be strictly positive, found: " + value);
        return value;
    }

    int integer(JsonNode parent, String field, String option, int dflt)
    {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull())
            return dflt;
        if (!node.canConvertToInt() || !node.isIntegralNumber())
            throw error("'" + option + "' must be an integer, found: " + node);
        return node.asInt();
    }
}
