package org.asynctriggers.testing;

import java.util.function.Predicate;

import org.apache.cassandra.db.ConsistencyLevel;

/**
 * The replicas of one row of a keyspace that NetworkTopologyStrategy places in two data centers ({@code dc1},
 * {@code dc2}), and the rules of Cassandra's {@code ConsistencyLevel} (5.0) for which of them acknowledge a statement:
 * which replica sets satisfy a level from a coordinator in a given data center, whether a level can be met while a
 * data center is down, and whether every read at one level meets every write at another (whatever replicas the
 * coordinators happened to hear from). Replica sets are bit masks, all of them enumerated: a row has a few replicas.
 */
public final class TwoDataCenters
{
    public static final String DC1 = "dc1";
    public static final String DC2 = "dc2";

    private final int rf1;
    private final int rf2;

    public TwoDataCenters(int rf1, int rf2)
    {
        this.rf1 = rf1;
        this.rf2 = rf2;
    }

    private int replicas()
    {
        return rf1 + rf2;
    }

    /** replicas 0..rf1-1 are in dc1, the others in dc2 */
    private int mask(String dc)
    {
        int dc1 = (1 << rf1) - 1;
        return DC1.equals(dc) ? dc1 : ((1 << replicas()) - 1) & ~dc1;
    }

    private int rf(String dc)
    {
        return DC1.equals(dc) ? rf1 : rf2;
    }

    public boolean hasReplicasIn(String dc)
    {
        return rf(dc) > 0;
    }

    private static int quorum(int rf)
    {
        return rf / 2 + 1;
    }

    /** Whether these replicas acknowledging meets the level, for a coordinator in {@code dc}. */
    public boolean satisfies(int acked, ConsistencyLevel level, String dc)
    {
        int all = Integer.bitCount(acked), local = Integer.bitCount(acked & mask(dc));
        switch (level)
        {
            case ANY: return true; // a hint on the coordinator will do
            case ONE: return all >= 1;
            case TWO: return all >= 2;
            case THREE: return all >= 3;
            case QUORUM: return all >= quorum(replicas());
            case ALL: return all == replicas();
            case LOCAL_ONE: return local >= 1;
            case LOCAL_QUORUM: return local >= quorum(rf(dc));
            case EACH_QUORUM:
                for (String each : new String[]{ DC1, DC2 })
                    if (rf(each) > 0 && Integer.bitCount(acked & mask(each)) < quorum(rf(each)))
                        return false;
                return true;
            default: throw new IllegalArgumentException(level + " is not modelled");
        }
    }

    /** Whether a coordinator in {@code dc} can meet the level while every replica of {@code downDc} is down. */
    public boolean available(ConsistencyLevel level, String dc, String downDc)
    {
        return satisfies(((1 << replicas()) - 1) & ~mask(downDc), level, dc);
    }

    /** The levels a coordinator in {@code dc} can meet while {@code downDc} is down; others fail as Unavailable. */
    public Predicate<ConsistencyLevel> reachableFrom(String dc, String downDc)
    {
        return level -> available(level, dc, downDc);
    }

    /**
     * Whether a read at {@code read} from {@code readerDc} always meets a write at {@code write} from
     * {@code writerDc}: no pair of replica sets that satisfy them is disjoint.
     */
    public boolean overlaps(ConsistencyLevel write, String writerDc, ConsistencyLevel read, String readerDc)
    {
        int sets = 1 << replicas();
        for (int w = 0; w < sets; w++)
        {
            if (!satisfies(w, write, writerDc))
                continue;
            for (int r = 0; r < sets; r++)
                if ((w & r) == 0 && satisfies(r, read, readerDc))
                    return false;
        }
        return true;
    }
}
