package org.asynctriggers.cql;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

class CqlTest
{
    @Test
    void shouldDoubleQuoteIdentifiersAndEscapeQuotes()
    {
        assertEquals("\"Weird\"\"Name\"", Cql.quote("Weird\"Name"));
    }

    @Test
    void shouldBindTheTimestampOfAnInsert()
    {
        assertEquals("INSERT INTO \"ks\".\"T\" (\"a\", \"B\") VALUES (?, ?) USING TIMESTAMP ?", Cql.insert("ks", "T", List.of("a", "B")));
    }

    @Test
    void shouldBindTheTimestampOfADelete()
    {
        assertEquals("DELETE FROM \"ks\".\"t\" USING TIMESTAMP ? WHERE \"p\" = ? AND \"c\" = ?", Cql.delete("ks", "t", List.of("p", "c")));
    }

    @Test
    void shouldWriteStatusWithATtl()
    {
        assertEquals("INSERT INTO \"async_triggers\".\"flow_status\" (\"flow\", \"node\", \"pending\", \"active\", \"completed\", \"failed\", "
                     + "\"retried\", \"oldest_pending_ms\", \"workers\", \"capacity\", \"spilled\", \"discarded\", "
                     + "\"recovered\", \"resumed\", \"fanout_rows\", \"backlog\", \"last_capture\", \"last_scan\", \"paused\", \"updated\") "
                     + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL 30",
                     Cql.statusInsert(true));
        assertFalse(Cql.statusInsert(false).contains("paused"), "for a flow_status made by an older deploy");
    }
}
