package org.asynctriggers.execute;

import java.util.ArrayList;
import java.util.List;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.testing.TwoDataCenters;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.testing.TwoDataCenters.DC1;
import static org.asynctriggers.testing.TwoDataCenters.DC2;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The lineage's levels across data centers: a task whose executor is in either data center (a row's executor moves
 * when a data center fails, and both sides execute while they are cut off) must see the entries of every other task
 * of its source row, so every lineage read meets every lineage write, whatever the flow's levels.
 */
class LineageLevelsTest
{
    private static final List<ConsistencyLevel> FLOW_LEVELS = List.of(
        ConsistencyLevel.ANY, ConsistencyLevel.ONE, ConsistencyLevel.TWO, ConsistencyLevel.THREE, ConsistencyLevel.QUORUM,
        ConsistencyLevel.ALL, ConsistencyLevel.LOCAL_QUORUM, ConsistencyLevel.EACH_QUORUM, ConsistencyLevel.LOCAL_ONE);
    private static final List<TwoDataCenters> LAYOUTS = List.of(new TwoDataCenters(3, 3), new TwoDataCenters(3, 2),
                                                                new TwoDataCenters(2, 2), new TwoDataCenters(3, 0));

    @Test
    void shouldLetEveryLineageReadMeetEveryLineageWriteWhicheverDataCentersTheExecutorsAreIn()
    {
        List<String> misses = new ArrayList<>();
        for (TwoDataCenters layout : LAYOUTS)
            for (ConsistencyLevel flowWrite : FLOW_LEVELS)
                for (ConsistencyLevel flowRead : FLOW_LEVELS)
                {
                    if (flowRead == ConsistencyLevel.ANY)
                        continue; // the parser refuses it
                    ConsistencyLevel write = Lineage.writeLevel(flowWrite), read = Lineage.readLevel(flowRead);
                    for (String writer : List.of(DC1, DC2))
                        for (String reader : List.of(DC1, DC2))
                            if (layout.hasReplicasIn(writer) && layout.hasReplicasIn(reader) // else it runs no executor
                                && !layout.overlaps(write, writer, read, reader))
                                misses.add(flowWrite + "/" + flowRead + " -> " + write + " in " + writer + ", " + read + " in " + reader);
                }
        assertEquals(List.of(), misses);
    }

    @Test
    void shouldNotUseTheLevelsThatMissAnEntryWrittenInTheOtherDataCenter()
    {
        TwoDataCenters layout = new TwoDataCenters(3, 3);
        // why neither the flow's LOCAL_QUORUM nor plain QUORUM will do once executors may be in both data centers
        assertFalse(layout.overlaps(ConsistencyLevel.LOCAL_QUORUM, DC1, ConsistencyLevel.LOCAL_QUORUM, DC2));
        assertFalse(layout.overlaps(ConsistencyLevel.QUORUM, DC1, ConsistencyLevel.LOCAL_QUORUM, DC2));
        assertTrue(layout.overlaps(ConsistencyLevel.LOCAL_QUORUM, DC1, ConsistencyLevel.LOCAL_QUORUM, DC1), "one data center: enough");
        assertEquals(ConsistencyLevel.EACH_QUORUM, Lineage.writeLevel(ConsistencyLevel.LOCAL_QUORUM));
        assertEquals(ConsistencyLevel.EACH_QUORUM, Lineage.writeLevel(ConsistencyLevel.QUORUM));
        assertEquals(ConsistencyLevel.LOCAL_QUORUM, Lineage.readLevel(ConsistencyLevel.LOCAL_ONE));
    }

    @Test
    void shouldWaitRatherThanMissAnEntryWhileTheOtherDataCenterIsDown()
    {
        TwoDataCenters layout = new TwoDataCenters(3, 3);
        // correctness first: with dc1 down a lineage target cannot record its image, so its task waits (a cluster
        // failure costs no attempt); the reads alone stay local
        assertFalse(layout.available(Lineage.writeLevel(ConsistencyLevel.LOCAL_QUORUM), DC2, DC1));
        assertTrue(layout.available(Lineage.readLevel(ConsistencyLevel.LOCAL_QUORUM), DC2, DC1));
    }
}
