package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.Cql;

import static org.asynctriggers.execute.Statements.bigint;
import static org.asynctriggers.execute.Statements.longOf;

/**
 * A source row's lineage version (docs/design.md, "Lineage"): a counter per (flow, source row) in
 * {@code async_triggers.lineage_versions}, taken by a compare-and-set (Paxos), so that versions are unique and the
 * one taken last is the highest: the task that holds it read the row after every other task of the row took its own.
 */
final class LineageVersions
{
    private final String flow;
    private final ByteBuffer flowNameBytes;
    private final Statements statements;
    private final ConsistencyLevel read;
    private final ConsistencyLevel commit;

    LineageVersions(String flow, Statements statements, ConsistencyLevel lineageRead, ConsistencyLevel lineageWrite)
    {
        this.flow = flow;
        this.flowNameBytes = ByteBuffer.wrap(flow.getBytes(StandardCharsets.UTF_8));
        this.statements = statements;
        this.read = lineageRead;
        // a version's Paxos commit is seen by every quorum read (ALL where the flow writes at ALL)
        this.commit = lineageWrite == ConsistencyLevel.ALL ? ConsistencyLevel.ALL : ConsistencyLevel.QUORUM;
    }

    /** The row's version as a quorum reads it; null: none taken yet. */
    Long read(ByteBuffer sourceKey)
    {
        List<Map<String, ByteBuffer>> rows = statements.execute(Cql.lineageVersionSelect(), read, List.of(flowNameBytes, sourceKey));
        ByteBuffer version = rows.isEmpty() ? null : rows.get(0).get("version");
        return version == null || version.remaining() != 8 ? null : longOf(version);
    }

    /**
     * The compare-and-set of the row's version from {@code known} (null: none) to {@code version}. Returns null when
     * this task took it, else the version another task set ({@link Long#MIN_VALUE}: none).
     */
    Long take(ByteBuffer sourceKey, Long known, long version)
    {
        List<ByteBuffer> bound = new ArrayList<>(List.of(bigint(version), flowNameBytes, sourceKey));
        bound.add(known == null ? null : bigint(known));
        List<Map<String, ByteBuffer>> result = statements.execute(Cql.lineageVersionTake(), commit, bound);
        if (result.isEmpty())
            throw new IllegalStateException("flow '" + flow + "': the compare-and-set of a lineage version returned nothing");
        ByteBuffer applied = result.get(0).get("[applied]");
        if (applied != null && applied.hasRemaining() && applied.get(applied.position()) != 0)
            return null;
        ByteBuffer current = result.get(0).get("version");
        return current == null || current.remaining() != 8 ? Long.MIN_VALUE : longOf(current);
    }
}
