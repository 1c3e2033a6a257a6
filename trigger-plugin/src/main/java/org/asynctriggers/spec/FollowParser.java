package org.asynctriggers.spec;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The parts of a spec that make a fan-out follow its table (docs/design.md, "A fan-out that follows its table"): a
 * fan-out's {@code follow}, a target's {@code join_index}, and a companion flow's {@code follows}.
 */
final class FollowParser
{
    private FollowParser()
    {
    }

    static FlowSpec.Follow parseFollow(OptionReader ctx, JsonNode node, String option)
    {
        if (node == null || node.isNull())
            return null;
        if (!node.isObject())
            throw ctx.error("'" + option + "' must be an object or null, found: " + node);
        JsonNode index = node.get("index");
        if (index == null || !index.isInt() || index.intValue() < 0)
            throw ctx.error("'" + option + ".index' must be the position of the flow's join index in 'targets', found: " + index);
        String keyspace = ctx.requiredString(node, "keyspace", option + ".keyspace");
        String table = ctx.requiredString(node, "table", option + ".table");
        JsonNode recent = node.get("recent");
        if (recent == null || recent.isNull())
            return new FlowSpec.Follow(index.intValue(), keyspace, table);
        if (!recent.isObject())
            throw ctx.error("'" + option + ".recent' must be an object or null, found: " + recent);
        String type = ctx.requiredString(recent, "type", option + ".recent.type");
        if (!type.equals("timeuuid") && !type.equals("timestamp"))
            throw ctx.error("'" + option + ".recent.type' must be timeuuid or timestamp, found: " + type);
        JsonNode seconds = recent.get("seconds");
        if (seconds == null || !seconds.canConvertToLong() || seconds.longValue() < 1 || seconds.longValue() > FlowSpec.MAX_TTL_SECONDS)
            throw ctx.error("'" + option + ".recent.seconds' must be a whole number of seconds from 1 to " + FlowSpec.MAX_TTL_SECONDS
                            + " (Cassandra's longest TTL), found: " + seconds);
        return new FlowSpec.Follow(index.intValue(), keyspace, table, ctx.requiredString(recent, "column", option + ".recent.column"),
                                   type, seconds.longValue());
    }

    static boolean joinIndex(OptionReader ctx, JsonNode target, String at, FlowSpec.Mode mode, FlowSpec.Fanout fanout)
    {
        JsonNode node = target.get("join_index");
        if (node == null || node.isNull())
            return false;
        if (!node.isBoolean())
            throw ctx.error("'" + at + ".join_index' must be true or false, found: " + node);
        if (node.booleanValue() && (mode != FlowSpec.Mode.LINEAGE || fanout != null))
            throw ctx.error("'" + at + ".join_index' needs mode lineage and no fan-out");
        return node.booleanValue();
    }

    /** Each following fan-out names a join index that comes before it. */
    static void checkFollowing(OptionReader ctx, List<FlowSpec.Target> targets)
    {
        for (FlowSpec.Target target : targets)
        {
            if (target.fanout == null || target.fanout.follow == null)
                continue;
            int index = target.fanout.follow.index;
            if (index >= target.index || !targets.get(index).joinIndex)
                throw ctx.error("'targets[" + target.index + "].fanout.follow.index' must name a join index before it, found: " + index);
        }
    }

    /** A companion flow's task: the main flow's source, its join index and its following fan-out. */
    static FlowSpec.Follows parseFollows(OptionReader ctx, JsonNode node, FlowSpec.Source fanoutTable)
    {
        if (!node.isObject())
            throw ctx.error("'follows' must be an object, found: " + node);
        String flow = ctx.requiredString(node, "flow", "follows.flow");
        FlowSpec.Source source = FlowSpecParser.parseSource(ctx, node.get("source"));
        JsonNode targetNode = node.get("target");
        JsonNode fanoutNode = targetNode == null || !targetNode.isObject() ? null : targetNode.get("fanout");
        JsonNode followNode = fanoutNode == null || !fanoutNode.isObject() ? null : fanoutNode.get("follow");
        FlowSpec.Follow follow = parseFollow(ctx, followNode, "follows.target.fanout.follow");
        if (follow == null)
            throw ctx.error("'follows.target' must be a fan-out that follows its table");
        JsonNode indexNode = node.get("index");
        if (indexNode == null || !indexNode.isObject())
            throw ctx.error("'follows.index' must be the flow's join index, found: " + indexNode);
        FlowSpec.Target index = FlowSpecParser.parseTarget(ctx, indexNode, follow.index, source);
        FlowSpec.Target target = FlowSpecParser.parseTarget(ctx, targetNode, follow.index + 1, source);
        if (!index.joinIndex)
            throw ctx.error("'follows.index' must be a join index ('join_index': true)");
        if (!target.fanout.keyspace.equals(fanoutTable.keyspace) || !target.fanout.table.equals(fanoutTable.table))
            throw ctx.error("'follows.target' fans out over " + target.fanout.keyspace + '.' + target.fanout.table
                            + ", not this flow's source " + fanoutTable.keyspace + '.' + fanoutTable.table);
        for (String column : target.fanout.columns)
            if (!fanoutTable.columns.containsKey(column))
                throw ctx.error("'follows.target.fanout.columns' names '" + column + "', which is not in 'source.columns'");
        return new FlowSpec.Follows(flow, source, index, target);
    }

    static List<FlowSpec.Target> noTargets(OptionReader ctx, JsonNode targets, String handler)
    {
        if (handler != null || (targets != null && !targets.isNull() && !(targets.isArray() && targets.size() == 0)))
            throw ctx.error("a flow with 'follows' has no 'targets' and no 'handler'");
        return List.of();
    }
}
