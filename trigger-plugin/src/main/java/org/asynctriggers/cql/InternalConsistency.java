package org.asynctriggers.cql;

import org.apache.cassandra.db.ConsistencyLevel;

/**
 * The consistency levels of the plugin's own statements (docs/design.md, "Several data centers"). Each waits for
 * replicas of this node's data center only, so a whole other data center down (or cut off) never blocks nor fails
 * them; the coordinator still sends every write to every replica in every data center, and hints those it cannot
 * reach. The lineage is the exception: its levels depend on the flow's and span the data centers
 * ({@code execute/Lineage}).
 */
public final class InternalConsistency
{
    /**
     * {@code async_triggers.flows}, polled every 2 s. A local quorum, not one replica: its blocking read repair makes
     * successive polls monotonic within the data center, so a node that applied a flow's new version never reads the
     * old one (or none) again from a replica the deploy has not reached yet, and never re-applies or drops it.
     */
    public static final ConsistencyLevel FLOWS_READ = ConsistencyLevel.LOCAL_QUORUM;

    /**
     * {@code async_triggers.flow_status}: each node's report every 2 s (TTL 30 s) and the other nodes' reports read
     * for orphan adoption. Best effort: a lost report is replaced 2 s later, and a reader ignores reports older than
     * 10 s by their own {@code updated} column.
     */
    public static final ConsistencyLevel STATUS = ConsistencyLevel.LOCAL_ONE;

    /**
     * {@code async_triggers.dead_letters} and {@code dead_letter_retries}. A dead letter is written, read back and
     * deleted by the node that gave up on it ({@code ctl trigger dlq retry} addresses the request to that node), so a
     * local quorum overlaps itself; requests are polled every 2 s, so one written elsewhere is seen once it arrives.
     */
    public static final ConsistencyLevel DEAD_LETTERS = ConsistencyLevel.LOCAL_QUORUM;

    /**
     * A backup entry's resume position and its completion (a delete on every replica of the row, in every data
     * center). The executor is itself a replica and acknowledges its own write, so this never waits on another node;
     * a replica that is down, a whole data center included, gets the delete from a hint, and until then may run the
     * finished task again (at least once: derived writes carry the source timestamp).
     */
    public static final ConsistencyLevel BACKUP_ENTRIES = ConsistencyLevel.LOCAL_ONE;

    private InternalConsistency()
    {
    }
}
