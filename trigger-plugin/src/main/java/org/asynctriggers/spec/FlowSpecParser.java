package org.asynctriggers.spec;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;

/**
 * Parses and validates the JSON flow specification into a {@link FlowSpec}, one method per option (the plain values
 * through {@link OptionReader}), so that every message is exact and names the option:
 * {@code flow 'x': 'queue.capacity' must be strictly positive, found: 0}. Nothing starts from a spec that failed here.
 */
public final class FlowSpecParser
{
    public static final int DEFAULT_CAPACITY = 10_000;
    public static final int DEFAULT_WORKERS = 2;
    static final int DEFAULT_PAGE_SIZE = 500;
    static final int DEFAULT_START_DELAY_MS = 20;
    static final int DEFAULT_BLOCK_TIMEOUT_MS = 2_000;
    static final FlowSpec.Overflow.Policy DEFAULT_OVERFLOW = FlowSpec.Overflow.Policy.SPILL;

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final List<String> CONSISTENCIES = Arrays.stream(ConsistencyLevel.values())
                                                            .map(Enum::name)
                                                            .collect(Collectors.toList());

    private FlowSpecParser()
    {
    }

    /** @param expectedName the name under which the flow is stored, or null to accept the spec's own */
    public static FlowSpec parse(String json, String expectedName, long version)
    {
        String who = expectedName == null ? "flow" : "flow '" + expectedName + "'";
        JsonNode root;
        try
        {
            root = MAPPER.readTree(json == null ? "" : json);
        }
        catch (JsonProcessingException e)
        {
            String message = e.getOriginalMessage();
            int cut = message.indexOf(" (start marker");
            if (cut > 0)
                message = message.substring(0, cut);
            String at = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
            throw new FlowSpecException(who + ": spec is not valid JSON" + at + ": " + message.split("\n")[0]);
        }
        if (root == null || !root.isObject())
            throw new FlowSpecException(who + ": spec must be a JSON object");

        String name = new OptionReader(who).requiredString(root, "name", "name");
        if (expectedName != null && !expectedName.equals(name))
            throw new FlowSpecException(who + ": 'name' must match the flow's row, found: '" + name + "'");
        OptionReader ctx = new OptionReader("flow '" + name + "'");

        FlowSpec.Source source = parseSource(ctx, root.get("source"));
        Set<Operation> events = parseEvents(ctx, root.get("events"));
        ConsistencyLevel read = parseConsistency(ctx, root, "read_consistency");
        ConsistencyLevel write = parseConsistency(ctx, root, "write_consistency");
        JsonNode queue = root.get("queue");
        if (queue != null && !queue.isNull() && !queue.isObject())
            throw ctx.error("'queue' must be an object, found: " + queue);
        int capacity = ctx.positiveInt(queue, "capacity", "queue.capacity", DEFAULT_CAPACITY);
        int workers = ctx.positiveInt(queue, "workers", "queue.workers", DEFAULT_WORKERS);
        int pageSize = ctx.positiveInt(root, "page_size", "page_size", DEFAULT_PAGE_SIZE);
        int startDelay = ctx.nonNegativeInt(root, "start_delay_ms", DEFAULT_START_DELAY_MS);
        RetryPolicy retry = parseRetry(ctx, root.get("retry"));
        FlowSpec.Overflow overflow = parseOverflow(ctx, root.get("overflow"), workers);
        FlowSpec.Backup backup = parseBackup(ctx, root.get("backup"));
        String handler = parseHandler(ctx, root.get("handler"));
        JsonNode followsNode = root.get("follows");
        FlowSpec.Follows follows = followsNode == null || followsNode.isNull() ? null : FollowParser.parseFollows(ctx, followsNode, source);
        List<FlowSpec.Target> targets = follows != null ? FollowParser.noTargets(ctx, root.get("targets"), handler)
                                                        : parseTargets(ctx, root.get("targets"), source, handler != null);
        FollowParser.checkFollowing(ctx, targets);
        return new FlowSpec(name, version, source, events, read, write, capacity, workers, pageSize, startDelay, retry,
                            overflow, backup, handler, targets, follows);
    }

