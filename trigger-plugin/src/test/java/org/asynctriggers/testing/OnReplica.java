package org.asynctriggers.testing;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.SourceRow;

/**
 * A node's gateway in a test of stale replicas: every statement goes to {@code cluster} (the cluster as quorum reads
 * see it), the local reads of the source to {@code replica}, the node's own copy, which may miss writes.
 */
public class OnReplica implements CqlGateway
{
    private final FakeGateway cluster;
    private final FakeGateway replica;

    public OnReplica(FakeGateway cluster, FakeGateway replica)
    {
        this.cluster = cluster;
        this.replica = replica;
    }

    public Prepared prepare(String cql) { return cluster.prepare(cql); }

    public List<Map<String, ByteBuffer>> execute(Prepared s, ConsistencyLevel cl, List<ByteBuffer> values) { return cluster.execute(s, cl, values); }

    public List<Map<String, ByteBuffer>> executeLocally(Prepared s, List<ByteBuffer> values) { return replica.executeLocally(s, values); }

    /** this node's replica for a local read; else the cluster as a read at that level sees it */
    public SourceRow readRow(String ks, String t, List<ByteBuffer> k, ConsistencyLevel cl) { return cl == null ? replica.readRow(ks, t, k, null) : cluster.readRow(ks, t, k, cl); }

    public List<KeyedRow> readPartition(String ks, String t, List<ByteBuffer> k, ConsistencyLevel cl) { return cluster.readPartition(ks, t, k, cl); }

    public Set<String> staticColumns(String ks, String t) { return replica.staticColumns(ks, t); }

    public void writeList(String ks, String t, List<ByteBuffer> k, String c, List<ByteBuffer> e, List<Integer> ttls, long ts, ConsistencyLevel cl) { cluster.writeList(ks, t, k, c, e, ttls, ts, cl); }

    public Page fetchPage(Prepared s, ConsistencyLevel cl, List<ByteBuffer> v, int size, ByteBuffer from) { return cluster.fetchPage(s, cl, v, size, from); }

    public ByteBuffer bind(Prepared s, int i, Object v) { return cluster.bind(s, i, v); }
}
