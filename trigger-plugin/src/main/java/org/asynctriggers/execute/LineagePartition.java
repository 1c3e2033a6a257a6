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
    /** per target index, its floor rows: each exempt image's (empty: none) newest deletion ({@link #floorExcept}) */
    private final Map<Integer, Map<List<ByteBuffer>, Long>> floorRows = new HashMap<>();

    private LineagePartition(List<Map<String, ByteBuffer>> rows)
    {
        for (Map<String, ByteBuffer> row : rows)
        {
            LineageEntry entry = LineageEntry.of(row);
            if (entry == null)
                unreadable.add(row);
            else if (entry.target >= FLOORS)
            {
                floors.merge(Integer.MAX_VALUE - entry.target, entry.ts, Math::max);
                floorRows.computeIfAbsent(Integer.MAX_VALUE - entry.target, t -> new LinkedHashMap<>())
                         .merge(entry.image, entry.ts, Math::max);
            }
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

    /**
     * Target {@code index}'s floor for the rows of {@code image} (a fan-out's, {@link Lineage}): the newest deletion
     * of its images' rows that did not spare that image's rows. A fan-out's deletion of an older image's rows spares
     * the rows of the image that was the newest then, and records its floor under that image; a floor under no image
     * (a deletion for a sentinel, or by a version before fan-out floors) spares none.
     */
    long floorExcept(int index, List<ByteBuffer> image)
    {
        long at = NO_FLOOR;
        for (Map.Entry<List<ByteBuffer>, Long> row : floorRows.getOrDefault(index, Map.of()).entrySet())
            if (row.getKey().isEmpty() || !row.getKey().equals(image))
                at = Math.max(at, row.getValue());
        return at;
    }

    /** The floor recorded under {@code exempt} (empty: the floor that spares no image); {@link #NO_FLOOR}: none. */
    long floorRow(int index, List<ByteBuffer> exempt)
    {
        return floorRows.getOrDefault(index, Map.of()).getOrDefault(exempt, NO_FLOOR);
    }

    /**
     * The floor rows of target {@code index} that {@code more} (a row about to be raised: its exempt image and
     * timestamp) leaves of no use: {@link #floorExcept} of any image is the same without them, as two rows of
     * distinct exempt images at least as new stand for them (one of the two is not that image's). Deleting them keeps
     * a source row's floors to two per target however many images it goes through.
     */
    Map<List<ByteBuffer>, Long> floorsLeftBehind(int index, List<ByteBuffer> exempt, long at)
    {
        Map<List<ByteBuffer>, Long> rows = new LinkedHashMap<>(floorRows.getOrDefault(index, Map.of()));
        rows.merge(exempt, at, Math::max);
        List<Map.Entry<List<ByteBuffer>, Long>> newest = new ArrayList<>(rows.entrySet());
        newest.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
        Map<List<ByteBuffer>, Long> behind = new LinkedHashMap<>();
        if (newest.size() < 3)
            return behind;
        for (Map.Entry<List<ByteBuffer>, Long> row : newest.subList(2, newest.size()))
            if (!row.getKey().equals(exempt))
                behind.put(row.getKey(), row.getValue());
        return behind;
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
     * The timestamp the cells of {@code image}'s rows in a fan-out ({@link Lineage}) must be above: the target's floor
     * for that image ({@link #floorExcept}); {@code before}'s {@code written} when it has a TTL (as in
     * {@link #floorFor}); and every deletion an entry of another image older than {@code image} may still make: such
     * an entry's task may converge without having seen this image (it read the partition before this one was
     * recorded), take itself for the newest, and delete the rows of each entry older than it (of another image, or
     * {@code before}) but its own, at the timestamp its convergence would: this image's rows among them where the
     * images share rows. Whichever of the two tasks reads the partition last sees the other's entry, and this one then
     * writes its cells again above it ({@link Lineage#converge}). A deletion by a task that sees this image as the
     * newest spares this image's rows, and needs no term.
     */
    long fanoutFloorFor(LineageEntry image, LineageEntry before)
    {
        long at = floorExcept(image.target, image.image);
        List<LineageEntry> entries = new ArrayList<>(entriesOf(image.target));
        if (before != null)
        {
            if (before.ttl > 0)
                at = Math.max(at, before.written);
            if (!entries.contains(before)) // replaced by this image's own entry once it is recorded
                entries.add(before);
        }
        for (LineageEntry newer : entries)
        {
            if (newer.targetKey.equals(image.targetKey) || !image.newerThan(newer))
                continue;
            for (LineageEntry older : entries)
                if (!older.targetKey.equals(newer.targetKey) && newer.newerThan(older))
                    at = Math.max(at, newer.image.isEmpty() || older.ts == newer.ts ? newer.ts : newer.ts - 1);
        }
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
