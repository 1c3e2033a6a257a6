package org.asynctriggers.spec;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A target's {@code aggregate} (docs/design.md, "Aggregates"): the table a total is kept in and how its columns come
 * from the target's rows, which are then the aggregate's members.
 */
final class AggregateParser
{
    private AggregateParser()
    {
    }

    /**
     * @param members the target whose rows are the members: a lineage target without a fan-out; its partition key
     *                is the group, and the aggregated columns are its regular columns
     */
    static FlowSpec.Aggregate parse(OptionReader ctx, JsonNode node, String at, List<String> membersPartition,
                                    Set<String> membersColumns, List<String> membersKey, boolean lineage, boolean fanout)
    {
        if (node == null || node.isNull())
            return null;
        String option = at + ".aggregate";
        if (!node.isObject())
            throw ctx.error("'" + option + "' must be an object or null, found: " + node);
        if (!lineage || fanout)
            throw ctx.error("'" + option + "' needs a target in mode 'lineage' without a fan-out (its rows are the members)");
        String keyspace = ctx.requiredString(node, "keyspace", option + ".keyspace");
        String table = ctx.requiredString(node, "table", option + ".table");
        List<String> partitionKey = ctx.stringList(node, "partition_key", option + ".partition_key", true);
        List<String> clustering = ctx.stringList(node, "clustering", option + ".clustering", false);
        Map<String, String> group = columns(ctx, node.get("group"), option + ".group", true);
        Set<String> key = new LinkedHashSet<>(partitionKey);
        key.addAll(clustering);
        if (!key.equals(group.keySet()))
            throw ctx.error("'" + option + ".group' must name each key column of the aggregate table once, expected: " + key
                            + ", found: " + group.keySet());
        if (!new LinkedHashSet<>(group.values()).equals(new LinkedHashSet<>(membersPartition)) || group.size() != membersPartition.size())
            throw ctx.error("'" + option + ".group' must map the aggregate's key onto the target's partition key " + membersPartition
                            + ", found: " + group.values());
        String count = null;
        JsonNode countNode = node.get("count");
        if (countNode != null && !countNode.isNull())
            count = ctx.requiredString(node, "count", option + ".count");
        Map<String, String> sum = columns(ctx, node.get("sum"), option + ".sum", false);
        Map<String, String> min = columns(ctx, node.get("min"), option + ".min", false);
        Map<String, String> max = columns(ctx, node.get("max"), option + ".max", false);
        Set<String> written = new LinkedHashSet<>(key);
        for (Map<String, String> kind : List.of(sum, min, max))
            for (Map.Entry<String, String> e : kind.entrySet())
            {
                if (!membersColumns.contains(e.getValue()) || membersKey.contains(e.getValue()))
                    throw ctx.error("'" + option + "' aggregates '" + e.getValue() + "', which is not a regular column of the target");
                if (!written.add(e.getKey()))
                    throw ctx.error("'" + option + "' writes column '" + e.getKey() + "' twice");
            }
        if (count != null && !written.add(count))
            throw ctx.error("'" + option + "' writes column '" + count + "' twice");
        if (count == null && sum.isEmpty() && min.isEmpty() && max.isEmpty())
            throw ctx.error("'" + option + "' computes nothing: give 'count', 'sum', 'min' or 'max'");
        return new FlowSpec.Aggregate(keyspace, table, group, partitionKey, clustering, count, sum, min, max);
    }

    /** An object of column name to column name; empty when absent and not required. */
    private static Map<String, String> columns(OptionReader ctx, JsonNode node, String option, boolean required)
    {
        Map<String, String> out = new LinkedHashMap<>();
        if (node == null || node.isNull())
        {
            if (required)
                throw ctx.error("'" + option + "' is required");
            return out;
        }
        if (!node.isObject() || (required && node.size() == 0))
            throw ctx.error("'" + option + "' must be " + (required ? "a non-empty" : "an") + " object of column name to column name, found: " + node);
        for (Iterator<Map.Entry<String, JsonNode>> it = OptionReader.entries(node); it.hasNext(); )
        {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual() || e.getValue().asText().isEmpty())
                throw ctx.error("'" + option + "." + e.getKey() + "' must be a column name, found: " + e.getValue());
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }
}
