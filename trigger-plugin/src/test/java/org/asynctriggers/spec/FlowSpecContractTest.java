package org.asynctriggers.spec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The flow spec's contract with the Python side: the parser is its source of truth. The defaults of every optional
 * option, the choices of every enumerated option and the exact message of each rejected spec are checked against
 * {@code tests/golden/contract/flow_spec.json}, which the Python side checks its own defaults against;
 * {@code -Dgolden.update=true} rewrites the file from the parser instead.
 */
class FlowSpecContractTest
{
    private static final Path GOLDEN = Paths.get("../tests/golden/contract/flow_spec.json");
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** The smallest valid spec: every defaulted option left out. */
    private static ObjectNode minimal()
    {
        try
        {
            ObjectNode spec = (ObjectNode) MAPPER.readTree(Fixtures.USERS_BY_NAME);
            ((ObjectNode) spec.get("targets").get(0)).remove("mode");
            return spec;
        }
        catch (IOException e)
        {
            throw new AssertionError(e);
        }
    }

    private static ObjectNode with(Consumer<ObjectNode> change)
    {
        ObjectNode spec = minimal();
        change.accept(spec);
        return spec;
    }

    private static ObjectNode target(ObjectNode spec)
    {
        return (ObjectNode) spec.get("targets").get(0);
    }

    private static FlowSpec parse(JsonNode spec)
    {
        return FlowSpecParser.parse(spec.toString(), null, 1);
    }

    /** One spec per option rule; the golden file holds the parser's message for each. */
    private static List<ObjectNode> rejectedSpecs()
    {
        List<ObjectNode> specs = new ArrayList<>();
        specs.add(with(s -> s.remove("name")));
        specs.add(with(s -> s.put("events", MAPPER.createArrayNode())));
        specs.add(with(s -> s.set("events", MAPPER.createArrayNode().add("upsert"))));
        specs.add(with(s -> s.put("read_consistency", "ANY")));
        specs.add(with(s -> s.put("read_consistency", "SERIAL")));
        specs.add(with(s -> s.put("write_consistency", "MOST")));
        specs.add(with(s -> s.put("write_consistency", "NODE_LOCAL")));
        specs.add(with(s -> s.set("queue", MAPPER.createObjectNode().put("capacity", 0))));
        specs.add(with(s -> s.set("queue", MAPPER.createObjectNode().put("workers", "two"))));
        specs.add(with(s -> s.put("page_size", -1)));
        specs.add(with(s -> s.put("start_delay_ms", -1)));
        specs.add(with(s -> s.set("retry", MAPPER.createObjectNode().put("max_attempts", 0))));
        specs.add(with(s -> s.set("retry", MAPPER.createObjectNode().put("initial_backoff_ms", -1))));
        specs.add(with(s -> s.set("retry", MAPPER.createObjectNode().put("initial_backoff_ms", 500).put("max_backoff_ms", 100))));
        specs.add(with(s -> s.set("retry", MAPPER.createObjectNode().put("max_age_ms", 0))));
        specs.add(with(s -> s.set("overflow", MAPPER.createObjectNode().put("policy", "drop"))));
        specs.add(with(s -> s.set("overflow", MAPPER.createObjectNode().put("block_timeout_ms", -5))));
        specs.add(with(s -> s.set("overflow", MAPPER.createObjectNode().put("policy", "elastic").put("max_workers", 1))));
        specs.add(with(s -> s.set("backup", MAPPER.createObjectNode().put("enabled", "yes"))));
        specs.add(with(s -> s.set("backup", MAPPER.createObjectNode().put("safety_net_ms", 0))));
        specs.add(with(s -> s.put("handler", "not a class")));
        specs.add(with(s -> target(s).put("mode", "mirror")));
        return specs;
    }

