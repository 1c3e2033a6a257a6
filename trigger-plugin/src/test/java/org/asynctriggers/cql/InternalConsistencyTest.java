package org.asynctriggers.cql;

import java.util.List;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.testing.TwoDataCenters;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.TwoDataCenters.DC1;
import static org.asynctriggers.testing.TwoDataCenters.DC2;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The plugin's own statements never need a replica in another data center. */
class InternalConsistencyTest
{
    private static final List<ConsistencyLevel> INTERNAL = List.of(InternalConsistency.FLOWS_READ, InternalConsistency.STATUS,
                                                                   InternalConsistency.DEAD_LETTERS, InternalConsistency.BACKUP_ENTRIES);

    @Test
    void shouldMeetEveryInternalLevelWithTheOtherDataCenterDown()
    {
        for (TwoDataCenters layout : List.of(new TwoDataCenters(3, 3), new TwoDataCenters(3, 1), new TwoDataCenters(1, 3)))
            for (ConsistencyLevel level : INTERNAL)
            {
                assertTrue(layout.available(level, DC1, DC2), level + " from dc1");
                assertTrue(layout.available(level, DC2, DC1), level + " from dc2");
                assertTrue(level.isDatacenterLocal(), level + " waits for this data center's replicas only");
            }
        // what they replace: QUORUM over 3 + 3 replicas needs the other data center
        assertFalse(new TwoDataCenters(3, 3).available(ConsistencyLevel.QUORUM, DC1, DC2));
    }

    @Test
    void shouldReadBackADeadLetterThisNodeWrote()
    {
        // the node that gave up on a task serves its retry request: same data center, same level
        for (String dc : List.of(DC1, DC2))
            assertTrue(new TwoDataCenters(3, 3).overlaps(InternalConsistency.DEAD_LETTERS, dc, InternalConsistency.DEAD_LETTERS, dc));
    }
}
