package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.db.marshal.AbstractType;
import org.asynctriggers.api.Operation;
import org.asynctriggers.api.TaskContext;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.CqlGateway;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/** What a flow's handler sees of its task; CQL it runs goes through the flow's gateway at the flow's write consistency. */
final class HandlerContext implements TaskContext
{
    private final FlowSpec spec;
    private final Statements statements;
    private final ColumnTypes types;
    private final Task task;
    private final Map<String, ByteBuffer> values;
    private final SourceCells cells;

    HandlerContext(FlowSpec spec, Statements statements, ColumnTypes types, Task task, SourceCells cells)
    {
        this.spec = spec;
        this.statements = statements;
        this.types = types;
        this.task = task;
        this.cells = cells;
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(cells.values));
    }

    @Override
    public long writetime(String column)
    {
        SourceCells.Cell cell = cells.cells.get(column);
        return cell == null ? task.timestamp() : cell.timestamp;
    }

    @Override
    public String flowName()
    {
        return spec.name;
    }

    @Override
    public Operation operation()
    {
        return task.operation();
    }

    @Override
    public long timestamp()
    {
        return task.timestamp();
    }

    @Override
    public Map<String, ByteBuffer> key()
    {
        Map<String, ByteBuffer> key = new LinkedHashMap<>();
        List<String> names = spec.source.primaryKey();
        List<ByteBuffer> components = task.key();
        for (int i = 0; i < components.size(); i++)
            key.put(names.get(i), components.get(i));
        return Collections.unmodifiableMap(key);
    }

    @Override
    public Map<String, ByteBuffer> values()
    {
        return values;
    }

    @Override
    public Object get(String column)
    {
        ByteBuffer value = values.get(column);
        if (value == null)
            return null;
        AbstractType<?> type = types.typeOf(column);
        if (type == null)
            throw new IllegalArgumentException("flow '" + spec.name + "': unknown source column '" + column + "'");
        return type.compose(value.duplicate());
    }

    @Override
    public List<Map<String, ByteBuffer>> execute(String cql, Object... values)
    {
        CqlGateway.Prepared prepared = statements.prepare(cql);
        List<ByteBuffer> bound = new ArrayList<>(values.length);
        for (int i = 0; i < values.length; i++)
            bound.add(statements.gateway.bind(prepared, i, values[i]));
        return statements.gateway.execute(prepared, spec.writeConsistency, bound);
    }
}
