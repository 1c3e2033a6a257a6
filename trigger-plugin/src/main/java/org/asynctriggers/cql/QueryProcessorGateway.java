package org.asynctriggers.cql;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.ColumnSpecification;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.Slice;
import org.apache.cassandra.db.marshal.ByteBufferAccessor;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.ComplexColumnData;
import org.apache.cassandra.db.rows.RangeTombstoneMarker;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.ProtocolVersion;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.FBUtilities;

/**
 * {@link CqlGateway} on Cassandra's own query path: statements are parsed and prepared once as internal statements
 * and executed with {@code CQLStatement.execute}, which coordinates through StorageProxy at the requested consistency
 * (unlike {@code QueryProcessor.executeInternal}, which only touches the local node).
 */
public final class QueryProcessorGateway implements CqlGateway
{
    @Override
    public Prepared prepare(String cql)
    {
        try
        {
            ClientState state = ClientState.forInternalCalls();
            CQLStatement statement = QueryProcessor.parseAndPrepare(cql, state, true, false).statement;
            return new Prepared(cql, statement);
        }
        catch (RuntimeException e)
        {
            throw new IllegalArgumentException("cannot prepare [" + cql + "]: " + e.getMessage(), e);
        }
    }

    /** per statement, the table metadata it was last found current against: an unchanged schema is one lookup */
    private final java.util.Map<CQLStatement, TableMetadata> checked = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public boolean isCurrent(Prepared statement)
    {
        CQLStatement cql = (CQLStatement) statement.handle;
        TableMetadata prepared = tableOf(cql);
        if (prepared == null)
            return true;
        TableMetadata now = Schema.instance.getTableMetadata(prepared.keyspace, prepared.name);
        if (now == null)
        {
            checked.remove(cql);
            return false;
        }
        if (now == prepared || now == checked.get(cql))
            return true;
        // a schema pulled from another node rebuilds every table of the keyspace: equal, not the same object
        if (prepared.equals(now))
        {
            checked.put(cql, now);
            return true;
        }
        checked.remove(cql);
        return false;
    }

    private static TableMetadata tableOf(CQLStatement statement)
    {
        if (statement instanceof ModificationStatement)
            return ((ModificationStatement) statement).metadata();
        if (statement instanceof SelectStatement)
            return ((SelectStatement) statement).table;
        return null;
    }

    @Override
    public List<Map<String, ByteBuffer>> execute(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values)
    {
        CQLStatement cql = (CQLStatement) statement.handle;
        ResultMessage result = cql.execute(QueryState.forInternalCalls(), QueryOptions.forInternalCalls(consistency, writable(values)),
                                           Dispatcher.RequestTime.forImmediateExecution());
        if (!(result instanceof ResultMessage.Rows))
            return Collections.emptyList();
        List<Map<String, ByteBuffer>> rows = new ArrayList<>();
        for (UntypedResultSet.Row row : UntypedResultSet.create(((ResultMessage.Rows) result).result))
            rows.add(toMap(row));
        return rows;
    }

    @Override
    public List<Map<String, ByteBuffer>> executeLocally(Prepared statement, List<ByteBuffer> values)
    {
        CQLStatement cql = (CQLStatement) statement.handle;
        ResultMessage result = cql.executeLocally(QueryState.forInternalCalls(), QueryOptions.forInternalCalls(writable(values)));
        if (!(result instanceof ResultMessage.Rows))
            return Collections.emptyList();
        List<Map<String, ByteBuffer>> rows = new ArrayList<>();
        for (UntypedResultSet.Row row : UntypedResultSet.create(((ResultMessage.Rows) result).result))
            rows.add(toMap(row));
        return rows;
    }

