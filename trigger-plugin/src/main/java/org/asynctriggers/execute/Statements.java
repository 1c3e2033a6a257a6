package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.cql.CqlGateway;

/**
 * One flow version's prepared statements, over its gateway: each CQL text is prepared the first time it is asked for
 * (the constructor of {@link FlowExecutor} asks for the fixed ones, so a flow whose tables do not prepare is not
 * applied), and again once its table was altered, dropped or made again (docs/design.md, "Schema changes").
 */
final class Statements
{
    final CqlGateway gateway;
    private final Map<String, CqlGateway.Prepared> prepared = new ConcurrentHashMap<>();
    /** a statement's shape (its kind, table and columns) to its text: the same few are asked for on every task */
    private final Map<List<?>, String> texts = new ConcurrentHashMap<>();

    Statements(CqlGateway gateway)
    {
        this.gateway = gateway;
    }

    /** Prepared once, and again after its table's schema changed (CqlGateway.isCurrent). */
    CqlGateway.Prepared prepare(String cql)
    {
        CqlGateway.Prepared statement = prepared.computeIfAbsent(cql, gateway::prepare);
        if (gateway.isCurrent(statement))
            return statement;
        CqlGateway.Prepared again = gateway.prepare(cql);
        prepared.put(cql, again);
        return again;
    }

    /**
     * The text of the statement of this {@code shape}, built by {@code build} the first time it is asked for: the same
     * String then, whose hash is computed once, where building it again would cost a derived row more than its
     * binding. A shape holds every input of {@code build}.
     */
    String text(List<?> shape, Supplier<String> build)
    {
        String cql = texts.get(shape);
        if (cql == null)
            cql = texts.computeIfAbsent(shape, s -> build.get());
        return cql;
    }

    List<Map<String, ByteBuffer>> execute(String cql, ConsistencyLevel consistency, List<ByteBuffer> values)
    {
        return gateway.execute(prepare(cql), consistency, values);
    }

    /** A SELECT on this node's own replica only. */
    List<Map<String, ByteBuffer>> executeLocally(String cql, List<ByteBuffer> values)
    {
        return gateway.executeLocally(prepare(cql), values);
    }

    void execute(String cql, ConsistencyLevel consistency, ByteBuffer... values)
    {
        execute(cql, consistency, List.of(values));
    }

    static ByteBuffer bigint(long value)
    {
        return ByteBuffer.allocate(8).putLong(0, value);
    }

    static long longOf(ByteBuffer b)
    {
        return b.getLong(b.position());
    }
}
