package org.asynctriggers.testing;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.task.Task;

/**
 * In-memory {@link CqlGateway} with Cassandra's last-write-wins rules (cell timestamps, row and range tombstones
 * shadowing writes with a lower or equal timestamp). Understands exactly the statement shapes {@link Cql} builds.
 * TTLs expire on its own clock, {@link #nowSeconds}: an expired cell or row marker stays, shadowing older ones, as in
 * Cassandra, but is not visible.
 * <p>
 * About 600 lines: it is a small Cassandra (writes, reads, tombstones, TTLs, the storage view a row's life is read
 * from), and the tests that drive the executors through it need every part to agree with the others.
 */
public final class FakeGateway implements CqlGateway
{
    private static final Pattern INSERT = Pattern.compile("INSERT INTO \"(\\w+)\"\\.\"(\\w+)\" \\((.*)\\) VALUES \\((.*)\\) USING (TIMESTAMP \\?|TTL \\d+|TTL \\? AND TIMESTAMP \\?)");
    private static final Pattern UPDATE = Pattern.compile("UPDATE \"(\\w+)\"\\.\"(\\w+)\" USING (TIMESTAMP \\?|TTL \\? AND TIMESTAMP \\?) SET (.*) WHERE (.*)");
    private static final Pattern TTL_OF = Pattern.compile("TTL\\((\\w+)\\)");
    private static final Pattern WRITETIME_OF = Pattern.compile("WRITETIME\\((\\w+)\\)");
    private static final Pattern DELETE = Pattern.compile("DELETE FROM \"(\\w+)\"\\.\"(\\w+)\" USING TIMESTAMP \\? WHERE (.*)");
    private static final Pattern CAS = Pattern.compile("UPDATE \"(\\w+)\"\\.\"(\\w+)\" SET \"(\\w+)\" = \\? WHERE (.*) IF \"(\\w+)\" = \\?");
    private static final Pattern SELECT = Pattern.compile("SELECT (.*) FROM \"(\\w+)\"\\.\"(\\w+)\"(?: WHERE (.*))?");

    public static final class Cell
    {
        public final ByteBuffer value;
        public final long ts;
        /** local expiration time (s); Long.MAX_VALUE: none */
        public final long expiresAt;

        Cell(ByteBuffer value, long ts, long expiresAt)
        {
            this.value = value;
            this.ts = ts;
            this.expiresAt = expiresAt;
        }
    }

    public static final class Table
    {
        public final List<String> partitionKey;
        public final List<String> clustering;
        public final TreeMap<String, List<ByteBuffer>> keys = new TreeMap<>();
        public final Map<String, Map<String, Cell>> cells = new HashMap<>();
        public final Map<String, Long> markers = new HashMap<>();
        /** local expiration time (s) of each row marker; absent: none */
        public final Map<String, Long> markerExpiresAt = new HashMap<>();
        private final FakeGateway gateway;
        public final List<Map.Entry<List<ByteBuffer>, Long>> tombstones = new ArrayList<>();
        /** static columns' cells by partition, copied into every row of the partition as it is written */
        public final Map<String, Map<String, Cell>> statics = new HashMap<>();
        /** the columns static writes have written: only a partition deletion deletes them, and they keep no row alive */
        public final Set<String> staticColumns = new HashSet<>();
        /** range tombstones: a key prefix, then bounds on the next component (null: unbounded) */
        public final List<RangeTombstone> ranges = new ArrayList<>();

        Table(FakeGateway gateway, List<String> partitionKey, List<String> clustering)
        {
            this.gateway = gateway;
            this.partitionKey = partitionKey;
            this.clustering = clustering;
        }

        public List<String> primaryKey()
        {
            List<String> all = new ArrayList<>(partitionKey);
            all.addAll(clustering);
            return all;
        }

        public long deletedAt(List<ByteBuffer> key)
        {
            long max = Long.MIN_VALUE;
            for (Map.Entry<List<ByteBuffer>, Long> t : tombstones)
                if (t.getKey().size() <= key.size() && key.subList(0, t.getKey().size()).equals(t.getKey()))
                    max = Math.max(max, t.getValue());
            for (RangeTombstone r : ranges)
                if (r.covers(key))
                    max = Math.max(max, r.ts);
            return max;
        }

        /** The newest deletion covering the cell {@code column} of the row {@code key} (a static one: its partition's). */
        public long deletedAt(List<ByteBuffer> key, String column)
        {
            return staticColumns.contains(column) ? deletedAt(key.subList(0, partitionKey.size())) : deletedAt(key);
        }