    /** What the parser makes of the minimal spec, by dotted option path. */
    private static ObjectNode defaults()
    {
        FlowSpec spec = parse(minimal());
        ObjectNode d = MAPPER.createObjectNode();
        d.put("queue.capacity", spec.queueCapacity);
        d.put("queue.workers", spec.workers);
        d.put("page_size", spec.pageSize);
        d.put("start_delay_ms", spec.startDelayMillis);
        d.put("read_consistency", spec.readConsistency.name());
        d.put("write_consistency", spec.writeConsistency.name());
        ArrayNode events = d.putArray("events");
        for (Operation op : spec.events)
            events.add(op.name().toLowerCase(Locale.ROOT));
        d.put("retry.max_attempts", spec.retry.maxAttempts);
        d.put("retry.initial_backoff_ms", spec.retry.initialBackoffMillis);
        d.put("retry.max_backoff_ms", spec.retry.maxBackoffMillis);
        d.put("retry.max_age_ms", spec.retry.maxAgeMillis);
        d.put("overflow.policy", spec.overflow.policy.name().toLowerCase(Locale.ROOT));
        d.put("overflow.block_timeout_ms", spec.overflow.blockTimeoutMillis);
        d.put("overflow.max_workers", spec.overflow.maxWorkers);
        d.put("backup.enabled", spec.backup.enabled);
        d.put("backup.safety_net_ms", spec.backup.safetyNetMillis);
        d.putNull("handler");
        d.put("targets[].mode", spec.targets.get(0).mode.name().toLowerCase(Locale.ROOT));
        return d;
    }

    /** Every value the parser accepts for each enumerated option, found by trying each candidate. */
    private static ObjectNode choices()
    {
        ObjectNode c = MAPPER.createObjectNode();
        ArrayNode policies = c.putArray("overflow.policy");
        for (FlowSpec.Overflow.Policy p : FlowSpec.Overflow.Policy.values())
        {
            String name = p.name().toLowerCase(Locale.ROOT);
            if (accepts(with(s -> s.set("overflow", MAPPER.createObjectNode().put("policy", name)))))
                policies.add(name);
        }
        for (String option : List.of("read_consistency", "write_consistency"))
        {
            ArrayNode levels = c.putArray(option);
            for (ConsistencyLevel cl : ConsistencyLevel.values())
                if (accepts(with(s -> s.put(option, cl.name()))))
                    levels.add(cl.name());
        }
        ArrayNode events = c.putArray("events");
        for (Operation op : Operation.values())
        {
            String name = op.name().toLowerCase(Locale.ROOT);
            if (accepts(with(s -> s.set("events", MAPPER.createArrayNode().add(name)))))
                events.add(name);
        }
        ArrayNode modes = c.putArray("targets[].mode");
        for (FlowSpec.Mode mode : FlowSpec.Mode.values())
        {
            String name = mode.name().toLowerCase(Locale.ROOT);
            if (accepts(with(s -> target(s).put("mode", name))))
                modes.add(name);
        }
        return c;
    }

    private static boolean accepts(JsonNode spec)
    {
        try
        {
            parse(spec);
            return true;
        }
        catch (FlowSpecException e)
        {
            return false;
        }
    }

    private static ObjectNode fromParser()
    {
        ObjectNode golden = MAPPER.createObjectNode();
        golden.set("defaults", defaults());
        golden.set("choices", choices());
        ArrayNode rejected = golden.putArray("rejected");
        for (ObjectNode spec : rejectedSpecs())
        {
            FlowSpecException e = assertThrows(FlowSpecException.class, () -> parse(spec), spec.toString());
            rejected.addObject().<ObjectNode>set("spec", spec).put("message", e.getMessage());
        }
        return golden;
    }

    @Test
    void shouldMatchTheGoldenFlowSpecContract() throws IOException
    {
        JsonNode actual = MAPPER.readTree(MAPPER.writeValueAsString(fromParser())); // numbers as the file has them
        if (Boolean.getBoolean("golden.update"))
        {
            Files.write(GOLDEN, (MAPPER.writeValueAsString(actual) + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return;
        }
        JsonNode golden = MAPPER.readTree(GOLDEN.toFile());
        assertEquals(golden.get("defaults"), actual.get("defaults"), "defaults (rewrite with -Dgolden.update=true)");
        assertEquals(golden.get("choices"), actual.get("choices"), "choices (rewrite with -Dgolden.update=true)");
        for (JsonNode rejected : golden.get("rejected"))
        {
            FlowSpecException e = assertThrows(FlowSpecException.class, () -> parse(rejected.get("spec")), rejected.get("spec").toString());
            assertEquals(rejected.get("message").asText(), e.getMessage());
        }
        assertEquals(golden.get("rejected"), actual.get("rejected"), "rejected cases (rewrite with -Dgolden.update=true)");
    }
}
