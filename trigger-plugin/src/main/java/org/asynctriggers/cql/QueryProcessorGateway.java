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
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterators;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.marshal.ByteBufferAccessor;
import org.apache.cassandra.db.marshal.CollectionType;
import org.apache.cassandra.db.marshal.ListType;
import org.apache.cassandra.db.marshal.UserType;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.db.rows.BTreeRow;
import org.apache.cassandra.db.rows.BufferCell;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.CellPath;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.ComplexColumnData;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.ProtocolVersion;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.ByteBufferUtil;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.TimeUUID;

/**
 * {@link CqlGateway} on Cassandra's own query path: statements are parsed and prepared once as internal statements
 * and executed with {@code CQLStatement.execute}, which coordinates through StorageProxy at the requested consistency
 * (unlike {@code QueryProcessor.executeInternal}, which only touches the local node).
 * <p>
 * About 440 lines: every place the plugin reaches into Cassandra's internals to read or write (statements, pages,
 * whole rows and partitions with their cells' times, lists written by mutation) in one adapter, so that a Cassandra
 * upgrade that moves one of them is found here.
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
    public SourceRow readRow(String keyspace, String table, List<ByteBuffer> primaryKey, ConsistencyLevel consistency)
    {
        TableMetadata metadata = tableOf(keyspace, table);
        List<ByteBuffer> parts = writable(primaryKey);
        int partitionColumns = metadata.partitionKeyColumns().size();
        ByteBuffer partitionKey = partitionKeyOf(parts.subList(0, partitionColumns));
        Clustering<ByteBuffer> clustering = Clustering.make(parts.subList(partitionColumns, parts.size()).toArray(new ByteBuffer[0]));
        long now = FBUtilities.nowInSeconds();
        SinglePartitionReadCommand read = SinglePartitionReadCommand.create(metadata, now, metadata.partitioner.decorateKey(partitionKey), clustering);
        if (consistency == null)
        {
            try (ReadExecutionController controller = read.executionController();
                 PartitionIterator partitions = UnfilteredPartitionIterators.filter(read.executeLocally(controller), now))
            {
                return sourceRow(partitions, now);
            }
        }
        try (PartitionIterator partitions = StorageProxy.read(SinglePartitionReadCommand.Group.one(read), consistency,
                                                              Dispatcher.RequestTime.forImmediateExecution()))
        {
            return sourceRow(partitions, now);
        }
    }

    private static TableMetadata tableOf(String keyspace, String table)
    {
        TableMetadata metadata = Schema.instance.getTableMetadata(keyspace, table);
        if (metadata == null)
            throw new IllegalStateException("unconfigured table " + table + " in keyspace " + keyspace);
        return metadata;
    }

    /** A partition key as Cassandra decorates it: one column's value as is, several as a composite. */
    private static ByteBuffer partitionKeyOf(List<ByteBuffer> parts)
    {
        return parts.size() == 1 ? parts.get(0) : CompositeType.build(ByteBufferAccessor.instance, parts.toArray(new ByteBuffer[0]));
    }

    /** The one row of a single-row read, its partition's static cells beside its own; null when it has none. */
    private static SourceRow sourceRow(PartitionIterator partitions, long now)
    {
        if (!partitions.hasNext())
            return null;
        try (RowIterator partition = partitions.next())
        {
            if (!partition.hasNext())
                return null;
            return rowOf(partition.staticRow(), partition.next(), now);
        }
    }

    /** The row's live cells (and those of its partition's static row, when given); null when nothing of it lives. */
    private static SourceRow rowOf(Row staticRow, Row row, long now)
    {
        Map<String, SourceRow.Cell> cells = new HashMap<>();
        if (staticRow != null)
            addCells(staticRow, now, cells);
        long expires = addCells(row, now, cells);
        LivenessInfo marker = row.primaryKeyLivenessInfo();
        if (!marker.isEmpty() && marker.isLive(now))
            expires = Math.max(expires, marker.isExpiring() ? marker.localExpirationTime() : Long.MAX_VALUE);
        if (expires == Long.MIN_VALUE)
            return null;
        return new SourceRow(cells, expires == Long.MAX_VALUE ? 0 : expires);
    }

    @Override
    public List<KeyedRow> readPartition(String keyspace, String table, List<ByteBuffer> partitionKey, ConsistencyLevel consistency)
    {
        TableMetadata metadata = tableOf(keyspace, table);
        List<ByteBuffer> parts = writable(partitionKey);
        ByteBuffer key = partitionKeyOf(parts);
        long now = FBUtilities.nowInSeconds();
        SinglePartitionReadCommand read = SinglePartitionReadCommand.fullPartitionRead(metadata, now, key);
        List<KeyedRow> out = new ArrayList<>();
        try (PartitionIterator partitions = StorageProxy.read(SinglePartitionReadCommand.Group.one(read), consistency,
                                                              Dispatcher.RequestTime.forImmediateExecution()))
        {
            while (partitions.hasNext())
                try (RowIterator partition = partitions.next())
                {
                    while (partition.hasNext())
                    {
                        Row row = partition.next();
                        SourceRow live = rowOf(null, row, now);
                        if (live == null)
                            continue;
                        List<ByteBuffer> clustering = new ArrayList<>();
                        for (int i = 0; i < row.clustering().size(); i++)
                            clustering.add(row.clustering().bufferAt(i));
                        out.add(new KeyedRow(clustering, live));
                    }
                }
        }
        return out;
    }

    /**
     * Adds the row's live cells to {@code out}; a collection (or non-frozen UDT) as one value, its live elements
     * serialized as a CQL read returns them. Returns when its last live cell expires: Long.MAX_VALUE if one never does,
     * Long.MIN_VALUE if none lives.
     */
    private static long addCells(Row row, long now, Map<String, SourceRow.Cell> out)
    {
        long expires = Long.MIN_VALUE;
        for (ColumnData data : row.columnData())
        {
            String column = data.column().name.toString();
            if (data instanceof ComplexColumnData)
            {
                long newest = Long.MIN_VALUE, first = Long.MAX_VALUE, last = Long.MIN_VALUE;
                List<Cell<?>> live = new ArrayList<>();
                for (Cell<?> cell : (ComplexColumnData) data)
                {
                    if (!cell.isLive(now))
                        continue;
                    live.add(cell);
                    newest = Math.max(newest, cell.timestamp());
                    long at = expiry(cell);
                    first = Math.min(first, at);
                    last = Math.max(last, at);
                }
                if (live.isEmpty())
                    continue;
                AbstractType<?> type = data.column().type;
                boolean list = type instanceof ListType;
                List<SourceRow.Run> runs = first == last || list ? null : runs(type, live);
                List<SourceRow.Run> elements = null;
                if (list)
                {
                    elements = new ArrayList<>();
                    for (Cell<?> cell : live)
                        elements.add(new SourceRow.Run(cell.buffer(), expiresAt(cell), null));
                }
                out.put(column, new SourceRow.Cell(serialized(type, live), newest, first == Long.MAX_VALUE ? 0 : first, runs, elements));
                expires = Math.max(expires, last);
                continue;
            }
            Cell<?> cell = (Cell<?>) data;
            if (!cell.isLive(now))
                continue;
            out.put(column, new SourceRow.Cell(cell.buffer(), cell.timestamp(), cell.isExpiring() ? cell.localDeletionTime() : 0));
            expires = Math.max(expires, cell.isExpiring() ? cell.localDeletionTime() : Long.MAX_VALUE);
        }
        return expires;
    }

    @Override
    public void writeList(String keyspace, String table, List<ByteBuffer> primaryKey, String column, List<ByteBuffer> elements,
                          List<Integer> ttls, long timestamp, ConsistencyLevel consistency)
    {
        TableMetadata metadata = tableOf(keyspace, table);
        ColumnMetadata list = metadata.getColumn(new ColumnIdentifier(column, true));
        if (list == null || !(list.type instanceof ListType) || !list.type.isMultiCell())
            throw new IllegalArgumentException("column " + column + " of " + keyspace + '.' + table + " is not a non-frozen list");
        List<ByteBuffer> parts = writable(primaryKey);
        int partitionColumns = metadata.partitionKeyColumns().size();
        ByteBuffer partitionKey = partitionKeyOf(parts.subList(0, partitionColumns));
        Clustering<ByteBuffer> clustering = Clustering.make(parts.subList(partitionColumns, parts.size()).toArray(new ByteBuffer[0]));
        long now = FBUtilities.nowInSeconds();
        Row.Builder row = BTreeRow.unsortedBuilder();
        row.newRow(clustering);
        row.addComplexDeletion(list, DeletionTime.build(timestamp - 1, now));
        for (int i = 0; i < elements.size(); i++)
        {
            // a time-based UUID whose time is the element's position: positions in order, the same on every write
            CellPath path = CellPath.create(TimeUUID.atUnixMicrosWithLsb(i, LIST_POSITION_LSB).toBytes());
            ByteBuffer value = writable(List.of(elements.get(i))).get(0);
            int ttl = ttls.get(i);
            row.addCell(ttl > 0 ? BufferCell.expiring(list, timestamp, ttl, now, value, path) : BufferCell.live(list, timestamp, value, path));
        }
        Mutation mutation = new Mutation(PartitionUpdate.singleRowUpdate(metadata, metadata.partitioner.decorateKey(partitionKey), row.build()));
        StorageProxy.mutate(List.of(mutation), consistency, Dispatcher.RequestTime.forImmediateExecution());
    }

    /** the node and clock sequence of a derived list's element positions (the variant bits of RFC 4122) */
    private static final long LIST_POSITION_LSB = 0x8000_0000_0000_0001L;

    /** A cell's local expiration time (s); Long.MAX_VALUE when it does not expire. */
    private static long expiry(Cell<?> cell)
    {
        return cell.isExpiring() ? cell.localDeletionTime() : Long.MAX_VALUE;
    }

    /** Live elements of a collection or non-frozen UDT as a CQL read returns their value. */
    private static ByteBuffer serialized(AbstractType<?> type, List<Cell<?>> cells)
    {
        return type.isUDT() ? ((UserType) type).serializeForNativeProtocol(cells.iterator(), ProtocolVersion.CURRENT)
                            : ((CollectionType<?>) type).serializeForNativeProtocol(cells.iterator());
    }

    /**
     * The elements of a collection whose elements expire at different times, in order, consecutive ones that expire
     * together as one run (so a list written run after run keeps its order); a UDT's first run as a value, its other
     * fields one run each.
     */
    private static List<SourceRow.Run> runs(AbstractType<?> type, List<Cell<?>> live)
    {
        List<SourceRow.Run> runs = new ArrayList<>();
        int start = 0;
        for (int i = 1; i <= live.size(); i++)
        {
            if (i < live.size() && expiry(live.get(i)) == expiry(live.get(start)))
                continue;
            if (type.isUDT() && start > 0)
            {
                UserType udt = (UserType) type;
                for (Cell<?> cell : live.subList(start, i))
                    runs.add(new SourceRow.Run(cell.buffer(), expiresAt(cell), udt.fieldNameAsString(ByteBufferUtil.toShort(cell.path().get(0)))));
            }
            else
            {
                runs.add(new SourceRow.Run(serialized(type, live.subList(start, i)), expiresAt(live.get(start)), null));
            }
            start = i;
        }
        return runs;
    }

    private static long expiresAt(Cell<?> cell)
    {
        return cell.isExpiring() ? cell.localDeletionTime() : 0;
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