        /** visible columns of the row, or null when the row does not exist */
        public Map<String, ByteBuffer> visible(String id)
        {
            List<ByteBuffer> key = keys.get(id);
            long deleted = deletedAt(key);
            Map<String, ByteBuffer> row = new LinkedHashMap<>();
            long now = gateway.nowSeconds;
            boolean live = markers.getOrDefault(id, Long.MIN_VALUE) > deleted && markerExpiresAt.getOrDefault(id, Long.MAX_VALUE) > now;
            for (Map.Entry<String, Cell> c : cells.getOrDefault(id, Map.of()).entrySet())
            {
                if (c.getValue().ts > deletedAt(key, c.getKey()) && c.getValue().value != null && c.getValue().expiresAt > now)
                {
                    row.put(c.getKey(), c.getValue().value);
                    live |= !staticColumns.contains(c.getKey());
                }
            }
            if (!live)
                return null;
            List<String> pk = primaryKey();
            for (int i = 0; i < pk.size(); i++)
                row.put(pk.get(i), key.get(i));
            return row;
        }
    }

    /** {@code DELETE ... WHERE "p" = ? AND "c" >= ? AND "c" < ?}: a prefix and a slice of the next component */
    public static final class RangeTombstone
    {
        final List<ByteBuffer> prefix;
        final ByteBuffer start, end;
        final boolean startInclusive, endInclusive;
        public final long ts;

        RangeTombstone(List<ByteBuffer> prefix, ByteBuffer start, boolean startInclusive, ByteBuffer end, boolean endInclusive, long ts)
        {
            this.prefix = prefix;
            this.start = start;
            this.startInclusive = startInclusive;
            this.end = end;
            this.endInclusive = endInclusive;
            this.ts = ts;
        }

        boolean covers(List<ByteBuffer> key)
        {
            if (key.size() <= prefix.size() || !key.subList(0, prefix.size()).equals(prefix))
                return false;
            ByteBuffer v = key.get(prefix.size());
            int s = start == null ? 1 : org.apache.cassandra.utils.ByteBufferUtil.compareUnsigned(v, start);
            int e = end == null ? -1 : org.apache.cassandra.utils.ByteBufferUtil.compareUnsigned(v, end);
            return (s > 0 || (s == 0 && startInclusive)) && (e < 0 || (e == 0 && endInclusive));
        }
    }

    public final Map<String, Table> tables = new HashMap<>();
    /** the fake's clock for TTLs, in seconds since the epoch */
    public volatile long nowSeconds = 1_700_000_000L;
    /** local reads answer as a replica that missed every static write (a node down, hints off) */
    public volatile boolean staticsMissedHere;
    public final List<String> executed = new ArrayList<>();
    public final List<ConsistencyLevel> consistencies = new ArrayList<>();
    public int pagesFetched;
    public int largestPage;
    /** fail the next n executions, to test retries */
    public int failNext;
    /** the levels the replicas that are up can meet; a statement at another fails as Unavailable (after it is recorded) */
    public volatile java.util.function.Predicate<ConsistencyLevel> reachable = level -> true;
    /** runs before every statement, outside the gateway's lock: a test may block there, or throw to fail it */
    public volatile java.util.function.Consumer<String> beforeEach = cql -> {};

    public FakeGateway table(String keyspace, String table, List<String> partitionKey, List<String> clustering)
    {
        tables.put(keyspace + '.' + table, new Table(this, partitionKey, clustering));
        return this;
    }

    public FakeGateway withAsyncTriggersKeyspace()
    {
        table(Cql.KEYSPACE, "lineage", List.of("flow", "source_key"), List.of("target_key"));
        table(Cql.KEYSPACE, "lineage_keys", List.of("flow", "source_partition"), List.of("source_key"));
        table(Cql.KEYSPACE, "lineage_versions", List.of("flow", "source_key"), List.of());
        table(Cql.KEYSPACE, "aggregate_timers", List.of("flow", "hour"), List.of("due", "target", "group_key"));
        table(Cql.KEYSPACE, "flows", List.of("name"), List.of());
        table(Cql.KEYSPACE, "flow_status", List.of("flow"), List.of("node"));
        table(Cql.KEYSPACE, "dead_letters", List.of("flow"), List.of("id"));
        table(Cql.KEYSPACE, "dead_letter_retries", List.of("node"), List.of("flow", "id"));
        return this;
    }

    public Table table(String keyspace, String table)
    {
        Table t = tables.get(keyspace + '.' + table);
        if (t == null)
            throw new IllegalArgumentException("table " + keyspace + '.' + table + " does not exist");
        return t;
    }

    private static String id(List<ByteBuffer> key)
    {
        StringBuilder sb = new StringBuilder();
        for (ByteBuffer b : key)
        {
            for (int i = b.position(); i < b.limit(); i++)
                sb.append(String.format("%02x", b.get(i)));
            sb.append('/');
        }
        return sb.toString();
    }