    static FlowSpec.Source parseSource(OptionReader ctx, JsonNode node)
    {
        if (node == null || node.isNull())
            throw ctx.error("'source' is required");
        if (!node.isObject())
            throw ctx.error("'source' must be an object, found: " + node);
        String keyspace = ctx.requiredString(node, "keyspace", "source.keyspace");
        String table = ctx.requiredString(node, "table", "source.table");
        List<String> partitionKey = ctx.stringList(node, "partition_key", "source.partition_key", true);
        List<String> clustering = ctx.stringList(node, "clustering", "source.clustering", false);
        JsonNode columnsNode = node.get("columns");
        if (columnsNode == null || !columnsNode.isObject() || columnsNode.size() == 0)
            throw ctx.error("'source.columns' must be a non-empty object of column name to CQL type, found: " + columnsNode);
        Map<String, String> columns = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = OptionReader.entries(columnsNode); it.hasNext(); )
        {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual())
                throw ctx.error("'source.columns." + e.getKey() + "' must be a CQL type name, found: " + e.getValue());
            columns.put(e.getKey(), e.getValue().asText());
        }
        for (String key : partitionKey)
            if (!columns.containsKey(key))
                throw ctx.error("'source.partition_key' names '" + key + "', which is not in 'source.columns'");
        for (String key : clustering)
            if (!columns.containsKey(key))
                throw ctx.error("'source.clustering' names '" + key + "', which is not in 'source.columns'");
        return new FlowSpec.Source(keyspace, table, partitionKey, clustering, columns);
    }

    private static Set<Operation> parseEvents(OptionReader ctx, JsonNode node)
    {
        if (node == null || node.isNull())
            return EnumSet.allOf(Operation.class);
        if (!node.isArray() || node.size() == 0)
            throw ctx.error("'events' must be a non-empty list of insert, update, delete, found: " + node);
        Set<Operation> events = EnumSet.noneOf(Operation.class);
        for (JsonNode item : node)
        {
            Operation op = item.isTextual() ? Operation.fromEventName(item.asText()) : null;
            if (op == null)
                throw ctx.error("'events' contains unknown event " + item + " (expected insert, update or delete)");
            events.add(op);
        }
        return events;
    }

    private static ConsistencyLevel parseConsistency(OptionReader ctx, JsonNode root, String option)
    {
        JsonNode node = root.get(option);
        if (node == null || node.isNull())
            return ConsistencyLevel.ONE;
        String text = node.isTextual() ? node.asText().toUpperCase(Locale.ROOT) : null;
        if (text == null || !CONSISTENCIES.contains(text))
            throw ctx.error("'" + option + "' must be one of " + String.join(", ", CONSISTENCIES) + ", found: " + node);
        ConsistencyLevel cl = ConsistencyLevel.valueOf(text);
        if (cl == ConsistencyLevel.ANY && option.startsWith("read"))
            throw ctx.error("'" + option + "' cannot be ANY");
        if (cl.isSerialConsistency())
            throw ctx.error("'" + option + "' cannot be a serial consistency, found: " + node);
        // the plugin runs a flow's statements through the normal read and write paths, where NODE_LOCAL has no
        // meaning (Cassandra serves it for debugging, on the coordinator's own data only): every task would fail
        if (cl == ConsistencyLevel.NODE_LOCAL)
            throw ctx.error("'" + option + "' cannot be NODE_LOCAL (derived rows go to their replicas; for the nearest "
                            + "data center only, LOCAL_ONE or LOCAL_QUORUM), found: " + node);
        return cl;
    }

    private static RetryPolicy parseRetry(OptionReader ctx, JsonNode node)
    {
        if (node == null || node.isNull())
            return RetryPolicy.DEFAULT;
        if (!node.isObject())
            throw ctx.error("'retry' must be an object, found: " + node);
        RetryPolicy dflt = RetryPolicy.DEFAULT;
        int maxAttempts = ctx.positiveInt(node, "max_attempts", "retry.max_attempts", dflt.maxAttempts);
        int initial = ctx.integer(node, "initial_backoff_ms", "retry.initial_backoff_ms", (int) dflt.initialBackoffMillis);
        if (initial < 0)
            throw ctx.error("'retry.initial_backoff_ms' must be a non-negative integer, found: " + initial);
        int max = ctx.integer(node, "max_backoff_ms", "retry.max_backoff_ms", Math.max(initial, (int) dflt.maxBackoffMillis));
        if (max < initial)
            throw ctx.error("'retry.max_backoff_ms' must be at least 'retry.initial_backoff_ms' (" + initial + "), found: " + max);
        int maxAge = ctx.positiveInt(node, "max_age_ms", "retry.max_age_ms", (int) dflt.maxAgeMillis);
        return new RetryPolicy(maxAttempts, initial, max, maxAge);
    }

    private static FlowSpec.Backup parseBackup(OptionReader ctx, JsonNode node)
    {
        if (node == null || node.isNull())
            return FlowSpec.Backup.DEFAULT;
        if (!node.isObject())
            throw ctx.error("'backup' must be an object, found: " + node);
        JsonNode enabled = node.get("enabled");
        if (enabled != null && !enabled.isNull() && !enabled.isBoolean())
            throw ctx.error("'backup.enabled' must be true or false, found: " + enabled);
        int safetyNet = ctx.positiveInt(node, "safety_net_ms", "backup.safety_net_ms", (int) FlowSpec.Backup.DEFAULT.safetyNetMillis);
        return new FlowSpec.Backup(enabled == null || enabled.isNull() || enabled.booleanValue(), safetyNet);
    }

    private static FlowSpec.Overflow parseOverflow(OptionReader ctx, JsonNode node, int workers)
    {
        if (node == null || node.isNull())
            return new FlowSpec.Overflow(DEFAULT_OVERFLOW, DEFAULT_BLOCK_TIMEOUT_MS, workers);
        if (!node.isObject())
            throw ctx.error("'overflow' must be an object, found: " + node);
        FlowSpec.Overflow.Policy policy = parseOverflowPolicy(ctx, node.get("policy"));
        int timeout = ctx.integer(node, "block_timeout_ms", "overflow.block_timeout_ms", DEFAULT_BLOCK_TIMEOUT_MS);
        if (timeout < 0)
            throw ctx.error("'overflow.block_timeout_ms' must be a non-negative integer, found: " + timeout);
        int maxWorkers = ctx.integer(node, "max_workers", "overflow.max_workers", workers);
        if (maxWorkers < workers)
            throw ctx.error("'overflow.max_workers' must be at least 'queue.workers' (" + workers + "), found: " + maxWorkers);
        return new FlowSpec.Overflow(policy, timeout, maxWorkers);
    }

    private static FlowSpec.Overflow.Policy parseOverflowPolicy(OptionReader ctx, JsonNode node)
    {
        if (node == null || node.isNull())
            return DEFAULT_OVERFLOW;
        if (node.isTextual())
            for (FlowSpec.Overflow.Policy policy : FlowSpec.Overflow.Policy.values())
                if (policy.name().toLowerCase(Locale.ROOT).equals(node.asText()))
                    return policy;
        throw ctx.error("'overflow.policy' must be one of block, spill, discard, elastic, found: " + node);
    }

    private static String parseHandler(OptionReader ctx, JsonNode node)
    {
        if (node == null || node.isNull())
            return null;
        if (!node.isTextual() || !node.asText().matches("[\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}.$]*"))
            throw ctx.error("'handler' must be a fully qualified class name, found: " + node);
        return node.asText();
    }

    private static List<FlowSpec.Target> parseTargets(OptionReader ctx, JsonNode node, FlowSpec.Source source, boolean hasHandler)
    {
        boolean none = node == null || node.isNull() || (node.isArray() && node.size() == 0);
        if (hasHandler)
        {
            if (!none)
                throw ctx.error("'handler' and 'targets' are mutually exclusive");
            return List.of();
        }
        if (none)
            throw ctx.error("one of 'handler' or 'targets' is required");
        if (!node.isArray())
            throw ctx.error("'targets' must be a list, found: " + node);
        List<FlowSpec.Target> targets = new ArrayList<>();
        for (int i = 0; i < node.size(); i++)
            targets.add(parseTarget(ctx, node.get(i), i, source));
        return targets;
    }

    static FlowSpec.Target parseTarget(OptionReader ctx, JsonNode node, int index, FlowSpec.Source source)
    {
        String at = "targets[" + index + "]";
        if (!node.isObject())
            throw ctx.error("'" + at + "' must be an object, found: " + node);
        String keyspace = ctx.requiredString(node, "keyspace", at + ".keyspace");
        String table = ctx.requiredString(node, "table", at + ".table");
        List<String> partitionKey = ctx.stringList(node, "partition_key", at + ".partition_key", true);
        List<String> clustering = ctx.stringList(node, "clustering", at + ".clustering", false);

        FlowSpec.Fanout fanout = parseFanout(ctx, node.get("fanout"), at, source);

        Map<String, Expression> columns = expressions(ctx, node.get("columns"), at + ".columns", source, fanout);
        for (String key : partitionKey)
            if (!columns.containsKey(key))
                throw ctx.error("'" + at + ".columns' has no expression for key column '" + key + "'");
        for (String key : clustering)
            if (!columns.containsKey(key))
                throw ctx.error("'" + at + ".columns' has no expression for key column '" + key + "'");

        FlowSpec.Mode mode = parseMode(ctx, node.get("mode"), at);
        List<String> lineageColumns = mode == FlowSpec.Mode.LINEAGE
                                      ? lineageColumns(ctx, node, at, source, partitionKey, clustering, columns, fanout)
                                      : List.of();
        List<String> key = new ArrayList<>(partitionKey);
        key.addAll(clustering);
        FlowSpec.Aggregate aggregate = AggregateParser.parse(ctx, node.get("aggregate"), at, partitionKey, columns.keySet(), key,
                                                             mode == FlowSpec.Mode.LINEAGE, fanout != null);
        boolean joinIndex = FollowParser.joinIndex(ctx, node, at, mode, fanout);
        if (fanout != null && fanout.follow != null && mode != FlowSpec.Mode.LINEAGE)
            throw ctx.error("'" + at + ".mode' must be lineage for a fan-out that follows its table");
        return new FlowSpec.Target(index, keyspace, table, partitionKey, clustering, columns, fanout, mode, lineageColumns, aggregate,
                                   joinIndex);
    }

    /**
     * The non-key source columns a lineage target depends on: as given in 'lineage_columns', else derived from the
     * key expressions and the fan-out match (specs rendered before the field existed).
     */
    private static List<String> lineageColumns(OptionReader ctx, JsonNode node, String at, FlowSpec.Source source,
                                               List<String> partitionKey, List<String> clustering,
                                               Map<String, Expression> columns, FlowSpec.Fanout fanout)
    {
        java.util.Set<String> derived = new java.util.TreeSet<>();
        List<Expression> keyExpressions = new ArrayList<>();
        for (String key : partitionKey)
            keyExpressions.add(columns.get(key));
        for (String key : clustering)
            keyExpressions.add(columns.get(key));
        if (fanout != null)
            keyExpressions.addAll(fanout.match.values());
        for (Expression e : keyExpressions)
            if (e.scope == Expression.Scope.SOURCE && !source.primaryKey().contains(e.column))
                derived.add(e.column);
        if (node.get("lineage_columns") == null || node.get("lineage_columns").isNull())
            return new ArrayList<>(derived);
        List<String> given = ctx.stringList(node, "lineage_columns", at + ".lineage_columns", false);
        for (String column : given)
            if (!source.columns.containsKey(column) || source.primaryKey().contains(column))
                throw ctx.error("'" + at + ".lineage_columns' names '" + column + "', which is not a non-key column of the source");
        if (!new java.util.TreeSet<>(given).containsAll(derived))
            throw ctx.error("'" + at + ".lineage_columns' must include every non-key source column of the target key and fan-out, "
                            + "expected: " + derived + ", found: " + given);
        return given;
    }

    private static FlowSpec.Mode parseMode(OptionReader ctx, JsonNode node, String at)
    {
        if (node == null || node.isNull())
            return FlowSpec.Mode.DIRECT;
        if (node.isTextual())
        {
            if (node.asText().equals("direct"))
                return FlowSpec.Mode.DIRECT;
            if (node.asText().equals("lineage"))
                return FlowSpec.Mode.LINEAGE;
        }
        throw ctx.error("'" + at + ".mode' must be one of direct, lineage, found: " + node);
    }

    private static FlowSpec.Fanout parseFanout(OptionReader ctx, JsonNode node, String at, FlowSpec.Source source)
    {
        if (node == null || node.isNull())
            return null;
        String option = at + ".fanout";
        if (!node.isObject())
            throw ctx.error("'" + option + "' must be an object or null, found: " + node);
        String keyspace = ctx.requiredString(node, "keyspace", option + ".keyspace");
        String table = ctx.requiredString(node, "table", option + ".table");
        Map<String, Expression> match = expressions(ctx, node.get("match"), option + ".match", source, null);
        List<String> columns = ctx.stringList(node, "columns", option + ".columns", true);
        FlowSpec.Follow follow = FollowParser.parseFollow(ctx, node.get("follow"), option + ".follow");
        if (follow != null && follow.recentColumn != null && !source.primaryKey().contains(follow.recentColumn))
            throw ctx.error("'" + option + ".follow.recent.column' must be a primary key column of the source, found: "
                            + follow.recentColumn);
        return new FlowSpec.Fanout(keyspace, table, match, columns, follow);
    }

    /** A non-empty object of column name to expression: a target's columns, a fan-out's match. */
    private static Map<String, Expression> expressions(OptionReader ctx, JsonNode node, String option, FlowSpec.Source source,
                                                       FlowSpec.Fanout fanout)
    {
        if (node == null || !node.isObject() || node.size() == 0)
            throw ctx.error("'" + option + "' must be a non-empty object of column name to expression, found: " + node);
        Map<String, Expression> expressions = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = OptionReader.entries(node); it.hasNext(); )
        {
            Map.Entry<String, JsonNode> e = it.next();
            expressions.put(e.getKey(), expression(ctx, e.getValue(), e.getKey(), source, fanout));
        }
        return expressions;
    }

    private static Expression expression(OptionReader ctx, JsonNode node, String column, FlowSpec.Source source, FlowSpec.Fanout fanout)
    {
        Expression expr = node.isTextual() ? Expression.parseOrNull(node.asText()) : null;
        if (expr == null)
            throw ctx.error("unknown expression '" + (node.isTextual() ? node.asText() : node.toString()) + "' for column '"
                            + column + "' (expected source.<column> or row.<column>)");
        if (expr.scope == Expression.Scope.SOURCE && !source.columns.containsKey(expr.column))
            throw ctx.error("expression '" + expr + "' for column '" + column + "' names a column not in 'source.columns'");
        if (expr.scope == Expression.Scope.ROW)
        {
            if (fanout == null)
                throw ctx.error("expression '" + expr + "' for column '" + column + "' needs a 'fanout'");
            if (!fanout.columns.contains(expr.column))
                throw ctx.error("expression '" + expr + "' for column '" + column + "' names a column not in 'fanout.columns'");
        }
        return expr;
    }
}
