package org.asynctriggers.backup;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.CassandraWriteContext;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.BTreeRow;
import org.apache.cassandra.db.rows.BufferCell;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.concurrent.OpOrder;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.cql.InternalConsistency;
import org.asynctriggers.cql.LocalRows;
import org.asynctriggers.task.Task;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replica backup map of one source table (docs/design.md, "Replica backup maps"): the companion table
 * {@code <ks>."async_backup_<table>"}, whose partition key has the source's types in the source's order, so an entry
 * has its source row's token and lives on exactly the source row's replicas. Each replica writes the entries of a
 * write itself, as it applies the write ({@link #applyLocally}); the node that executes the task deletes them on every
 * replica through the normal write path ({@link #complete}).
 */
public final class BackupTable
{
    private static final Logger logger = LoggerFactory.getLogger(BackupTable.class);
    static final String PREFIX = "async_backup_";
    /**
     * A completed entry is deleted at this timestamp: its (flow, id) is written again only by a late copy of the same
     * write (hint, batchlog replay), whose entry, at the write's own timestamp, stays deleted; and a late resume update
     * from a slower executor of the same task cannot bring the row back.
     */
    static final long COMPLETED_AT = Long.MAX_VALUE / 2;

    final String keyspace;
    final String table;
    final String companion;
    private final int partitionKeySize;
    private final CqlGateway gateway;
    private final List<String> where = new ArrayList<>();
    private volatile CqlGateway.Prepared resume, delete, insert;

    public BackupTable(String keyspace, String table, int partitionKeySize, CqlGateway gateway)
    {
        this.keyspace = keyspace;
        this.table = table;
        this.companion = companionOf(table);
        this.partitionKeySize = partitionKeySize;
        this.gateway = gateway;
        for (int i = 0; i < partitionKeySize; i++)
            where.add("key_" + i);
        where.add("flow");
        where.add("id");
    }

    public static String companionOf(String table)
    {
        return PREFIX + table;
    }

    /**
     * The entries of these tasks (all of one source partition) as one update of the companion table. Each row is
     * written at its write's timestamp, so every replica, and every replay of the write, writes the same cells: a row
     * marker, {@code task} and {@code captured}, as an INSERT of them would. Built row by row from the companion's
     * columns, looked up once per store ({@link Store}): this runs on every write.
     */
    public static PartitionUpdate entries(Store companion, DecoratedKey key, List<Task> tasks, long capturedMillis)
    {
        TableMetadata metadata = companion.metadata;
        ByteBuffer captured = ByteBuffer.allocate(8).putLong(0, capturedMillis);
        PartitionUpdate.Builder update = new PartitionUpdate.Builder(metadata, key, companion.entryColumns, tasks.size());
        Row.Builder row = BTreeRow.sortedBuilder();
        for (Task task : tasks)
        {
            long timestamp = task.timestamp();
            row.newRow(Clustering.make(text(task.flow()), uuid(task.id())));
            row.addPrimaryKeyLivenessInfo(LivenessInfo.create(timestamp, 0));
            // a sorted builder takes the cells in the columns' order
            BufferCell taskCell = BufferCell.live(companion.task, timestamp, task.serialize());
            BufferCell capturedCell = BufferCell.live(companion.captured, timestamp, captured.duplicate());
            row.addCell(companion.capturedFirst ? capturedCell : taskCell);
            row.addCell(companion.capturedFirst ? taskCell : capturedCell);
            update.add(row.build());
        }
        return update.build();
    }

    /**
     * Applies the entries on this replica in the source write's own operation group ({@code writeGroup}, held open
     * for them when they are written after the write: capture/WriteCapture), with no commit log record of their own
     * (docs/design.md, "Capture"): until the source's memtable is flushed, the source write's record is their durable
     * copy (its replay at boot captures them again); when it is flushed, which waits for the group, the capture index
     * logs the backup map's unflushed live entries first ({@link UnflushedEntries}). No message to another node.
     */
    public static void applyLocally(Store companion, PartitionUpdate entries, OpOrder.Group writeGroup)
    {
        companion.cfs.apply(entries, new CassandraWriteContext(writeGroup, null), false);
    }

    /**
     * The local store of a backup map and its columns, looked up once rather than on every write; {@link #of} gives
     * a new one when the table was dropped and created again (a redeploy).
     */
    public static final class Store
    {
        final ColumnFamilyStore cfs;
        final TableMetadata metadata;
        final ColumnMetadata task, captured;
        final RegularAndStaticColumns entryColumns;
        final boolean capturedFirst;

        /** {@code cfs}: null where only the entries are built (unit tests) */
        Store(ColumnFamilyStore cfs, TableMetadata metadata)
        {
            this.cfs = cfs;
            this.metadata = metadata;
            this.task = metadata.getColumn(ColumnIdentifier.getInterned("task", true));
            this.captured = metadata.getColumn(ColumnIdentifier.getInterned("captured", true));
            if (task == null || captured == null)
                throw new IllegalStateException("backup map " + metadata + " has not the layout of this plugin (no 'task' or "
                                                + "'captured' column): redeploy its flows");
            this.entryColumns = RegularAndStaticColumns.builder().add(task).add(captured).build();
            this.capturedFirst = captured.compareTo(task) < 0;
        }

        /** The backup map of this source table as it is now: {@code last} while still valid, null when it is missing. */
        public static Store of(String keyspace, String sourceTable, Store last)
        {
            if (last != null && last.cfs.isValid() && last.cfs.metadata() == last.metadata)
                return last;
            ColumnFamilyStore cfs = ColumnFamilyStore.getIfExists(keyspace, companionOf(sourceTable));
            return cfs == null ? null : new Store(cfs, cfs.metadata());
        }

        public ColumnFamilyStore cfs()
        {
            return cfs;
        }
    }

    /**
     * Writes a task's entry on every replica of its source row through the normal write path, at the source write's
     * timestamp (what a replica that captures the write writes itself): for a task that exists outside any write, a
     * dead letter queued again. At {@link InternalConsistency#DEAD_LETTERS}: the dead letter it replaces was as durable.
     */
    public void insertEntry(Task task, long capturedMillis)
    {
        CqlGateway.Prepared statement = insert;
        if (statement == null)
        {
            List<String> columns = new ArrayList<>(where);
            columns.add("task");
            columns.add("captured");
            insert = statement = gateway.prepare(Cql.insert(keyspace, companion, columns));
        }
        List<ByteBuffer> values = new ArrayList<>(entryKey(task));
        values.add(task.serialize());
        values.add(ByteBuffer.allocate(8).putLong(0, capturedMillis));
        values.add(ByteBuffer.allocate(8).putLong(0, task.timestamp()));
        gateway.execute(statement, InternalConsistency.DEAD_LETTERS, values);
    }

    /** Records where a chunked fan-out goes on (at LOCAL_ONE; a lost update only makes a takeover redo more rows). */
    public void recordResume(Task task, int target, ByteBuffer paging)
    {
        CqlGateway.Prepared statement = resume;
        if (statement == null)
            resume = statement = gateway.prepare("UPDATE " + Cql.table(keyspace, companion) + " SET \"resume\" = ? WHERE "
                                                 + String.join(" AND ", where.stream().map(c -> Cql.quote(c) + " = ?").toArray(String[]::new)));
        List<ByteBuffer> values = new ArrayList<>();
        values.add(encodeResume(target, paging));
        values.addAll(entryKey(task));
        gateway.execute(statement, InternalConsistency.BACKUP_ENTRIES, values);
    }

    /** The task is done (or a dead letter, or discarded): its entry goes on every replica, in every data
     * center; hints carry it to those that are down (cql/InternalConsistency). */
    public void complete(Task task)
    {
        CqlGateway.Prepared statement = delete;
        if (statement == null)
            delete = statement = gateway.prepare(Cql.delete(keyspace, companion, where));
        List<ByteBuffer> values = new ArrayList<>();
        values.add(ByteBuffer.allocate(8).putLong(0, COMPLETED_AT));
        values.addAll(entryKey(task));
        gateway.execute(statement, InternalConsistency.BACKUP_ENTRIES, values);
    }

    private List<ByteBuffer> entryKey(Task task)
    {
        List<ByteBuffer> key = new ArrayList<>(task.partitionKey(partitionKeySize));
        key.add(text(task.flow()));
        key.add(uuid(task.id()));
        return key;
    }

    /** One live entry of a backup map on this node. */
    static final class Entry
    {
        final Task task;
        final DecoratedKey key;
        /** wall-clock milliseconds at which this replica captured it */
        final long capturedMillis;
        final Map.Entry<Integer, byte[]> resume;

        Entry(Task task, DecoratedKey key, long capturedMillis, Map.Entry<Integer, byte[]> resume)
        {
            this.task = task;
            this.key = key;
            this.capturedMillis = capturedMillis;
            this.resume = resume;
        }
    }

    /** What a scan does with each live entry it finds. */
    public interface EntryVisitor
    {
        void visit(Entry entry);
    }

    /**
     * Visits the live entries of the local replica of a backup map, read directly from its memtables and sstables: a
     * CQL read would count the completed entries' tombstones against tombstone_warn_threshold, this reads past them.
     */
    public static void scan(String keyspace, String sourceTable, EntryVisitor visitor)
    {
        ColumnFamilyStore cfs = ColumnFamilyStore.getIfExists(keyspace, companionOf(sourceTable));
        if (cfs == null)
            return;
        TableMetadata metadata = cfs.metadata();
        ColumnMetadata taskColumn = metadata.getColumn(ColumnIdentifier.getInterned("task", true));
        ColumnMetadata capturedColumn = metadata.getColumn(ColumnIdentifier.getInterned("captured", true));
        ColumnMetadata resumeColumn = metadata.getColumn(ColumnIdentifier.getInterned("resume", true));
        if (taskColumn == null || capturedColumn == null)
        {
            logger.warn("Backup map {}.{} has not the layout of this plugin (no 'task' or 'captured' column): redeploy its flows",
                        keyspace, companionOf(sourceTable));
            return;
        }
        LocalRows.scan(cfs, (key, row) -> {
            if (row.isStatic())
                return;
            Cell<?> task = row.getCell(taskColumn);
            if (task == null)
                return; // only a late resume update survived the delete: nothing to run
            Cell<?> captured = row.getCell(capturedColumn);
            Cell<?> resume = resumeColumn == null ? null : row.getCell(resumeColumn);
            try
            {
                visitor.visit(new Entry(Task.deserialize(task.buffer()), key,
                                        captured == null ? 0 : captured.buffer().getLong(captured.buffer().position()),
                                        resume == null ? null : decodeResume(resume.buffer())));
            }
            catch (IllegalArgumentException e)
            {
                logger.warn("Backup map {}.{}: unreadable entry skipped: {}", keyspace, companionOf(sourceTable), e.getMessage());
            }
        });
    }

    static ByteBuffer encodeResume(int target, ByteBuffer paging)
    {
        ByteBuffer out = ByteBuffer.allocate(4 + paging.remaining());
        out.putInt(target).put(paging.duplicate()).flip();
        return out;
    }

    /** Target index and paging state of a recorded resume position; null for none. */
    static Map.Entry<Integer, byte[]> decodeResume(ByteBuffer resume)
    {
        if (resume == null || resume.remaining() < 4)
            return null;
        ByteBuffer in = resume.duplicate();
        int target = in.getInt();
        byte[] paging = new byte[in.remaining()];
        in.get(paging);
        return Map.entry(target, paging);
    }

    static ByteBuffer text(String value)
    {
        return ByteBuffer.wrap(value.getBytes(StandardCharsets.UTF_8));
    }

    static ByteBuffer uuid(UUID id)
    {
        return ByteBuffer.allocate(16).putLong(0, id.getMostSignificantBits()).putLong(8, id.getLeastSignificantBits());
    }
}