    private static List<String> names(String list)
    {
        return Arrays.stream(list.split(",")).map(String::trim).map(s -> s.replace("\"", "")).collect(Collectors.toList());
    }

    private static List<String> whereColumns(String where)
    {
        if (where == null)
            return List.of();
        return Arrays.stream(where.split(" AND ")).map(s -> s.replace(" = ?", "").replace("\"", "").trim()).collect(Collectors.toList());
    }

    @Override
    public Prepared prepare(String cql)
    {
        if (cql.startsWith(BATCH_START))
        {
            for (String inner : batchStatements(cql))
                prepare(inner);
            return new Prepared(cql, null);
        }
        Matcher m;
        if ((m = INSERT.matcher(cql)).matches() || (m = DELETE.matcher(cql)).matches() || (m = UPDATE.matcher(cql)).matches()
            || (m = CAS.matcher(cql)).matches())
            table(m.group(1), m.group(2));
        else if ((m = SELECT.matcher(cql)).matches())
            table(m.group(2), m.group(3));
        else
            throw new IllegalArgumentException("fake cannot prepare [" + cql + "]");
        return new Prepared(cql, null);
    }

    /**
     * Applies a task's source write to the source table, as the replica that captured it did before the task runs
     * (the executor reads the row back on its own replica, where the write is): the row deletion, the row marker and
     * each cell at its own timestamp. A key shorter than the table's deletes what it names. Returns the task.
     */
    public synchronized Task applied(String keyspace, String table, Task task)
    {
        Table t = table(keyspace, table);
        List<ByteBuffer> key = task.key();
        if (task.isStatic())
        {
            String partition = id(key);
            Map<String, Cell> shared = t.statics.computeIfAbsent(partition, k -> new HashMap<>());
            for (Map.Entry<String, ByteBuffer> e : task.values().entrySet())
                if (!t.partitionKey.contains(e.getKey()))
                {
                    t.staticColumns.add(e.getKey());
                    writeCell(shared, e.getKey(), e.getValue(), task.timestampOf(e.getKey()), Long.MAX_VALUE);
                    for (Map.Entry<String, List<ByteBuffer>> row : t.keys.entrySet())
                        if (id(row.getValue().subList(0, key.size())).equals(partition))
                            t.cells.computeIfAbsent(row.getKey(), k -> new HashMap<>()).put(e.getKey(), shared.get(e.getKey()));
                }
            return task;
        }
        org.asynctriggers.task.KeyRange range = task.range();
        if (range != null)
        {
            int next = key.size() - t.partitionKey.size();
            t.ranges.add(new RangeTombstone(List.copyOf(key), range.start().size() > next ? range.start().get(next) : null, range.startInclusive(),
                                            range.end().size() > next ? range.end().get(next) : null, range.endInclusive(), task.deletionTimestamp()));
            return task;
        }
        if (task.deletionTimestamp() != org.asynctriggers.task.SourceChange.NONE)
            t.tombstones.add(Map.entry(List.copyOf(key), task.deletionTimestamp()));
        if (key.size() < t.primaryKey().size())
            return task;
        String id = id(key);
        t.keys.put(id, key);
        long liveness = task.livenessTimestamp();
        if (liveness != org.asynctriggers.task.SourceChange.NONE && liveness >= t.markers.getOrDefault(id, Long.MIN_VALUE))
        {
            t.markers.put(id, liveness);
            if (task.rowExpiresAt() == 0)
                t.markerExpiresAt.remove(id);
            else
                t.markerExpiresAt.put(id, task.rowExpiresAt());
        }
        Map<String, Cell> row = t.cells.computeIfAbsent(id, k -> new HashMap<>(t.statics.getOrDefault(id(key.subList(0, t.partitionKey.size())), Map.of())));
        for (Map.Entry<String, ByteBuffer> e : task.values().entrySet())
            if (!t.primaryKey().contains(e.getKey()))
                writeCell(row, e.getKey(), e.getValue(), task.timestampOf(e.getKey()), task.expirations().getOrDefault(e.getKey(), Long.MAX_VALUE));
        return task;
    }

    /** Direct writes for test setup. */
    public void insert(String keyspace, String table, Map<String, ByteBuffer> row, long ts)
    {
        List<String> columns = new ArrayList<>(row.keySet());
        List<ByteBuffer> values = new ArrayList<>(row.values());
        values.add(Fixtures.bigint(ts));
        executeNow(prepare(Cql.insert(keyspace, table, columns)), ConsistencyLevel.ONE, values);
        executed.remove(executed.size() - 1);
        consistencies.remove(consistencies.size() - 1);
    }

