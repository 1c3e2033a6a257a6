package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.CqlGateway;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A flow's statements are prepared once, and again after their table's schema changed (or fail as it says). */
class StatementsTest
{
    private static final String INSERT = "INSERT INTO \"ks\".\"copy\" (\"id\", \"email\") VALUES (?, ?) USING TIMESTAMP ?";

    /** The fake, with a schema that changes when the test says so, and the prepares it was asked for. */
    private static final class ChangingSchema extends PrepareOnly
    {
        final List<String> prepared = new ArrayList<>();
        volatile int version;
        volatile boolean dropped;

        @Override
        public Prepared prepare(String cql)
        {
            if (dropped)
                throw new IllegalArgumentException("cannot prepare [" + cql + "]: unconfigured table copy");
            prepared.add(cql);
            return new Prepared(cql, version);
        }

        @Override
        public boolean isCurrent(Prepared statement)
        {
            return statement.handle.equals(version) && !dropped;
        }
    }

    @Test
    void shouldPrepareOnceWhileTheSchemaStaysAndAgainAfterItChanged()
    {
        ChangingSchema gateway = new ChangingSchema();
        Statements statements = new Statements(gateway);
        CqlGateway.Prepared first = statements.prepare(INSERT);
        assertSame(first, statements.prepare(INSERT));
        assertEquals(1, gateway.prepared.size());

        gateway.version = 2; // ALTER TABLE ks.copy ...
        CqlGateway.Prepared second = statements.prepare(INSERT);
        assertEquals(2, second.handle, "prepared against the table as it is now");
        assertSame(second, statements.prepare(INSERT));
        assertEquals(2, gateway.prepared.size());

        gateway.dropped = true; // DROP TABLE ks.copy: the schema's own error, for the task's dead letter
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> statements.prepare(INSERT));
        assertEquals("cannot prepare [" + INSERT + "]: unconfigured table copy", e.getMessage());

        gateway.dropped = false; // made again
        gateway.version = 3;
        assertEquals(3, statements.prepare(INSERT).handle);
    }

    /** Only prepares: the test executes nothing. */
    private abstract static class PrepareOnly implements CqlGateway
    {
        @Override
        public List<Map<String, ByteBuffer>> execute(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values)
        {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<Map<String, ByteBuffer>> executeLocally(Prepared statement, List<ByteBuffer> values)
        {
            throw new UnsupportedOperationException();
        }

        @Override
        public RowLife rowLife(String keyspace, String table, List<ByteBuffer> primaryKey)
        {
            throw new UnsupportedOperationException();
        }

        @Override
        public Set<String> staticColumns(String keyspace, String table)
        {
            throw new UnsupportedOperationException();
        }

        @Override
        public Page fetchPage(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values, int pageSize, ByteBuffer from)
        {
            throw new UnsupportedOperationException();
        }

        @Override
        public ByteBuffer bind(Prepared statement, int index, Object value)
        {
            throw new UnsupportedOperationException();
        }
    }
}
