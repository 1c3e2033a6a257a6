package org.asynctriggers.backup;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.cassandra.dht.Murmur3Partitioner;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.Fixtures;

/** A backup map in memory for tests outside this package: the entries a replica wrote, scanned like {@link BackupTable#scan}. */
public final class BackupMapStub implements Takeover.Scanner
{
    private final List<BackupTable.Entry> entries = new CopyOnWriteArrayList<>();
    /** scans made so far */
    public volatile int scans;

    /** The entry of a task of the row with this bigint key, captured at {@code capturedMillis}. */
    public void add(Task task, long key, long capturedMillis)
    {
        entries.add(new BackupTable.Entry(task, Murmur3Partitioner.instance.decorateKey(Fixtures.bigint(key)), capturedMillis, null));
    }

    @Override
    public void scan(String keyspace, String sourceTable, BackupTable.EntryVisitor visitor)
    {
        for (BackupTable.Entry entry : entries)
            visitor.visit(entry);
        scans++;
    }
}