    @Override
    public RowLife rowLife(String keyspace, String table, List<ByteBuffer> primaryKey)
    {
        TableMetadata metadata = Schema.instance.getTableMetadata(keyspace, table);
        if (metadata == null)
            return RowLife.NONE;
        List<ByteBuffer> parts = writable(primaryKey);
        int partitionColumns = metadata.partitionKeyColumns().size();
        ByteBuffer partitionKey = partitionColumns == 1
                                  ? parts.get(0)
                                  : CompositeType.build(ByteBufferAccessor.instance, parts.subList(0, partitionColumns).toArray(new ByteBuffer[0]));
        Clustering<ByteBuffer> clustering = Clustering.make(parts.subList(partitionColumns, parts.size()).toArray(new ByteBuffer[0]));
        long now = FBUtilities.nowInSeconds();
        SinglePartitionReadCommand read = SinglePartitionReadCommand.create(metadata, now, metadata.partitioner.decorateKey(partitionKey),
                                                                            Slice.make(clustering));
        ColumnFamilyStore store = ColumnFamilyStore.getIfExists(metadata.id);
        if (store == null)
            return RowLife.NONE;
        long deleted = Long.MIN_VALUE;
        long expires = Long.MIN_VALUE;
        long newest = Long.MIN_VALUE;
        boolean expiredOnce = false;
        Map<String, Long> deadCells = new HashMap<>();
        long staticsNewest = Long.MIN_VALUE;
        // from the memtables and sstables themselves: a read command would drop the tombstones older than
        // gc_grace_seconds, which a derived row's own tombstone (written later) may still hold
        try (ReadExecutionController controller = read.executionController();
             UnfilteredRowIterator rows = read.queryMemtableAndDisk(store, controller))
        {
            deleted = Math.max(deleted, markedAt(rows.partitionLevelDeletion()));
            staticsNewest = newestOf(rows.staticRow());
            while (rows.hasNext())
            {
                Unfiltered unfiltered = rows.next();
                if (unfiltered.isRow())
                {
                    Row row = (Row) unfiltered;
                    deleted = Math.max(deleted, markedAt(row.deletion().time()));
                    expires = Math.max(expires, expiresAt(row, now));
                    newest = Math.max(newest, newestLive(row, now));
                    expiredOnce |= expiresOrExpired(row);
                    deadCells(row, now, deadCells);
                    continue;
                }
                RangeTombstoneMarker marker = (RangeTombstoneMarker) unfiltered;
                if (marker.isOpen(false))
                    deleted = Math.max(deleted, markedAt(marker.openDeletionTime(false)));
                if (marker.isClose(false))
                    deleted = Math.max(deleted, markedAt(marker.closeDeletionTime(false)));
            }
        }
        return new RowLife(deleted, expires, newest, expiredOnce, deadCells, staticsNewest);
    }

    /** The newest timestamp in a row, live or not (cells, tombstones, collections' deletions); MIN_VALUE: none. */
    private static long newestOf(Row row)
    {
        long newest = markedAt(row.deletion().time());
        for (ColumnData data : row.columnData())
            if (data instanceof ComplexColumnData)
                newest = Math.max(newest, markedAt(((ComplexColumnData) data).complexDeletion()));
        for (Cell<?> cell : row.cells())
            newest = Math.max(newest, cell.timestamp());
        return newest;
    }

    /** Adds the row's cells that are not live to {@code out} (by column, the newest tombstone's or expired value's timestamp). */
    private static void deadCells(Row row, long now, Map<String, Long> out)
    {
        for (ColumnData data : row.columnData())
        {
            String column = data.column().name.toString();
            if (data instanceof ComplexColumnData) // a collection: its own deletion (set whole, or deleted), then its elements
            {
                DeletionTime whole = ((ComplexColumnData) data).complexDeletion();
                if (!whole.isLive())
                    out.merge(column, whole.markedForDeleteAt(), Math::max);
                continue;
            }
            Cell<?> cell = (Cell<?>) data;
            if (!cell.isLive(now))
                out.merge(column, cell.timestamp(), Math::max);
        }
    }

    /** The timestamp of the row's newest live marker or cell; Long.MIN_VALUE when none lives. */
    private static long newestLive(Row row, long now)
    {
        LivenessInfo marker = row.primaryKeyLivenessInfo();
        long newest = !marker.isEmpty() && marker.isLive(now) ? marker.timestamp() : Long.MIN_VALUE;
        for (Cell<?> cell : row.cells())
            if (cell.isLive(now))
                newest = Math.max(newest, cell.timestamp());
        return newest;
    }

