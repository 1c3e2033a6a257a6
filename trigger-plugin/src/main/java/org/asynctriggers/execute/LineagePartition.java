package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A source row's partition of {@code async_triggers.lineage} as one read gives it: its entries by target, the rows
 * that cannot be read, and its targets' floors.
 * <p>
 * A target's <b>floor</b> is the newest timestamp at which the convergence has deleted the rows of one of its images
 * (docs/design.md, "Lineage"): a deletion the source never made, so a later return to that image must write its
 * older cells above it, or the deletion would hide them. It is one row of the partition per target, under a target
 * index no flow has ({@link #floorIndex}), written at its own value as timestamp (Cassandra keeps the newest) and
 * without a TTL: it must outlive the tombstones it stands for. Every other cell of such a target keeps its own
 * timestamp, so that a deletion in the source between a cell's timestamp and its image's reaches the derived cell as
 * it reached the source's.
 */
final class LineagePartition
{
    /** Floors are under the target indexes from here up: a flow's targets are numbered from 0, and few. */
    static final int FLOORS = Integer.MAX_VALUE - 0xFFFF;
    static final long NO_FLOOR = Long.MIN_VALUE;

    final Map<Integer, List<LineageEntry>> byTarget = new LinkedHashMap<>();
    final List<Map<String, ByteBuffer>> unreadable = new ArrayList<>();
    /** per target index, its floor */
    private final Map<Integer, Long> floors = new HashMap<>();

    private LineagePartition(List<Map<String, ByteBuffer>> rows)
    {
        for (Map<String, ByteBuffer> row : rows)
        {
            LineageEntry entry = LineageEntry.of(row);
            if (entry == null)
                unreadable.add(row);
            else if (entry.target >= FLOORS)
                floors.merge(Integer.MAX_VALUE - entry.target, entry.ts, Math::max);
            else
                byTarget.computeIfAbsent(entry.target, t -> new ArrayList<>()).add(entry);
        }
    }

    /** The lineage table's target index of target {@code index}'s floor. */
    static int floorIndex(int index)
    {
        return Integer.MAX_VALUE - index;
    }

    /** Target {@code index}'s floor; {@link #NO_FLOOR}: none. */
    long floorOf(int index)
    {
        return floors.getOrDefault(index, NO_FLOOR);
    }

    static LineagePartition of(List<Map<String, ByteBuffer>> rows)
    {
        return new LineagePartition(rows);
    }

    List<LineageEntry> entriesOf(int target)
    {
        return byTarget.getOrDefault(target, List.of());
    }

    /** The entry of {@code own}'s target newer than it and of another image (or the sentinel), the newest such; null: none. */
    LineageEntry newerOfAnotherImage(LineageEntry own)
    {
        LineageEntry newest = null;
        for (LineageEntry entry : entriesOf(own.target))
            if (!entry.targetKey.equals(own.targetKey) && entry.newerThan(own) && (newest == null || entry.newerThan(newest)))
                newest = entry;
        return newest;
    }

    /** The entry recorded under {@code image}'s key (its image, its target); null: none. */
    LineageEntry entryOf(LineageEntry image)
    {
        for (LineageEntry entry : entriesOf(image.target))
            if (entry.targetKey.equals(image.targetKey))
                return entry;
        return null;
    }

    /**
     * The timestamp the cells of {@code image}'s rows must be above: the target's floor; when {@code before} (the entry
     * of the image's key that the task found first; null: there was none) has a TTL, its {@code written} (its rows'
     * cells may have expired since, and an expired cell is a tombstone at its own timestamp); and for each entry of
     * another image of the target that is older than {@code image} but newer than {@code before} and still recorded,
     * the timestamp its task would delete {@code before}'s rows at (its own, or {@code before}'s {@code written} when
     * that is newer). Such a task may converge without having seen this image's entry (it read the partition before
     * this one was recorded) and delete the image's rows as {@code before}'s. Whichever of the two tasks reads the
     * partition last sees the other's entry, and this one then writes its cells again above it
     * ({@link Lineage#converge}). Without a {@code before}, no older entry of the image's key was there to delete.
     */
    long floorFor(LineageEntry image, LineageEntry before)
    {
        long at = floorOf(image.target);
        if (before == null)
            return at;
        if (before.ttl > 0)
            at = Math.max(at, before.written);
        for (LineageEntry entry : entriesOf(image.target))
            if (!entry.targetKey.equals(image.targetKey) && image.newerThan(entry) && entry.newerThan(before))
                at = Math.max(at, Math.max(entry.ts, before.written));
        return at;
    }

    /**
     * A cell's timestamp in a derived row: its own, or just above the floor when the floor's deletion would hide it,
     * but never above {@code cap}, the timestamp of the image the task read it with: a task of an older image (run
     * late, or again) must not lift its older value over a newer one that the task of the newer image wrote at its own
     * timestamp. A null (the source's cell deleted) is raised as a value is: a value of that column raised before
     * must go.
     */
    static long above(SourceCells.Cell cell, long floor, long cap)
    {
        if (floor == NO_FLOOR || cell.timestamp > floor)
            return cell.timestamp;
        return Math.max(cell.timestamp, Math.min(floor + 1, cap));
    }
}