    /** Direct writes with a TTL (seconds, on {@link #nowSeconds}) for test setup. */
    public void insert(String keyspace, String table, Map<String, ByteBuffer> row, long ts, int ttl)
    {
        List<ByteBuffer> values = new ArrayList<>(row.values());
        values.add(ByteBuffer.allocate(4).putInt(0, ttl));
        values.add(Fixtures.bigint(ts));
        executeNow(prepare(Cql.insertWithTtl(keyspace, table, new ArrayList<>(row.keySet()))), ConsistencyLevel.ONE, values);
        executed.remove(executed.size() - 1);
        consistencies.remove(consistencies.size() - 1);
    }

    @Override
    public List<Map<String, ByteBuffer>> execute(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values)
    {
        beforeEach.accept(statement.cql);
        return executeNow(statement, consistency, values);
    }

    private synchronized List<Map<String, ByteBuffer>> executeNow(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values)
    {
        if (failNext > 0)
        {
            failNext--;
            throw new RuntimeException("injected failure");
        }
        executed.add(statement.cql);
        consistencies.add(consistency);
        refuseUnreachable(consistency);
        if (statement.cql.startsWith(BATCH_START))
        {
            int at = 0;   // each statement's values, in the order of the batch's markers
            for (String inner : batchStatements(statement.cql))
            {
                int markers = (int) inner.chars().filter(c -> c == '?').count();
                apply(inner, values.subList(at, at + markers));
                at += markers;
            }
            return List.of();
        }
        return apply(statement.cql, values);
    }

    private static final String BATCH_START = "BEGIN UNLOGGED BATCH ";

    /** The statements of {@code BEGIN UNLOGGED BATCH s1; s2; APPLY BATCH}. */
    private static List<String> batchStatements(String cql)
    {
        String body = cql.substring(BATCH_START.length(), cql.length() - "APPLY BATCH".length());
        return Arrays.stream(body.split(";")).map(String::trim).filter(x -> !x.isEmpty()).collect(Collectors.toList());
    }

