package org.asynctriggers.cql;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;
import org.asynctriggers.backup.BackupTable;
import org.asynctriggers.backup.PeerStatus;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.PrepareOnlyGateway;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tables of our keyspace are the Python side's (it creates them): every table and column the plugin's statements
 * name must be in {@code tests/golden/contract/keyspace.json}, and so must the backup tables' layout.
 */
class KeyspaceContractTest
{
    private static final Pattern IDENTIFIER = Pattern.compile("\"((?:[^\"]|\"\")*)\"");

    /** Prepares anything and records it; every query finds nothing. */
    private static final class RecordingGateway extends PrepareOnlyGateway
    {
        final List<String> prepared = new ArrayList<>();

        @Override
        public Prepared prepare(String cql)
        {
            prepared.add(cql);
            return new Prepared(cql, null);
        }

        @Override
        public List<Map<String, ByteBuffer>> execute(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values)
        {
            return List.of();
        }

        @Override
        public List<Map<String, ByteBuffer>> executeLocally(Prepared statement, List<ByteBuffer> values)
        {
            return List.of();
        }

        @Override
        public void writeList(String keyspace, String table, List<ByteBuffer> primaryKey, String column, List<ByteBuffer> elements,
                              List<Integer> ttls, long timestamp, ConsistencyLevel consistency)
        {
        }

        @Override
        public SourceRow readRow(String keyspace, String table, List<ByteBuffer> primaryKey, ConsistencyLevel consistency)
        {
            return null;
        }

        @Override
        public java.util.Set<String> staticColumns(String keyspace, String table)
        {
            return java.util.Set.of();
        }
    }

    private static JsonNode golden() throws IOException
    {
        return new ObjectMapper().readTree(Paths.get("../tests/golden/contract/keyspace.json").toFile());
    }

    /** The quoted identifiers of a statement: keyspace and table, then its columns. */
    private static List<String> identifiers(String cql)
    {
        List<String> ids = new ArrayList<>();
        Matcher m = IDENTIFIER.matcher(cql);
        while (m.find())
            ids.add(m.group(1).replace("\"\"", "\""));
        return ids;
    }

    /** The plugin's statements on its own keyspace: Cql's (each variant), and the peers' status read. */
    private static List<String> keyspaceStatements() throws ReflectiveOperationException
    {
        List<String> statements = new ArrayList<>();
        for (Method m : Cql.class.getDeclaredMethods())
        {
            if (!Modifier.isStatic(m.getModifiers()) || !Modifier.isPublic(m.getModifiers()) || m.getReturnType() != String.class)
                continue;
            if (m.getParameterCount() == 0)
                statements.add((String) m.invoke(null));
            else if (m.getParameterCount() == 1 && m.getParameterTypes()[0] == boolean.class)
            {
                // with and without a column a table made by an older deploy lacks (flows.paused, flow_status.paused)
                statements.add((String) m.invoke(null, true));
                statements.add((String) m.invoke(null, false));
            }
        }
        RecordingGateway gateway = new RecordingGateway();
        new PeerStatus(gateway, () -> 0L).refresh();
        statements.addAll(gateway.prepared);
        return statements;
    }

    @Test
    void shouldNameOnlyTablesAndColumnsOfTheKeyspace() throws Exception
    {
        JsonNode golden = golden();
        String keyspace = golden.get("keyspace").asText();
        assertEquals(keyspace, Cql.KEYSPACE);
        List<String> statements = keyspaceStatements();
        assertTrue(statements.size() >= 10, statements.toString());
        for (String cql : statements)
        {
            List<String> ids = identifiers(cql);
            int at = ids.indexOf(keyspace);
            assertTrue(at >= 0, cql);
            String table = ids.get(at + 1);
            JsonNode columns = golden.get("tables").path(table).get("columns");
            assertNotNull(columns, "table " + table + " is not in keyspace.json: " + cql);
            List<String> named = new ArrayList<>(ids);
            named.remove(at + 1);
            named.remove(at);
            for (String column : named)
                assertTrue(columns.has(column), "column " + table + "." + column + " is not in keyspace.json: " + cql);
        }
    }

    @Test
    void shouldWriteBackupEntriesInTheGoldenLayout() throws IOException
    {
        JsonNode map = golden().get("backup_map");
        RecordingGateway gateway = new RecordingGateway();
        BackupTable backups = new BackupTable("app", "users", 2, gateway);
        Task task = Fixtures.task(FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1), Operation.INSERT, 10,
                                  List.of(Fixtures.bigint(1), Fixtures.bigint(2)), Map.of());
        backups.recordResume(task, 0, ByteBuffer.allocate(0));
        backups.complete(task);
        assertEquals(map.get("prefix").asText() + "users", BackupTable.companionOf("users"));
        List<String> key = List.of(map.get("key_column").asText().replace("{i}", "0"),
                                   map.get("key_column").asText().replace("{i}", "1"));
        assertEquals(2, gateway.prepared.size());
        for (String cql : gateway.prepared)
        {
            List<String> ids = identifiers(cql);
            assertEquals(List.of("app", BackupTable.companionOf("users")), ids.subList(0, 2), cql);
            List<String> columns = ids.subList(2, ids.size());
            for (String column : columns)
                assertTrue(key.contains(column) || map.get("columns").has(column), "backup column " + column + ": " + cql);
            List<String> primaryKey = new ArrayList<>(key);
            map.get("clustering").forEach(c -> primaryKey.add(c.asText()));
            assertEquals(primaryKey, columns.subList(columns.size() - primaryKey.size(), columns.size()), cql);
        }
        assertFalse(gateway.prepared.get(0).contains("\"task\""));
    }
}
