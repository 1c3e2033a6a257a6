package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.Expression;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;

/**
 * The copies of a source's static values in the rows of its direct targets, and how they die with their row
 * (docs/design.md, "Write shapes"). In the source a static cell belongs to the partition and keeps no row alive; in a
 * derived row its copy is a cell of the row and does. So when a row goes (its last cell deleted, as in a row made by
 * {@code UPDATE} alone; or deleted while the static value is newer than the deletion) its derived rows keep their key
 * and the copies, unless the copies are deleted too; and when the row comes back, at any timestamp above what deleted
 * it, its copies must come back above that deletion.
 * <p>
 * A task that finds its row gone on this replica deletes the copies at a timestamp no copy written before is newer
 * than ({@link SourceCells#withStaticsGone}, and above the target's floor), after raising the target's <b>floor</b> to
 * it: the row's record in the lineage table that a lineage target keeps for the same purpose ({@link LineagePartition}),
 * here for a direct target. Every task that writes copies reads the floors and writes its copies above them. The
 * floor is raised before the row is read again: if the row is back by then, no copy is deleted (the task of the write
 * that brought it back runs after that write landed here, so after the floor was raised, and reads it); otherwise the
 * write that brings it back lands after that read, and its task reads the floor raised. Tasks of one row run on one
 * executor, its first live replica; a takeover runs them on another (docs/design.md, "does not cover").
 * <p>
 * Costs one read of the row's lineage partition per task of a flow that copies static values, and, when the row is
 * gone, one write per target and one more local read of the row.
 */
final class StaticCopies
{
    private final FlowSpec spec;
    private final Statements statements;
    private final Lineage records;
    /** per direct target's index, its columns copied from a source column (that may be static): target -> source */
    private final Map<Integer, Map<String, String>> copied = new LinkedHashMap<>();

    StaticCopies(FlowSpec spec, Statements statements, Lineage records)
    {
        this.spec = spec;
        this.statements = statements;
        this.records = records;
        if (spec.source.clustering.isEmpty())
            return; // no static column
        for (FlowSpec.Target target : spec.targets)
        {
            if (target.mode == FlowSpec.Mode.LINEAGE)
                continue;
            Map<String, String> columns = new LinkedHashMap<>();
            for (Map.Entry<String, Expression> e : target.columns.entrySet())
                if (e.getValue().scope == Expression.Scope.SOURCE && !target.primaryKey().contains(e.getKey())
                    && !spec.source.primaryKey().contains(e.getValue().column))
                    columns.put(e.getKey(), e.getValue().column);
            if (!columns.isEmpty())
                copied.put(target.index, columns);
        }
    }

    /** Whether a target may copy a static value (the source has clustering columns, a direct target maps a non-key column). */
    boolean any()
    {
        return !copied.isEmpty();
    }

    /**
     * What the task does to the copies of static values in its derived rows: writes them above the floors, or, when
     * {@code source} (the row as read on this replica, read only when a target copies a static value) is gone, deletes
     * them above the floors after raising the floors; a row deletion writes no copy, so it does nothing while its row
     * lives. {@code goneStill} reads the row again: whether it is still gone.
     */
    Times settle(Task task, Supplier<SourceCells> read, BooleanSupplier goneStill)
    {
        Set<String> statics = statements.gateway.staticColumns(spec.source.keyspace, spec.source.table);
        Map<Integer, Map<String, String>> copies = new LinkedHashMap<>();
        for (Map.Entry<Integer, Map<String, String>> target : copied.entrySet())
        {
            Map<String, String> columns = new LinkedHashMap<>();
            target.getValue().forEach((column, from) -> {
                if (statics.contains(from))
                    columns.put(column, from);
            });
            if (!columns.isEmpty())
                copies.put(target.getKey(), columns);
        }
        if (copies.isEmpty())
            return Times.NONE;
        SourceCells source = read.get();
        if (!source.staticsGone() && task.operation() == Operation.DELETE)
            return Times.NONE;
        ByteBuffer key = task.serializedKey();
        LineagePartition recorded = records.read(key);
        Map<Integer, Long> floors = new HashMap<>();
        for (int index : copies.keySet())
            if (recorded.floorOf(index) != LineagePartition.NO_FLOOR)
                floors.put(index, recorded.floorOf(index));
        if (!source.staticsGone())
            return new Times(copies, floors, false);
        Map<Integer, Long> deleteAt = new HashMap<>();
        for (int index : copies.keySet())
        {
            long at = Math.max(source.staticsGoneAt, floors.getOrDefault(index, Long.MIN_VALUE) + 1);
            records.raiseFloor(key, index, at);
            deleteAt.put(index, at);
        }
        // back since it was read: the task of the write that brought it back writes the copies, above the new floors
        return goneStill.getAsBoolean() ? new Times(copies, deleteAt, true) : Times.NONE;
    }

    /** What one task writes to the copies of static values in the derived rows of each target. */
    static final class Times
    {
        static final Times NONE = new Times(Map.of(), Map.of(), false);

        /** per target index, its copied columns (target -> source static column) */
        private final Map<Integer, Map<String, String>> copies;
        /** per target index: the floor the copies go above; when {@link #gone}, the timestamp they are deleted at */
        private final Map<Integer, Long> at;
        private final boolean gone;

        private Times(Map<Integer, Map<String, String>> copies, Map<Integer, Long> at, boolean gone)
        {
            this.copies = copies;
            this.at = at;
            this.gone = gone;
        }

        /** Whether the copies in the target's derived rows are to be deleted. */
        boolean deletes(FlowSpec.Target target)
        {
            return gone && at.containsKey(target.index);
        }

        /** Adds to {@code row}, a derived row of {@code target}, its copies: deleted, or raised above the floor. */
        void apply(FlowSpec.Target target, SourceCells source, DerivedRow row)
        {
            Map<String, String> columns = copies.get(target.index);
            Long ts = at.get(target.index);
            if (columns == null || ts == null)
                return;
            for (Map.Entry<String, String> column : columns.entrySet())
            {
                SourceCells.Cell cell = source.cells.get(column.getValue());
                if (gone)
                    row.cell(column.getKey(), new SourceCells.Cell(null, ts, 0));
                else if (cell != null && cell.timestamp <= ts)
                    row.cell(column.getKey(), new SourceCells.Cell(cell.value, ts + 1, cell.expiresAt));
            }
        }
    }
}