    private List<Map<String, ByteBuffer>> apply(String cql, List<ByteBuffer> values)
    {
        Matcher m;
        if ((m = CAS.matcher(cql)).matches())
            return compareAndSet(m, values);
        if ((m = INSERT.matcher(cql)).matches())
        {
            Table t = table(m.group(1), m.group(2));
            List<String> columns = names(m.group(3));
            String using = m.group(5);
            boolean boundTtl = using.startsWith("TTL ?");
            long ts = using.startsWith("TIMESTAMP") ? values.get(columns.size()).getLong(0)
                    : boundTtl ? values.get(columns.size() + 1).getLong(0) : Long.MAX_VALUE / 2;
            int ttl = boundTtl ? values.get(columns.size()).getInt(0) : using.startsWith("TTL") ? Integer.parseInt(using.substring(4)) : 0;
            long expiresAt = ttl == 0 ? Long.MAX_VALUE : nowSeconds + ttl;
            Map<String, ByteBuffer> byName = new HashMap<>();
            for (int i = 0; i < columns.size(); i++)
                byName.put(columns.get(i), values.get(i));
            List<ByteBuffer> key = new ArrayList<>();
            for (String k : t.primaryKey())
            {
                ByteBuffer v = byName.get(k);
                if (v == null)
                    throw new IllegalArgumentException("Invalid null value for key column " + k + " in [" + cql + "]");
                key.add(v);
            }
            String id = id(key);
            t.keys.put(id, key);
            if (ts >= t.markers.getOrDefault(id, Long.MIN_VALUE))
            {
                t.markers.put(id, ts);
                if (expiresAt == Long.MAX_VALUE)
                    t.markerExpiresAt.remove(id);
                else
                    t.markerExpiresAt.put(id, expiresAt);
            }
            Map<String, Cell> row = t.cells.computeIfAbsent(id, k -> new HashMap<>());
            for (String column : columns)
                if (!t.primaryKey().contains(column))
                    writeCell(row, column, byName.get(column), ts, expiresAt);
            return List.of();
        }
        if ((m = UPDATE.matcher(cql)).matches())
        {
            Table t = table(m.group(1), m.group(2));
            boolean boundTtl = m.group(3).startsWith("TTL");
            int ttl = boundTtl ? values.get(0).getInt(0) : 0;
            long ts = values.get(boundTtl ? 1 : 0).getLong(0);
            int at = boundTtl ? 2 : 1;
            List<String> set = Arrays.stream(m.group(4).split(", ")).map(c -> c.replace(" = ?", "").replace("\"", "").trim())
                                     .collect(Collectors.toList());
            List<String> where = whereColumns(m.group(5));
            if (!where.equals(t.primaryKey()))
                throw new IllegalArgumentException("fake: UPDATE must name the whole key: [" + cql + "]");
            List<ByteBuffer> key = new ArrayList<>(values.subList(at + set.size(), values.size()));
            String id = id(key);
            t.keys.put(id, key);
            Map<String, Cell> row = t.cells.computeIfAbsent(id, k -> new HashMap<>());
            for (int i = 0; i < set.size(); i++)
                writeCell(row, set.get(i), values.get(at + i), ts, ttl == 0 || values.get(at + i) == null ? Long.MAX_VALUE : nowSeconds + ttl);
            return List.of();
        }
        if ((m = DELETE.matcher(cql)).matches())
        {
            Table t = table(m.group(1), m.group(2));
            List<String> clauses = Arrays.asList(m.group(3).split(" AND "));
            List<String> equal = new ArrayList<>();
            for (String clause : clauses)
                if (clause.endsWith(" = ?"))
                    equal.add(clause.replace(" = ?", "").replace("\"", "").trim());
            if (!t.primaryKey().subList(0, equal.size()).equals(equal) || equal.size() < t.partitionKey.size())
                throw new IllegalArgumentException("fake: bad delete [" + cql + "]");
            long ts = values.get(0).getLong(0);
            List<ByteBuffer> prefix = List.copyOf(values.subList(1, 1 + equal.size()));
            if (clauses.size() == equal.size())
            {
                t.tombstones.add(Map.entry(prefix, ts));
                return List.of();
            }
            ByteBuffer start = null, end = null;
            boolean startInclusive = false, endInclusive = false;
            int at = 1 + equal.size();
            for (String clause : clauses.subList(equal.size(), clauses.size()))
            {
                String column = clause.replaceAll(" [<>]=? \\?$", "").replace("\"", "").trim();
                if (!column.equals(t.primaryKey().get(equal.size())))
                    throw new IllegalArgumentException("fake: a range delete bounds the column after the prefix: [" + cql + "]");
                if (clause.contains(" >"))
                {
                    start = values.get(at++);
                    startInclusive = clause.contains(">=");
                }
                else
                {
                    end = values.get(at++);
                    endInclusive = clause.contains("<=");
                }
            }
            t.ranges.add(new RangeTombstone(prefix, start, startInclusive, end, endInclusive, ts));
            return List.of();
        }
        if ((m = SELECT.matcher(cql)).matches())
        {
            List<Map<String, ByteBuffer>> rows = new ArrayList<>();
            select(m, values).forEachRemaining(rows::add);
            return rows;
        }
        throw new IllegalArgumentException("fake cannot execute [" + cql + "]");
    }

    /**
     * Cassandra's reconciliation of two cells (Cells.reconcile): the newer timestamp; on a tie a tombstone, then an
     * expiring cell, then of two expiring cells the later expiry, then the greater value.
     */
    private static void writeCell(Map<String, Cell> row, String column, ByteBuffer value, long ts, long expiresAt)
    {
        Cell current = row.get(column);
        if (current == null || current.ts < ts)
        {
            row.put(column, new Cell(value, ts, expiresAt));
            return;
        }
        if (current.ts > ts || current.value == null)
            return;
        boolean expiring = expiresAt != Long.MAX_VALUE, currentExpiring = current.expiresAt != Long.MAX_VALUE;
        boolean wins = value == null
                       || (expiring != currentExpiring ? expiring
                           : expiring && expiresAt != current.expiresAt ? expiresAt > current.expiresAt
                           : org.apache.cassandra.utils.ByteBufferUtil.compareUnsigned(value, current.value) > 0);
        if (wins)
            row.put(column, new Cell(value, ts, expiresAt));
    }

    private void refuseUnreachable(ConsistencyLevel consistency)
    {
        if (!reachable.test(consistency))
            throw org.apache.cassandra.exceptions.UnavailableException.create(consistency, 1, 0);
    }

