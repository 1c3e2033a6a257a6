package org.asynctriggers.execute;

import java.util.ArrayList;
import java.util.List;

import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.testing.PrepareOnlyGateway;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A flow's statements are prepared once, and again after their table's schema changed (or fail as it says). */
class StatementsTest
{
    private static final String INSERT = "INSERT INTO \"ks\".\"copy\" (\"id\", \"email\") VALUES (?, ?) USING TIMESTAMP ?";

    /** The fake, with a schema that changes when the test says so, and the prepares it was asked for. */
    private static final class ChangingSchema extends PrepareOnlyGateway
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

    @Test
    void shouldBuildAShapesTextOnceAndHandOutTheSameString()
    {
        Statements statements = new Statements(new ChangingSchema());
        List<String> built = new ArrayList<>();
        List<String> columns = new ArrayList<>(List.of("id", "email"));
        String first = statements.text(List.of("insert", "copy", columns, false), () -> { built.add(INSERT); return new String(INSERT); });
        String again = statements.text(List.of("insert", "copy", List.of("id", "email"), false), () -> { built.add(INSERT); return INSERT; });
        assertSame(first, again, "an equal shape: the text built the first time");
        assertEquals(1, built.size());
        String other = statements.text(List.of("insert", "copy", List.of("id", "email"), true), () -> "with a TTL");
        assertEquals("with a TTL", other, "another shape: its own text");
    }
}
