package org.asynctriggers.testing;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.CqlGateway;

/**
 * A gateway for tests that look at what is prepared: every call but {@link #prepare} fails unless the test overrides
 * it, so a test never passes on a call it did not expect.
 */
public abstract class PrepareOnlyGateway implements CqlGateway
{
    @Override
    public List<Map<String, ByteBuffer>> execute(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values)
    {
        throw new UnsupportedOperationException("execute " + statement);
    }

    @Override
    public List<Map<String, ByteBuffer>> executeLocally(Prepared statement, List<ByteBuffer> values)
    {
        throw new UnsupportedOperationException("executeLocally " + statement);
    }

    @Override
    public void writeList(String keyspace, String table, List<ByteBuffer> primaryKey, String column, List<ByteBuffer> elements,
                          List<Integer> ttls, long timestamp, ConsistencyLevel consistency)
    {
        throw new UnsupportedOperationException("writeList " + keyspace + '.' + table);
    }

    @Override
    public List<KeyedRow> readPartition(String keyspace, String table, List<ByteBuffer> partitionKey, ConsistencyLevel consistency)
    {
        throw new UnsupportedOperationException("readPartition " + keyspace + '.' + table);
    }

    @Override
    public org.asynctriggers.cql.SourceRow readRow(String keyspace, String table, List<ByteBuffer> primaryKey, ConsistencyLevel consistency)
    {
        throw new UnsupportedOperationException("readRow " + keyspace + '.' + table);
    }

    @Override
    public Set<String> staticColumns(String keyspace, String table)
    {
        throw new UnsupportedOperationException("staticColumns " + keyspace + '.' + table);
    }

    @Override
    public Page fetchPage(Prepared statement, ConsistencyLevel consistency, List<ByteBuffer> values, int pageSize, ByteBuffer from)
    {
        throw new UnsupportedOperationException("fetchPage " + statement);
    }

    @Override
    public ByteBuffer bind(Prepared statement, int index, Object value)
    {
        throw new UnsupportedOperationException("bind " + statement);
    }
}