    private Iterator<Map<String, ByteBuffer>> select(Matcher m, List<ByteBuffer> values)
    {
        Table t = table(m.group(2), m.group(3));
        List<String> columns = names(m.group(1));
        String whereText = m.group(4);
        // a last "key >= ? AND key <= ?" on the next clustering column, a bigint (the aggregate timers' due)
        ByteBuffer from = null, upTo = null;
        if (whereText != null && whereText.endsWith(" <= ?"))
        {
            whereText = whereText.substring(0, whereText.lastIndexOf(" AND "));
            whereText = whereText.substring(0, whereText.lastIndexOf(" AND "));
            from = values.get(values.size() - 2);
            upTo = values.get(values.size() - 1);
            values = values.subList(0, values.size() - 2);
        }
        List<String> where = whereColumns(whereText);
        if (!t.primaryKey().subList(0, where.size()).equals(where))
            throw new IllegalArgumentException("fake: WHERE must restrict a key prefix: " + where);
        List<Map<String, ByteBuffer>> out = new ArrayList<>();
        for (Map.Entry<String, List<ByteBuffer>> e : t.keys.entrySet())
        {
            if (!e.getValue().subList(0, where.size()).equals(values))
                continue;
            if (upTo != null && (e.getValue().get(where.size()).getLong(0) > upTo.getLong(0)
                                 || e.getValue().get(where.size()).getLong(0) < from.getLong(0)))
                continue;
            Map<String, ByteBuffer> row = t.visible(e.getKey());
            if (row == null)
                continue;
            Map<String, ByteBuffer> selected = new LinkedHashMap<>();
            for (String c : columns)
            {
                Matcher ttlOf = TTL_OF.matcher(c);
                Matcher writetimeOf = WRITETIME_OF.matcher(c);
                if (ttlOf.matches())
                    selected.put(Cql.ttlColumn(ttlOf.group(1)), ttlLeft(t, e.getKey(), ttlOf.group(1)));
                else if (writetimeOf.matches())
                    selected.put(Cql.writetimeColumn(writetimeOf.group(1)), writetime(t, e.getKey(), writetimeOf.group(1)));
                else
                    selected.put(c, row.get(c));
            }
            out.add(selected);
        }
        if (out.isEmpty() && where.size() == t.partitionKey.size() && !t.clustering.isEmpty())
            staticRowAlone(t, columns, values).ifPresent(out::add);
        return out.iterator();
    }

    /**
     * What Cassandra returns for a partition without live rows, queried without a clustering restriction: its static
     * row alone, when a static cell lives (with the WRITETIME of each).
     */
    private java.util.Optional<Map<String, ByteBuffer>> staticRowAlone(Table t, List<String> columns, List<ByteBuffer> partition)
    {
        Map<String, Cell> statics = t.statics.getOrDefault(id(partition), Map.of());
        long deleted = t.deletedAt(partition);
        Map<String, ByteBuffer> selected = new LinkedHashMap<>();
        boolean live = false;
        for (String c : columns)
        {
            Matcher writetimeOf = WRITETIME_OF.matcher(c);
            String column = writetimeOf.matches() ? writetimeOf.group(1) : c;
            Cell cell = statics.get(column);
            boolean alive = cell != null && cell.value != null && cell.ts > deleted && cell.expiresAt > nowSeconds;
            live |= alive;
            if (writetimeOf.matches())
                selected.put(Cql.writetimeColumn(column), alive ? Fixtures.bigint(cell.ts) : null);
            else if (!TTL_OF.matcher(c).matches())
                selected.put(c, alive ? cell.value : null);
        }
        return live ? java.util.Optional.of(selected) : java.util.Optional.empty();
    }

    /** What TTL() returns: the seconds left of a live expiring cell, else null. */
    private ByteBuffer ttlLeft(Table t, String id, String column)
    {
        Cell cell = t.cells.getOrDefault(id, Map.of()).get(column);
        if (cell == null || cell.value == null || cell.expiresAt == Long.MAX_VALUE || cell.ts <= t.deletedAt(t.keys.get(id), column))
            return null;
        return ByteBuffer.allocate(4).putInt(0, (int) (cell.expiresAt - nowSeconds));
    }

    /** What WRITETIME() returns: the timestamp of a live cell, else null. */
    private ByteBuffer writetime(Table t, String id, String column)
    {
        Cell cell = t.cells.getOrDefault(id, Map.of()).get(column);
        if (cell == null || cell.value == null || cell.expiresAt <= nowSeconds || cell.ts <= t.deletedAt(t.keys.get(id), column))
            return null;
        return Fixtures.bigint(cell.ts);
    }

    @Override
    public SourceRow readRow(String keyspace, String table, List<ByteBuffer> primaryKey, ConsistencyLevel consistency)
    {
        beforeEach.accept("READ ROW " + keyspace + '.' + table);
        SourceRow row = readRowNow(keyspace, table, primaryKey, consistency);
        Runnable hook = afterNextLocalRead;
        afterNextLocalRead = null;
        if (hook != null)
            hook.run();
        return row;
    }

