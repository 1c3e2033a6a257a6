package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

import org.apache.cassandra.db.marshal.AbstractType;
import org.asynctriggers.cql.ColumnTypes;
import org.asynctriggers.cql.Cql;
import org.asynctriggers.cql.SourceRow;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/**
 * What a flow's executor reads of a source row (docs/design.md, "Execution"): the row as this node's replica holds it,
 * cell by cell with write times and TTLs ({@link SourceCells}). Only the columns the flow uses are read (a Java
 * handler's: every column).
 */
final class SourceReads
{
    private final FlowSpec spec;
    private final Statements statements;
    private final LongSupplier nowMillis;
    /** non-key source columns a task may have to read back, in spec order */
    private final List<String> readColumns;
    /** those of them that can carry a TTL (not a collection or UDT whose cells are many, not a counter) */
    private final List<String> ttlColumns = new ArrayList<>();
    private final boolean clustered;

    /** Prepares the flow's read of its source row. */
    SourceReads(FlowSpec spec, Statements statements, ColumnTypes types, LongSupplier nowMillis)
    {
        this.spec = spec;
        this.statements = statements;
        this.nowMillis = nowMillis;
        this.readColumns = neededNonKeyColumns(spec);
        this.clustered = !spec.source.clustering.isEmpty();
        for (String column : readColumns)
        {
            AbstractType<?> type = types == null ? null : types.typeOf(column);
            if (type == null || (!type.isMultiCell() && !type.isCounter()))
                ttlColumns.add(column);
        }
        if (!readColumns.isEmpty() || clustered)
            statements.prepare(sourceCellsCql());
    }

    private static List<String> neededNonKeyColumns(FlowSpec spec)
    {
        Set<String> needed = new LinkedHashSet<>(spec.source.columns.keySet()); // every column, in the source's order
        if (spec.handler == null)
            needed.retainAll(spec.capturedColumns());
        needed.removeAll(spec.source.primaryKey());
        return new ArrayList<>(needed);
    }

    /**
     * The source row as this node's own replica holds it, over what the task carries: the executor holds every write
     * whose task it runs (it captured it, or holds its backup entry), so this read sees the task's own cells or newer
     * ones, each with its write time; never an older value stamped with the task's timestamp. Read from the replica's
     * memtables and sstables directly ({@link org.asynctriggers.cql.CqlGateway#readRow}), as a CQL SELECT of the cells,
     * their WRITETIMEs and TTLs would give them, without a statement's selection and result set: a read on every task.
     */
    SourceCells readLocally(Task task, SourceCells source)
    {
        SourceRow row = statements.gateway.readRow(spec.source.keyspace, spec.source.table, task.key(), null);
        return source.with(row, readColumns, ttlColumns, Math.floorDiv(nowMillis.getAsLong(), 1000), task.timestamp());
    }

    /** The read as CQL: prepared once, so a flow whose source lacks a column it reads is not applied. */
    private String sourceCellsCql()
    {
        if (readColumns.isEmpty()) // the row's existence alone
            return Cql.select(spec.source.keyspace, spec.source.table, spec.source.primaryKey(), spec.source.primaryKey());
        return Cql.selectCells(spec.source.keyspace, spec.source.table, readColumns, ttlColumns, spec.source.primaryKey());
    }
}
