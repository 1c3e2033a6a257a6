package org.asynctriggers.work;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.schema.KeyspaceMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.SchemaChangeListener;
import org.apache.cassandra.schema.TableMetadata;

/**
 * Whether the cluster's schema is settling: a table was created, altered or dropped on this node within
 * {@link #SETTLE_MILLIS}, or a live node gossips another schema version than this node's. While it settles, a replica
 * that has not applied a change yet (or applied it first) can fail a read or a write of the task with "UNKNOWN" or
 * "INCOMPATIBLE_SCHEMA" (a column it does not know, or a response whose columns no longer match its table): a
 * failure of the cluster, not of the task, which {@link Retries} then waits out without spending an attempt.
 */
public final class SchemaWatch implements SchemaChangeListener
{
    /** how long after a change this node saw the schema is still counted as settling */
    static final long SETTLE_MILLIS = 30_000;

    private final LongSupplier nanoClock;
    private volatile long lastChangeNanos;
    private volatile boolean changed;

    public SchemaWatch(LongSupplier nanoClock)
    {
        this.nanoClock = nanoClock;
    }

    /** A watch registered with this node's schema. */
    public static SchemaWatch ofNode()
    {
        SchemaWatch watch = new SchemaWatch(System::nanoTime);
        Schema.instance.registerListener(watch);
        return watch;
    }

    public boolean settling()
    {
        return changedRecently() || liveNodesDisagree();
    }

    boolean changedRecently()
    {
        return changed && TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - lastChangeNanos) < SETTLE_MILLIS;
    }

    private static boolean liveNodesDisagree()
    {
        UUID mine = Schema.instance.getVersion();
        for (InetAddressAndPort node : Gossiper.instance.getLiveTokenOwners())
        {
            UUID theirs = Gossiper.instance.getSchemaVersion(node);
            if (theirs != null && !theirs.equals(mine))
                return true;
        }
        return false;
    }

    void changed()
    {
        lastChangeNanos = nanoClock.getAsLong();
        changed = true;
    }

    @Override
    public void onCreateTable(TableMetadata table)
    {
        changed();
    }

    @Override
    public void onAlterTable(TableMetadata before, TableMetadata after, boolean affectStatements)
    {
        changed();
    }

    @Override
    public void onDropTable(TableMetadata table, boolean dropData)
    {
        changed();
    }

    @Override
    public void onAlterKeyspace(KeyspaceMetadata before, KeyspaceMetadata after)
    {
        changed();
    }

    @Override
    public void onDropKeyspace(KeyspaceMetadata keyspace, boolean dropData)
    {
        changed();
    }
}