    private synchronized SourceRow readRowNow(String keyspace, String table, List<ByteBuffer> primaryKey, ConsistencyLevel consistency)
    {
        executed.add("READ ROW " + keyspace + '.' + table);
        consistencies.add(consistency);
        if (consistency != null)
            refuseUnreachable(consistency);
        Table t = table(keyspace, table);
        String id = id(primaryKey);
        if (!t.keys.containsKey(id) || t.visible(id) == null)
            return null;
        long deleted = t.deletedAt(primaryKey);
        long expires = Long.MIN_VALUE;
        if (t.markers.getOrDefault(id, Long.MIN_VALUE) > deleted && t.markerExpiresAt.getOrDefault(id, Long.MAX_VALUE) > nowSeconds)
            expires = t.markerExpiresAt.getOrDefault(id, Long.MAX_VALUE);
        Map<String, SourceRow.Cell> cells = new HashMap<>();
        for (Map.Entry<String, Cell> c : t.cells.getOrDefault(id, Map.of()).entrySet())
        {
            Cell cell = c.getValue();
            if (t.staticColumns.contains(c.getKey()) || cell.value == null || cell.ts <= deleted || cell.expiresAt <= nowSeconds)
                continue;
            cells.put(c.getKey(), new SourceRow.Cell(cell.value, cell.ts, cell.expiresAt == Long.MAX_VALUE ? 0 : cell.expiresAt));
            expires = Math.max(expires, cell.expiresAt);
        }
        List<ByteBuffer> partition = primaryKey.subList(0, t.partitionKey.size());
        long partitionDeleted = t.deletedAt(partition);
        if (!(staticsMissedHere && consistency == null))
            for (Map.Entry<String, Cell> c : t.statics.getOrDefault(id(partition), Map.of()).entrySet())
            {
                Cell cell = c.getValue();
                if (cell.value != null && cell.ts > partitionDeleted && cell.expiresAt > nowSeconds)
                    cells.put(c.getKey(), new SourceRow.Cell(cell.value, cell.ts, cell.expiresAt == Long.MAX_VALUE ? 0 : cell.expiresAt));
            }
        return new SourceRow(cells, expires == Long.MAX_VALUE ? 0 : expires);
    }

    @Override
    public synchronized List<KeyedRow> readPartition(String keyspace, String table, List<ByteBuffer> partitionKey, ConsistencyLevel consistency)
    {
        Table t = table(keyspace, table);
        List<KeyedRow> out = new ArrayList<>();
        for (List<ByteBuffer> key : new ArrayList<>(t.keys.values()))
        {
            if (key.size() != t.primaryKey().size() || !key.subList(0, partitionKey.size()).equals(partitionKey))
                continue;
            SourceRow row = readRowNow(keyspace, table, key, consistency);
            if (row != null)
                out.add(new KeyedRow(new ArrayList<>(key.subList(partitionKey.size(), key.size())), row));
        }
        return out;
    }

    /** A list as one cell: its elements' encoding (the fake keeps values opaque), at the timestamp, without TTL. */
    @Override
    public synchronized void writeList(String keyspace, String table, List<ByteBuffer> primaryKey, String column,
                                       List<ByteBuffer> elements, List<Integer> ttls, long timestamp, ConsistencyLevel consistency)
    {
        executed.add("WRITE LIST " + keyspace + '.' + table + '.' + column);
        consistencies.add(consistency);
        refuseUnreachable(consistency);
        Table t = table(keyspace, table);
        String id = id(primaryKey);
        t.keys.put(id, List.copyOf(primaryKey));
        writeCell(t.cells.computeIfAbsent(id, k -> new HashMap<>()), column, org.asynctriggers.cql.KeyCodec.encode(elements),
                  timestamp, Long.MAX_VALUE);
    }

    /** the timestamps of compare-and-set writes (a Paxos ballot's, later than everything before) */
    private long casTimestamp = Long.MAX_VALUE / 4;

    /** {@code UPDATE ... SET "c" = ? WHERE ... IF "c" = ?}: sets the column when it holds the value expected (null: none) */
    private List<Map<String, ByteBuffer>> compareAndSet(Matcher m, List<ByteBuffer> values)
    {
        Table t = table(m.group(1), m.group(2));
        String column = m.group(3);
        List<String> where = whereColumns(m.group(4));
        if (!where.equals(t.primaryKey()) || !column.equals(m.group(5)))
            throw new IllegalArgumentException("fake: a compare-and-set names the whole key and sets the column it tests");
        List<ByteBuffer> key = new ArrayList<>(values.subList(1, 1 + where.size()));
        ByteBuffer expected = values.get(1 + where.size());
        String id = id(key);
        Map<String, ByteBuffer> row = t.keys.containsKey(id) ? t.visible(id) : null;
        ByteBuffer current = row == null ? null : row.get(column);
        Map<String, ByteBuffer> result = new LinkedHashMap<>();
        if (current == null ? expected != null : !current.equals(expected))
        {
            result.put("[applied]", ByteBuffer.wrap(new byte[]{ 0 }));
            result.put(column, current);
            return List.of(result);
        }
        t.keys.put(id, key);
        writeCell(t.cells.computeIfAbsent(id, k -> new HashMap<>()), column, values.get(0), casTimestamp++, Long.MAX_VALUE);
        result.put("[applied]", ByteBuffer.wrap(new byte[]{ 1 }));
        return List.of(result);
    }

