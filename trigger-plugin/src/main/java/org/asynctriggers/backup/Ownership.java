package org.asynctriggers.backup;

import org.apache.cassandra.dht.Token;

/** Which rows' tasks this node runs: those it executes ({@link ExecutorChoice}), and orphans of idle executors. */
public final class Ownership
{
    /**
     * An entry is adopted from an idle executor that scanned at least this long after the entry was captured here
     * (the margin covers clock skew and a completion on its way to this replica)
     */
    static final long ORPHAN_GRACE_MILLIS = 10_000;
    /** a peer's status report older than this says nothing about it now */
    static final long PEER_REPORT_MAX_AGE_MILLIS = 10_000;

    private final ExecutorChoice executors;
    /** the other nodes' status rows as last read, for orphan adoption */
    private final PeerStatus peers;

    public Ownership(ExecutorChoice executors, PeerStatus peers)
    {
        this.executors = executors;
        this.peers = peers;
    }

    /** Whether this node executes the tasks of this row now; false while the ring is not known (commit log replay at boot). */
    public boolean executes(String keyspace, Token token)
    {
        try
        {
            return executors.isExecutor(keyspace, token);
        }
        catch (RuntimeException e)
        {
            // the ring is not known yet: the start scan decides later
            return false;
        }
    }

    /**
     * The other live node that executes the tasks of this row now (the ring changed since this node took them: a node
     * joined before it in the row's replica order, or came back); null when it is this node, none is live, or the ring
     * is not known.
     */
    public String executorElsewhere(String keyspace, Token token)
    {
        try
        {
            String executor = executors.executorOf(keyspace, token);
            return executor == null || executor.equals(executors.self()) ? null : executor;
        }
        catch (RuntimeException e)
        {
            return null;
        }
    }

    /** The row's replicas this node executes for while they are down (empty: it is the first); null: ring unknown. */
    public java.util.Set<String> standingInFor(String keyspace, Token token)
    {
        try
        {
            return executors.skipped(keyspace, token);
        }
        catch (RuntimeException e)
        {
            return null;
        }
    }

    /** Whether this node is a natural replica of the row now; true while the ring is not known (decided later). */
    public boolean replicates(String keyspace, Token token)
    {
        try
        {
            return executors.isReplica(keyspace, token);
        }
        catch (RuntimeException e)
        {
            return true;
        }
    }

    /** Whether no other node will run this entry: its executor is idle and scanned since it was captured here. */
    public boolean orphaned(String keyspace, Token token, String flow, long capturedMillis)
    {
        String executor;
        try
        {
            executor = executors.executorOf(keyspace, token);
        }
        catch (RuntimeException e)
        {
            return false;
        }
        return executor != null && !executor.equals(executors.self())
               && peers.idleAndScannedSince(flow, executor, capturedMillis + ORPHAN_GRACE_MILLIS, PEER_REPORT_MAX_AGE_MILLIS);
    }

    /** Reads the other nodes' status rows again. */
    public void refreshPeers()
    {
        peers.refresh();
    }
}
