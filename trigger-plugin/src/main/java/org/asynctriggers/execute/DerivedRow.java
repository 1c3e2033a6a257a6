package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.spec.FlowSpec;

import static org.asynctriggers.execute.Statements.bigint;

/**
 * The writes of one derived row (docs/design.md, "Write shapes"): an optional row marker and cells, each at its own
 * timestamp and with what is left of its own TTL. CQL has one timestamp and one TTL per statement, so the cells are
 * grouped by both: one statement per group (one in the common case of a single write), an {@code INSERT} for the group
 * that carries the marker, an {@code UPDATE} (no marker) for the others. A cell whose source expired before the task
 * ran is written as what Cassandra made of it, a tombstone at its timestamp; an expired marker as one that expires at once.
 */
final class DerivedRow
{
    private static final long NONE = Long.MIN_VALUE;

    private final FlowSpec.Target target;
    private final List<String> keyColumns;
    private final List<ByteBuffer> key;
    private long markerTimestamp = NONE;
    private long markerExpiresAt;
    private final Map<String, SourceCells.Cell> cells = new LinkedHashMap<>();
    private final Map<String, List<SourceRow.Run>> runs = new LinkedHashMap<>();
    private final Map<String, List<SourceRow.Run>> lists = new LinkedHashMap<>();
    private final Map<String, Long> runTimestamps = new LinkedHashMap<>();
    private final Map<String, Long> runCaps = new LinkedHashMap<>();

    DerivedRow(FlowSpec.Target target, List<ByteBuffer> key)
    {
        this.target = target;
        this.keyColumns = target.primaryKey();
        this.key = key;
    }

    /** @param expiresAt local expiration time (s); 0: none */
    DerivedRow marker(long timestamp, long expiresAt)
    {
        markerTimestamp = timestamp;
        markerExpiresAt = expiresAt;
        return this;
    }

    DerivedRow cell(String column, SourceCells.Cell cell)
    {
        cells.put(column, cell);
        return this;
    }

    /**
     * A collection (or non-frozen UDT) whose elements expire at different times, at {@code timestamp}: its runs in
     * order ({@link SourceRow.Run}), none living past {@code capExpiresAt} (0: no cap). The first live run overwrites
     * the column (an older version's elements go), the others are added to it, each with its own TTL.
     */
    DerivedRow runs(String column, List<SourceRow.Run> runs, long timestamp, long capExpiresAt)
    {
        this.runs.put(column, runs);
        runTimestamps.put(column, timestamp);
        runCaps.put(column, capExpiresAt);
        return this;
    }

    /**
     * A list's live elements in order, at {@code timestamp}, none living past {@code capExpiresAt} (0: no cap),
     * written through {@link org.asynctriggers.cql.CqlGateway#writeList} (the same list written twice is there once).
     */
    DerivedRow list(String column, List<SourceRow.Run> elements, long timestamp, long capExpiresAt)
    {
        lists.put(column, elements);
        runTimestamps.put(column, timestamp);
        runCaps.put(column, capExpiresAt);
        return this;
    }

    boolean isEmpty()
    {
        return markerTimestamp == NONE && cells.isEmpty() && runs.isEmpty() && lists.isEmpty();
    }