    @Override
    public synchronized Set<String> staticColumns(String keyspace, String table)
    {
        return Set.copyOf(table(keyspace, table).staticColumns);
    }

    private Runnable afterNextLocalRead;

    /** Runs {@code what} once, right after the next read of this node's replica: a write that lands while a task runs. */
    public FakeGateway afterNextLocalRead(Runnable what)
    {
        afterNextLocalRead = what;
        return this;
    }

    /** Reads on "this node's replica": the fake has one copy of everything. */
    @Override
    public List<Map<String, ByteBuffer>> executeLocally(Prepared statement, List<ByteBuffer> values)
    {
        List<Map<String, ByteBuffer>> rows = execute(statement, ConsistencyLevel.ONE, values);
        Runnable hook = afterNextLocalRead;
        afterNextLocalRead = null;
        if (hook != null)
            hook.run();
        if (!staticsMissedHere)
            return rows;
        Matcher m = SELECT.matcher(statement.cql);
        Set<String> statics = m.matches() ? table(m.group(2), m.group(3)).staticColumns : Set.of();
        List<Map<String, ByteBuffer>> here = new ArrayList<>();
        for (Map<String, ByteBuffer> row : rows)
        {
            Map<String, ByteBuffer> copy = new LinkedHashMap<>(row);
            for (String column : statics)
                for (String name : List.of(column, Cql.writetimeColumn(column), Cql.ttlColumn(column)))
                    copy.computeIfPresent(name, (k, v) -> null);
            here.add(copy);
        }
        return here;
    }

    /** The seconds left of a visible cell's TTL, as TTL() reads it; null without one. */
    public Integer ttl(String keyspace, String table, List<ByteBuffer> key, String column)
    {
        ByteBuffer left = ttlLeft(table(keyspace, table), id(key), column);
        return left == null ? null : left.getInt(0);
    }

    /** The seconds left of a row marker's TTL; null without one. */
    public Integer markerTtl(String keyspace, String table, List<ByteBuffer> key)
    {
        Long at = table(keyspace, table).markerExpiresAt.get(id(key));
        return at == null ? null : (int) (at - nowSeconds);
    }

    @Override
    public Page fetchPage(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values, int pageSize, ByteBuffer from)
    {
        beforeEach.accept(statement.cql);
        return fetchPageNow(statement, consistency, values, pageSize, from);
    }

    private synchronized Page fetchPageNow(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values, int pageSize, ByteBuffer from)
    {
        executed.add(statement.cql);
        consistencies.add(consistency);
        refuseUnreachable(consistency);
        Matcher m = SELECT.matcher(statement.cql);
        if (!m.matches())
            throw new IllegalArgumentException("not a select: " + statement.cql);
        List<Map<String, ByteBuffer>> all = new ArrayList<>();
        select(m, values).forEachRemaining(all::add);
        int offset = from == null ? 0 : from.getInt(from.position());
        List<Map<String, ByteBuffer>> page = new ArrayList<>(all.subList(Math.min(offset, all.size()), Math.min(all.size(), offset + pageSize)));
        pagesFetched++;
        largestPage = Math.max(largestPage, page.size());
        int end = offset + page.size();
        return new Page(page, end < all.size() ? ByteBuffer.allocate(4).putInt(0, end) : null);
    }

    @Override
    public ByteBuffer bind(Prepared statement, int index, Object value)
    {
        if (value == null || value instanceof ByteBuffer)
            return (ByteBuffer) value;
        if (value instanceof String)
            return ByteBuffer.wrap(((String) value).getBytes(StandardCharsets.UTF_8));
        if (value instanceof Long)
            return Fixtures.bigint((Long) value);
        if (value instanceof Integer)
            return ByteBuffer.allocate(4).putInt(0, (Integer) value);
        throw new IllegalArgumentException("fake cannot bind " + value.getClass());
    }

    /** Visible rows of a table, as maps (under the lock statements run under: workers may be writing). */
    public synchronized List<Map<String, ByteBuffer>> rows(String keyspace, String table)
    {
        Table t = table(keyspace, table);
        List<Map<String, ByteBuffer>> out = new ArrayList<>();
        for (String id : t.keys.keySet())
        {
            Map<String, ByteBuffer> row = t.visible(id);
            if (row != null)
                out.add(row);
        }
        return out;
    }
}
