package org.asynctriggers.capture;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpecException;

/**
 * What the capture index of one source table records (docs/design.md, "Capture"): the flows on the table, the events
 * each handles, and whether it keeps backup entries. It comes from the index's own options
 * ({@code WITH OPTIONS = {'flows': '{"f": {"events": ["insert"], "backup": true}}'}}), so it is part of the schema:
 * every node knows it when it replays its commit log at boot, before any flow can be read from a table.
 */
public final class CaptureOptions
{
    static final String FLOWS = "flows";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** One flow as the capture sees it. */
    public static final class FlowCapture
    {
        public final String name;
        final Set<Operation> events;
        public final boolean backup;
        /** the non-key columns its tasks carry the values of; null: every column (a flow with a Java handler) */
        public final Set<String> columns;

        FlowCapture(String name, Set<Operation> events, boolean backup, Set<String> columns)
        {
            this.name = name;
            this.columns = columns == null ? null : Set.copyOf(columns);
            this.events = Collections.unmodifiableSet(events.isEmpty() ? EnumSet.noneOf(Operation.class) : EnumSet.copyOf(events));
            this.backup = backup;
        }

        public boolean handles(Operation operation)
        {
            return events.contains(operation);
        }
    }

    public final List<FlowCapture> flows;

    private CaptureOptions(List<FlowCapture> flows)
    {
        this.flows = List.copyOf(flows);
    }

    public static final CaptureOptions NONE = new CaptureOptions(List.of());

    boolean anyBackup()
    {
        for (FlowCapture flow : flows)
            if (flow.backup)
                return true;
        return false;
    }

    /** @throws FlowSpecException naming the option and what was found */
    public static CaptureOptions parse(Map<String, String> options)
    {
        for (String key : options.keySet())
            if (!key.equals(FLOWS) && !key.equals("class_name") && !key.equals("target"))
                throw new FlowSpecException("capture index: unknown option '" + key + "' (known: '" + FLOWS + "')");
        String json = options.get(FLOWS);
        if (json == null)
            throw new FlowSpecException("capture index: option '" + FLOWS + "' is missing");
        JsonNode root;
        try
        {
            root = MAPPER.readTree(json);
        }
        catch (JsonProcessingException e)
        {
            throw new FlowSpecException("capture index: option '" + FLOWS + "' is not valid JSON: " + e.getOriginalMessage().split("\n")[0]);
        }
        if (root == null || !root.isObject())
            throw new FlowSpecException("capture index: option '" + FLOWS + "' must be a JSON object of flow name to capture, found: " + json);
        Map<String, FlowCapture> flows = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); )
        {
            Map.Entry<String, JsonNode> e = it.next();
            flows.put(e.getKey(), flow(e.getKey(), e.getValue()));
        }
        return new CaptureOptions(List.copyOf(flows.values()));
    }

    private static FlowCapture flow(String name, JsonNode node)
    {
        String who = "capture index: flow '" + name + "': ";
        if (node == null || !node.isObject())
            throw new FlowSpecException(who + "must be an object with 'events', 'backup' and 'columns', found: " + node);
        JsonNode events = node.get("events");
        if (events == null || !events.isArray())
            throw new FlowSpecException(who + "'events' must be a list, found: " + events);
        Set<Operation> ops = EnumSet.noneOf(Operation.class);
        for (JsonNode event : events)
        {
            Operation op = event.isTextual() ? Operation.fromEventName(event.asText()) : null;
            if (op == null)
                throw new FlowSpecException(who + "unknown event " + event + " (known: insert, update, delete)");
            ops.add(op);
        }
        JsonNode backup = node.get("backup");
        if (backup != null && !backup.isBoolean())
            throw new FlowSpecException(who + "'backup' must be true or false, found: " + backup);
        JsonNode columns = node.get("columns");
        Set<String> carried = null;
        if (columns != null)
        {
            if (!columns.isArray())
                throw new FlowSpecException(who + "'columns' must be a list of column names, found: " + columns);
            carried = new java.util.HashSet<>();
            for (JsonNode column : columns)
            {
                if (!column.isTextual())
                    throw new FlowSpecException(who + "'columns' must be a list of column names, found: " + column);
                carried.add(column.asText());
            }
        }
        return new FlowCapture(name, ops, backup == null || backup.booleanValue(), carried);
    }
}