    /** Whether a part of the row has a TTL, live or not, or is a cell tombstone (an expired cell, once compacted). */
    private static boolean expiresOrExpired(Row row)
    {
        LivenessInfo marker = row.primaryKeyLivenessInfo();
        if (!marker.isEmpty() && marker.isExpiring())
            return true;
        for (Cell<?> cell : row.cells())
            if (cell.isExpiring() || cell.isTombstone())
                return true;
        return false;
    }

    private static long markedAt(DeletionTime deletion)
    {
        return deletion.isLive() ? Long.MIN_VALUE : deletion.markedForDeleteAt();
    }

    /** When the row's last live marker or cell expires; Long.MAX_VALUE when one never does, MIN_VALUE when none lives. */
    private static long expiresAt(Row row, long now)
    {
        LivenessInfo marker = row.primaryKeyLivenessInfo();
        long expires = Long.MIN_VALUE;
        if (!marker.isEmpty() && marker.isLive(now))
            expires = marker.isExpiring() ? marker.localExpirationTime() : Long.MAX_VALUE;
        for (Cell<?> cell : row.cells())
            if (cell.isLive(now))
                expires = Math.max(expires, cell.isExpiring() ? cell.localDeletionTime() : Long.MAX_VALUE);
        return expires;
    }

    @Override
    public Set<String> staticColumns(String keyspace, String table)
    {
        TableMetadata metadata = Schema.instance.getTableMetadata(keyspace, table);
        Set<String> out = new HashSet<>();
        if (metadata != null)
            metadata.staticColumns().forEach(c -> out.add(c.name.toString()));
        return out;
    }

    @Override
    public Page fetchPage(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values, int pageSize, ByteBuffer from)
    {
        CQLStatement cql = (CQLStatement) statement.handle;
        PagingState state = from == null ? null : PagingState.deserialize(from.duplicate(), ProtocolVersion.CURRENT);
        QueryOptions options = QueryOptions.create(consistency, writable(values), false, pageSize, state, ConsistencyLevel.SERIAL,
                                                   ProtocolVersion.CURRENT, null);
        ResultMessage result = cql.execute(QueryState.forInternalCalls(), options, Dispatcher.RequestTime.forImmediateExecution());
        if (!(result instanceof ResultMessage.Rows))
            return new Page(Collections.emptyList(), null);
        ResultSet rs = ((ResultMessage.Rows) result).result;
        List<Map<String, ByteBuffer>> rows = new ArrayList<>();
        for (UntypedResultSet.Row row : UntypedResultSet.create(rs))
            rows.add(toMap(row));
        PagingState next = rs.metadata.getPagingState();
        return new Page(rows, next == null ? null : next.serialize(ProtocolVersion.CURRENT));
    }

    @Override
    public ByteBuffer bind(Prepared statement, int index, Object value)
    {
        if (value == null || value instanceof ByteBuffer)
            return (ByteBuffer) value;
        List<ColumnSpecification> variables = ((CQLStatement) statement.handle).getBindVariables();
        if (index >= variables.size())
            throw new IllegalArgumentException("[" + statement.cql + "] has " + variables.size() + " bind markers, value " + (index + 1) + " given");
        return variables.get(index).type.decomposeUntyped(value);
    }

    /**
     * Cassandra's FastByteOperations treats a heap buffer without an accessible array (a read-only view) as a direct
     * buffer and reads native memory at its (null) address, which crashes the JVM: copy such values first.
     */
    private static List<ByteBuffer> writable(List<ByteBuffer> values)
    {
        List<ByteBuffer> out = null;
        for (int i = 0; i < values.size(); i++)
        {
            ByteBuffer value = values.get(i);
            if (value != null && value.isReadOnly() && !value.isDirect())
            {
                if (out == null)
                    out = new ArrayList<>(values);
                ByteBuffer copy = ByteBuffer.allocate(value.remaining());
                copy.put(value.duplicate()).flip();
                out.set(i, copy);
            }
        }
        return out == null ? values : out;
    }

    private static Map<String, ByteBuffer> toMap(UntypedResultSet.Row row)
    {
        Map<String, ByteBuffer> out = new HashMap<>();
        for (ColumnSpecification column : row.getColumns())
        {
            String name = column.name.toString();
            out.put(name, row.has(name) ? row.getBytes(name) : null);
        }
        return out;
    }
}
