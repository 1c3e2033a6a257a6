package org.asynctriggers.backup;

import java.util.function.Function;
import java.util.function.Predicate;

import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.locator.AbstractReplicationStrategy;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.utils.FBUtilities;

/**
 * Which node executes the tasks of a source row (docs/design.md, "Who executes a task"): the first of the row's
 * natural replicas, in the replication strategy's order, that gossip holds alive on this node. Every replica
 * computes it alike from the same ring, so while all are well exactly one node runs a task; when that node dies, the
 * next one in the order finds itself first and takes its entries over.
 * <p>
 * Several data centers (docs/design.md, "Several data centers"): NetworkTopologyStrategy lists a row's replicas in
 * ring order, the data centers mixed, and the choice keeps that order on purpose. One rule over all replicas is what
 * makes the executor unique: a first live replica per data center would run every task once in each. Ring order
 * spreads the rows' executors over the nodes of both data centers, as evenly as the ring does, and needs no setting
 * that every node would have to agree on; when a whole data center is down its rows fall to the first live replica
 * in the other one, and come back when it does.
 */
public interface ExecutorChoice
{
    /** The broadcast address of the node that executes the tasks of this row now, null when none is live. */
    String executorOf(String keyspace, Token token);

    /** This node's broadcast address. */
    String self();

    /** Whether this node executes the tasks of the row with this token in this keyspace. */
    default boolean isExecutor(String keyspace, Token token)
    {
        return self().equals(executorOf(keyspace, token));
    }

    /**
     * The row's natural replicas before its executor in order, which this node holds dead now: those the executor
     * stands in for (empty when the executor is the first replica).
     */
    default java.util.Set<String> skipped(String keyspace, Token token)
    {
        return java.util.Set.of();
    }

    /** Whether this node is one of the natural replicas of the row with this token in this keyspace. */
    default boolean isReplica(String keyspace, Token token)
    {
        return true;
    }

    /** Every node executes everything: for unit tests of a single node. */
    ExecutorChoice SELF = new ExecutorChoice()
    {
        @Override
        public String executorOf(String keyspace, Token token)
        {
            return self();
        }

        @Override
        public String self()
        {
            return "127.0.0.1";
        }
    };

    /** The ring as this node sees it now. */
    static ExecutorChoice ofRing()
    {
        return of(FBUtilities.getBroadcastAddressAndPort(), keyspace -> Keyspace.open(keyspace).getReplicationStrategy(),
                  endpoint -> Gossiper.instance.isAlive(endpoint));
    }

    /**
     * @param strategies a keyspace's replication strategy
     * @param alive      whether this node's failure detector holds a node alive
     */
    static ExecutorChoice of(InetAddressAndPort me, Function<String, AbstractReplicationStrategy> strategies,
                             Predicate<InetAddressAndPort> alive)
    {
        String self = me.getHostAddress(false);
        return new ExecutorChoice()
        {
            @Override
            public String executorOf(String keyspace, Token token)
            {
                InetAddressAndPort first = firstLive(strategies.apply(keyspace).getNaturalReplicasForToken(token), me, alive);
                return first == null ? null : first.getHostAddress(false);
            }

            @Override
            public String self()
            {
                return self;
            }

            /** Asked on every captured write: compares addresses, no name is formatted. */
            @Override
            public boolean isExecutor(String keyspace, Token token)
            {
                return me.equals(firstLive(strategies.apply(keyspace).getNaturalReplicasForToken(token), me, alive));
            }

            @Override
            public java.util.Set<String> skipped(String keyspace, Token token)
            {
                java.util.Set<String> out = java.util.Set.of(); // the usual answer, with no set made for it
                for (Replica replica : strategies.apply(keyspace).getNaturalReplicasForToken(token))
                {
                    InetAddressAndPort endpoint = replica.endpoint();
                    if (endpoint.equals(me) || alive.test(endpoint))
                        break;
                    if (out.isEmpty())
                        out = new java.util.HashSet<>();
                    out.add(endpoint.getHostAddress(false));
                }
                return out;
            }

            @Override
            public boolean isReplica(String keyspace, Token token)
            {
                for (Replica replica : strategies.apply(keyspace).getNaturalReplicasForToken(token))
                    if (replica.endpoint().equals(me))
                        return true;
                return false;
            }
        };
    }

    /** The first replica in order that is alive ({@code me} counts as alive: it is running this); null for none. */
    static InetAddressAndPort firstLive(Iterable<Replica> replicas, InetAddressAndPort me, Predicate<InetAddressAndPort> alive)
    {
        for (Replica replica : replicas)
        {
            InetAddressAndPort endpoint = replica.endpoint();
            if (endpoint.equals(me) || alive.test(endpoint))
                return endpoint;
        }
        return null;
    }
}