    /** Writes the row; {@code nowMillis} counts the TTLs left. */
    void write(Statements statements, ConsistencyLevel consistency, long nowMillis)
    {
        // per column written in runs, the live runs after the first (which is written as the column's value)
        Map<String, List<SourceRow.Run>> added = new LinkedHashMap<>();
        for (Map.Entry<String, List<SourceRow.Run>> e : runs.entrySet())
        {
            long cap = runCaps.get(e.getKey());
            List<SourceRow.Run> live = new ArrayList<>();
            for (SourceRow.Run run : e.getValue())
            {
                long expiresAt = cap == 0 ? run.expiresAt : run.expiresAt == 0 ? cap : Math.min(cap, run.expiresAt);
                if (expiresAt == 0 || !Expiry.remaining(expiresAt, nowMillis).expired)
                    live.add(new SourceRow.Run(run.value, expiresAt, run.field));
            }
            long ts = runTimestamps.get(e.getKey());
            cells.put(e.getKey(), new SourceCells.Cell(live.isEmpty() ? null : live.get(0).value, ts, live.isEmpty() ? 0 : live.get(0).expiresAt));
            if (live.size() > 1)
                added.put(e.getKey(), live.subList(1, live.size()));
        }
        Map<String, List<SourceRow.Run>> liveLists = new LinkedHashMap<>();
        for (Map.Entry<String, List<SourceRow.Run>> e : lists.entrySet())
        {
            long cap = runCaps.get(e.getKey());
            List<SourceRow.Run> live = new ArrayList<>();
            for (SourceRow.Run element : e.getValue())
            {
                long expiresAt = cap == 0 ? element.expiresAt : element.expiresAt == 0 ? cap : Math.min(cap, element.expiresAt);
                if (expiresAt == 0 || !Expiry.remaining(expiresAt, nowMillis).expired)
                    live.add(new SourceRow.Run(element.value, expiresAt, null));
            }
            if (live.isEmpty())
                cells.put(e.getKey(), new SourceCells.Cell(null, runTimestamps.get(e.getKey()), 0)); // none: a deletion
            else
                liveLists.put(e.getKey(), live);
        }
        writeCells(statements, consistency, nowMillis);
        for (Map.Entry<String, List<SourceRow.Run>> e : liveLists.entrySet())
        {
            List<ByteBuffer> values = new ArrayList<>();
            List<Integer> ttls = new ArrayList<>();
            for (SourceRow.Run element : e.getValue())
            {
                values.add(element.value);
                ttls.add(element.expiresAt == 0 ? 0 : Expiry.remaining(element.expiresAt, nowMillis).ttl);
            }
            statements.gateway.writeList(target.keyspace, target.table, key, e.getKey(), values, ttls,
                                         runTimestamps.get(e.getKey()), consistency);
        }
        for (Map.Entry<String, List<SourceRow.Run>> e : added.entrySet())
        {
            long ts = runTimestamps.get(e.getKey());
            for (SourceRow.Run run : e.getValue())
            {
                int ttl = run.expiresAt == 0 ? 0 : Expiry.remaining(run.expiresAt, nowMillis).ttl;
                List<ByteBuffer> bound = new ArrayList<>();
                if (ttl > 0)
                    bound.add(ByteBuffer.allocate(4).putInt(0, ttl));
                bound.add(bigint(ts));
                bound.add(run.value);
                bound.addAll(key);
                String column = e.getKey();
                boolean withTtl = ttl > 0;
                String cql = run.field == null
                             ? statements.text(List.of("add", target, column, withTtl),
                                               () -> Cql.updateAdding(target.keyspace, target.table, column, keyColumns, withTtl))
                             : statements.text(List.of("field", target, column, run.field, withTtl),
                                               () -> Cql.updateField(target.keyspace, target.table, column, run.field, keyColumns, withTtl));
                statements.execute(cql, consistency, bound);
            }
        }
    }

    private void writeCells(Statements statements, ConsistencyLevel consistency, long nowMillis)
    {
        // (timestamp, ttl) -> columns; ttl -1: expired marker
        Map<List<Long>, List<String>> groups = new LinkedHashMap<>();
        Map<String, ByteBuffer> written = new LinkedHashMap<>();
        for (Map.Entry<String, SourceCells.Cell> e : cells.entrySet())
        {
            SourceCells.Cell cell = e.getValue();
            ByteBuffer value = cell.value;
            long ttl = 0;
            if (value != null && cell.expiresAt != 0)
            {
                Expiry left = Expiry.remaining(cell.expiresAt, nowMillis);
                if (left.expired)
                    value = null;
                else
                    ttl = left.ttl;
            }
            written.put(e.getKey(), value);
            groups.computeIfAbsent(List.of(cell.timestamp, ttl), g -> new ArrayList<>()).add(e.getKey());
        }
        List<Long> markerGroup = null;
        if (markerTimestamp != NONE)
        {
            long ttl = 0;
            if (markerExpiresAt != 0)
            {
                Expiry left = Expiry.remaining(markerExpiresAt, nowMillis);
                ttl = left.expired ? 1 : left.ttl; // an expired marker: one that expires at once
            }
            markerGroup = List.of(markerTimestamp, ttl);
            groups.putIfAbsent(markerGroup, new ArrayList<>());
        }
        for (Map.Entry<List<Long>, List<String>> group : groups.entrySet())
        {
            long ts = group.getKey().get(0);
            int ttl = group.getKey().get(1).intValue();
            List<String> columns = group.getValue();
            List<ByteBuffer> bound = new ArrayList<>();
            String cql;
            if (group.getKey().equals(markerGroup))
            {
                List<String> all = new ArrayList<>(keyColumns);
                all.addAll(columns);
                bound.addAll(key);
                for (String column : columns)
                    bound.add(written.get(column));
                boolean withTtl = ttl > 0;
                cql = statements.text(List.of("insert", target, columns, withTtl),
                                      () -> withTtl ? Cql.insertWithTtl(target.keyspace, target.table, all)
                                                    : Cql.insert(target.keyspace, target.table, all));
                if (ttl > 0)
                    bound.add(ByteBuffer.allocate(4).putInt(0, ttl));
                bound.add(bigint(ts));
            }
            else
            {
                if (ttl > 0)
                    bound.add(ByteBuffer.allocate(4).putInt(0, ttl));
                bound.add(bigint(ts));
                for (String column : columns)
                    bound.add(written.get(column));
                bound.addAll(key);
                boolean withTtl = ttl > 0;
                cql = statements.text(List.of("update", target, columns, withTtl),
                                      () -> withTtl ? Cql.updateWithTtl(target.keyspace, target.table, columns, keyColumns)
                                                    : Cql.update(target.keyspace, target.table, columns, keyColumns));
            }
            statements.execute(cql, consistency, bound);
        }
    }
}
