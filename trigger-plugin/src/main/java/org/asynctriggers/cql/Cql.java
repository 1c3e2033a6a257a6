package org.asynctriggers.cql;

import java.util.List;
import java.util.stream.Collectors;

/** Text of the statements the executor runs: identifiers always double-quoted, values always bind markers. */
public final class Cql
{
    public static final String KEYSPACE = "async_triggers";

    private Cql()
    {
    }

    public static String quote(String identifier)
    {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    public static String table(String keyspace, String table)
    {
        return quote(keyspace) + '.' + quote(table);
    }

    private static String where(List<String> columns)
    {
        return columns.stream().map(c -> quote(c) + " = ?").collect(Collectors.joining(" AND "));
    }

    private static String names(List<String> columns)
    {
        return columns.stream().map(Cql::quote).collect(Collectors.joining(", "));
    }

    /** {@code INSERT INTO "ks"."t" ("a", "b") VALUES (?, ?) USING TIMESTAMP ?} */
    public static String insert(String keyspace, String table, List<String> columns)
    {
        return insert(keyspace, table, columns, "USING TIMESTAMP ?");
    }

    private static String insert(String keyspace, String table, List<String> columns, String using)
    {
        String markers = columns.stream().map(c -> "?").collect(Collectors.joining(", "));
        return "INSERT INTO " + table(keyspace, table) + " (" + names(columns) + ") VALUES (" + markers + ") " + using;
    }

    /** {@code INSERT INTO "ks"."t" ("a", "b") VALUES (?, ?) USING TTL ? AND TIMESTAMP ?}: a derived row of a source with TTL */
    public static String insertWithTtl(String keyspace, String table, List<String> columns)
    {
        return insert(keyspace, table, columns, "USING TTL ? AND TIMESTAMP ?");
    }

    /** {@code UPDATE "ks"."t" USING TIMESTAMP ? SET "a" = ?, "b" = ? WHERE "k" = ?}: cells without a row marker */
    public static String update(String keyspace, String table, List<String> columns, List<String> keyColumns)
    {
        return update(keyspace, table, columns, keyColumns, "USING TIMESTAMP ?");
    }

    /** {@code UPDATE "ks"."t" USING TTL ? AND TIMESTAMP ? SET "a" = ? WHERE "k" = ?} */
    public static String updateWithTtl(String keyspace, String table, List<String> columns, List<String> keyColumns)
    {
        return update(keyspace, table, columns, keyColumns, "USING TTL ? AND TIMESTAMP ?");
    }

    private static String update(String keyspace, String table, List<String> columns, List<String> keyColumns, String using)
    {
        return "UPDATE " + table(keyspace, table) + " " + using + " SET "
               + columns.stream().map(c -> quote(c) + " = ?").collect(Collectors.joining(", ")) + " WHERE " + where(keyColumns);
    }

    /**
     * {@code UPDATE "ks"."t" USING [TTL ? AND] TIMESTAMP ? SET "c" = "c" + ? WHERE "k" = ?}: elements added to a
     * collection (a list's after its others)
     */
    public static String updateAdding(String keyspace, String table, String column, List<String> keyColumns, boolean ttl)
    {
        return "UPDATE " + table(keyspace, table) + (ttl ? " USING TTL ? AND TIMESTAMP ?" : " USING TIMESTAMP ?") + " SET "
               + quote(column) + " = " + quote(column) + " + ? WHERE " + where(keyColumns);
    }

    /** {@code UPDATE "ks"."t" USING [TTL ? AND] TIMESTAMP ? SET "u"."f" = ? WHERE "k" = ?}: one field of a non-frozen UDT */
    public static String updateField(String keyspace, String table, String column, String field, List<String> keyColumns, boolean ttl)
    {
        return "UPDATE " + table(keyspace, table) + (ttl ? " USING TTL ? AND TIMESTAMP ?" : " USING TIMESTAMP ?") + " SET "
               + quote(column) + "." + quote(field) + " = ? WHERE " + where(keyColumns);
    }

    /** {@code WRITETIME("x")}: its column in a result is named {@code writetime(x)}. */
    public static String writetimeOf(String column)
    {
        return "WRITETIME(" + quote(column) + ")";
    }

    /** The name of {@link #writetimeOf}'s column in a result. */
    public static String writetimeColumn(String column)
    {
        return "writetime(" + column + ")";
    }

    /**
     * {@code SELECT "x", "y", WRITETIME("x"), TTL("x") FROM "ks"."t" WHERE "a" = ?}: values, and the write time and TTL
     * left of {@code cellColumns} (simple columns: a collection's cells have one each)
     */
    public static String selectCells(String keyspace, String table, List<String> columns, List<String> cellColumns,
                                     List<String> whereColumns)
    {
        String meta = cellColumns.stream().map(c -> ", " + writetimeOf(c) + ", " + ttlOf(c)).collect(Collectors.joining());
        return "SELECT " + names(columns) + meta + " FROM " + table(keyspace, table) + " WHERE " + where(whereColumns);
    }

    /** {@code TTL("x")}: its column in a result is named {@code ttl(x)} (Cassandra's WritetimeOrTTLSelector). */
    public static String ttlOf(String column)
    {
        return "TTL(" + quote(column) + ")";
    }

    /** The name of {@link #ttlOf}'s column in a result. */
    public static String ttlColumn(String column)
    {
        return "ttl(" + column + ")";
    }

    /** {@code DELETE FROM "ks"."t" USING TIMESTAMP ? WHERE "a" = ? AND "b" = ?}; a key prefix deletes a range */
    public static String delete(String keyspace, String table, List<String> keyColumns)
    {
        return "DELETE FROM " + table(keyspace, table) + " USING TIMESTAMP ? WHERE " + where(keyColumns);
    }

    /** {@code SELECT "x", "y" FROM "ks"."t" WHERE "a" = ? AND "b" = ?} */
    public static String select(String keyspace, String table, List<String> columns, List<String> whereColumns)
    {
        return "SELECT " + names(columns) + " FROM " + table(keyspace, table) + " WHERE " + where(whereColumns);
    }

    /** {@code SELECT "x", "y", TTL("x") FROM "ks"."t" WHERE "a" = ?}: values, and the TTLs left of {@code ttlColumns} */
    public static String selectWithTtls(String keyspace, String table, List<String> columns, List<String> ttlColumns,
                                        List<String> whereColumns)
    {
        String ttls = ttlColumns.stream().map(c -> ", " + ttlOf(c)).collect(Collectors.joining());
        return "SELECT " + names(columns) + ttls + " FROM " + table(keyspace, table) + " WHERE " + where(whereColumns);
    }

    public static String lineageInsert()
    {
        return insert(KEYSPACE, "lineage", List.of("flow", "source_key", "target_key", "ts", "written"));
    }

    public static String lineageInsertWithTtl()
    {
        return insertWithTtl(KEYSPACE, "lineage", List.of("flow", "source_key", "target_key", "ts", "written"));
    }

    /**
     * {@code BEGIN UNLOGGED BATCH s; s; APPLY BATCH}: {@code statement} {@code count} times, its values bound one
     * statement after the other. On one partition it is one mutation: one write per replica, not one per statement.
     */
    public static String unloggedBatch(String statement, int count)
    {
        if (count < 1)
            throw new IllegalArgumentException("a batch of " + count + " statements");
        StringBuilder batch = new StringBuilder("BEGIN UNLOGGED BATCH ");
        for (int i = 0; i < count; i++)
            batch.append(statement).append("; ");
        return batch.append("APPLY BATCH").toString();
    }

    public static String lineageSelect()
    {
        return "SELECT " + names(List.of("target_key", "ts", "written")) + ", " + ttlOf("ts") + " FROM " + table(KEYSPACE, "lineage")
               + " WHERE " + where(List.of("flow", "source_key"));
    }

    public static String lineageKeyInsert()
    {
        return insert(KEYSPACE, "lineage_keys", List.of("flow", "source_partition", "source_key"));
    }

    public static String lineageKeysSelect()
    {
        return select(KEYSPACE, "lineage_keys", List.of("source_key"), List.of("flow", "source_partition"));
    }

    public static String lineageKeyDelete()
    {
        return delete(KEYSPACE, "lineage_keys", List.of("flow", "source_partition", "source_key"));
    }

    public static String lineageDelete()
    {
        return delete(KEYSPACE, "lineage", List.of("flow", "source_key", "target_key"));
    }

    /** An aggregate's recompute due when one of its members expires (docs/design.md, "Aggregates"). */
    public static String aggregateTimerInsert()
    {
        return insertWithTtl(KEYSPACE, "aggregate_timers", List.of("flow", "hour", "due", "target", "group_key"));
    }

    /**
     * The timers of one hour of a flow due from a time to a time (seconds): from the last one fired, so that a read
     * does not go through the tombstones of those fired before.
     */
    public static String aggregateTimersDue()
    {
        return "SELECT " + names(List.of("due", "target", "group_key")) + " FROM " + table(KEYSPACE, "aggregate_timers")
               + " WHERE " + where(List.of("flow", "hour")) + " AND " + quote("due") + " >= ? AND " + quote("due") + " <= ?";
    }

    public static String aggregateTimerDelete()
    {
        return delete(KEYSPACE, "aggregate_timers", List.of("flow", "hour", "due", "target", "group_key"));
    }

    /** A source row's lineage version (docs/design.md, "Lineage"). */
    public static String lineageVersionSelect()
    {
        return select(KEYSPACE, "lineage_versions", List.of("version"), List.of("flow", "source_key"));
    }

    /** Takes a source row's next lineage version: a compare-and-set from the version known (null: none). */
    public static String lineageVersionTake()
    {
        return "UPDATE " + table(KEYSPACE, "lineage_versions") + " SET " + quote("version") + " = ? WHERE "
               + where(List.of("flow", "source_key")) + " IF " + quote("version") + " = ?";
    }

    /** @param paused with the {@code paused} column (a flows table made by an older deploy has none) */
    public static String flowsSelect(boolean paused)
    {
        List<String> columns = paused ? List.of("name", "spec", "version", "paused") : List.of("name", "spec", "version");
        return "SELECT " + names(columns) + " FROM " + table(KEYSPACE, "flows");
    }

    /**
     * @param paused with the {@code paused} column (a flow_status table made by an older deploy has none); its bind
     *               marker is the last before {@code updated}
     */
    public static String statusInsert(boolean paused)
    {
        List<String> columns = new java.util.ArrayList<>(List.of("flow", "node", "pending", "active", "completed", "failed", "retried",
                                       "oldest_pending_ms", "workers", "capacity", "spilled", "discarded",
                                       "recovered", "resumed", "fanout_rows", "backlog", "last_capture", "last_scan"));
        if (paused)
            columns.add("paused");
        columns.add("updated");
        String markers = columns.stream().map(c -> "?").collect(Collectors.joining(", "));
        return "INSERT INTO " + table(KEYSPACE, "flow_status") + " (" + names(columns) + ") VALUES (" + markers + ") USING TTL 30";
    }

    static final List<String> DEAD_LETTER_COLUMNS = List.of("flow", "id", "node", "op", "ts", "source_key", "task", "error",
                                                            "attempts", "failed_at");

    public static String deadLetterInsert()
    {
        return insert(KEYSPACE, "dead_letters", DEAD_LETTER_COLUMNS);
    }

    public static String deadLetterTaskSelect()
    {
        return select(KEYSPACE, "dead_letters", List.of("task"), List.of("flow", "id"));
    }

    public static String deadLetterDelete()
    {
        return delete(KEYSPACE, "dead_letters", List.of("flow", "id"));
    }

    public static String deadLetterRetriesSelect()
    {
        return select(KEYSPACE, "dead_letter_retries", List.of("flow", "id"), List.of("node"));
    }

    public static String deadLetterRetryDelete()
    {
        return delete(KEYSPACE, "dead_letter_retries", List.of("node", "flow", "id"));
    }
}
