package org.asynctriggers.spec;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.InternalConsistency;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads {@code async_triggers.flows} (at LOCAL_QUORUM: InternalConsistency.FLOWS_READ) and applies added, changed (new version) and removed
 * flows to the registry. A spec that fails validation or does not prepare is not applied; the error is logged once
 * per version and the other flows keep working. Each row's {@code paused} column pauses or resumes its flow (by name,
 * whatever the version); a table made by an older deploy has no such column, and every flow of it runs.
 */
public final class FlowConfigSource
{
    private static final Logger logger = LoggerFactory.getLogger(FlowConfigSource.class);

    private final CqlGateway gateway;
    private final FlowRegistry registry;
    private CqlGateway.Prepared select;
    /** the select prepared has the paused column; false while the table has none (tried again every poll) */
    private boolean selectsPaused;
    /** flow name to the version that failed, so a broken spec is reported once, not every 2 s */
    private final Map<String, Long> failed = new HashMap<>();
    private String lastReadProblem;

    public FlowConfigSource(CqlGateway gateway, FlowRegistry registry)
    {
        this.gateway = gateway;
        this.registry = registry;
    }

    /** One poll; never throws. @return true when the flows table was read */
    public boolean poll()
    {
        List<Map<String, ByteBuffer>> rows;
        try
        {
            if (select == null || !selectsPaused)
                prepareSelect();
            rows = gateway.execute(select, InternalConsistency.FLOWS_READ, List.of());
            lastReadProblem = null;
        }
        catch (RuntimeException e)
        {
            // the keyspace does not exist until the first `ctl trigger deploy`: not worth more than a debug line
            String problem = String.valueOf(e.getMessage());
            if (!problem.equals(lastReadProblem))
                logger.debug("async_triggers.flows not readable yet: {}", problem);
            lastReadProblem = problem;
            select = null;
            return false;
        }

        Map<String, Long> applied = registry.appliedVersions();
        HashSet<String> seen = new HashSet<>();
        for (Map<String, ByteBuffer> row : rows)
        {
            String name = text(row.get("name"));
            if (name == null)
                continue;
            seen.add(name);
            registry.paused(name, flag(row.get("paused")));
            ByteBuffer versionBytes = row.get("version");
            long version = versionBytes == null || versionBytes.remaining() != 8 ? 0 : versionBytes.getLong(versionBytes.position());
            if (Objects.equals(applied.get(name), version))
                continue;
            boolean reported = Objects.equals(failed.get(name), version);
            try
            {
                FlowSpec spec = FlowSpecParser.parse(text(row.get("spec")), name, version);
                registry.apply(spec);
                failed.remove(name);
                logger.info("Applied flow '{}' version {} on {}.{}", name, version, spec.source.keyspace, spec.source.table);
            }
            catch (RuntimeException | LinkageError e)
            {
                failed.put(name, version);
                if (!reported)
                    logger.error("Flow '{}' version {} not applied: {}", name, version, e.getMessage(), e instanceof FlowSpecException ? null : e);
            }
        }
        for (String name : applied.keySet())
        {
            if (!seen.contains(name))
            {
                registry.remove(name);
                logger.info("Removed flow '{}'", name);
            }
        }
        failed.keySet().retainAll(seen);
        return true;
    }

    /** With the paused column if the table has it; a table without it (an older deploy) reads as nothing paused. */
    private void prepareSelect()
    {
        try
        {
            select = gateway.prepare(Cql.flowsSelect(true));
            selectsPaused = true;
        }
        catch (RuntimeException e)
        {
            if (select == null)
                select = gateway.prepare(Cql.flowsSelect(false));
            selectsPaused = false;
        }
    }

    /** A boolean cell; null (never paused) is false. */
    private static boolean flag(ByteBuffer bytes)
    {
        return bytes != null && bytes.remaining() == 1 && bytes.get(bytes.position()) != 0;
    }

    private static String text(ByteBuffer bytes)
    {
        if (bytes == null)
            return null;
        return StandardCharsets.UTF_8.decode(bytes.duplicate()).toString();
    }
}
