package org.asynctriggers.task;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.asynctriggers.api.Operation;

import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.text;

/**
 * Tasks of every shape a plugin stores (backup entries, spill files, dead letters), built through the task's public
 * API, and a description of everything a task holds. The files under {@code stored-java/} are these tasks as the
 * plugin stored them with Java serialization, before it had a task format of its own; under {@code stored-v<N>/}, as
 * format version N stores them. Each folder is written once by {@link #main} when its format is current, and kept
 * unchanged since, so that every later version is checked to read them.
 */
final class StoredTaskSamples
{
    private static final long T = 1_700_000_000_000_000L;

    private StoredTaskSamples()
    {
    }

    static Map<String, Task> samples()
    {
        Map<String, Task> out = new LinkedHashMap<>();
        // an insert with cells at their own timestamps, a null cell, TTLs; failed twice, a fan-out resumed at page 2
        SourceChange insert = new SourceChange(Operation.INSERT, List.of(bigint(1), text("k")), T + 2,
                                               row("v", "x", "w", "y", "gone", null),
                                               Map.of("v", T + 1, "w", T + 2, "gone", T + 2), Map.of("v", 1_700_000_020L),
                                               1_700_000_030L, T, SourceChange.NONE, false);
        out.put("insert-resumed", new Task("timeline", 7, insert, 123).failedOnce().failedOnce()
                                  .resumeAt(1, ByteBuffer.wrap(new byte[]{ 1, 2, 3 })));
        // a clustering-range deletion: ck >= 5 AND ck < 9 in partition 2
        KeyRange range = new KeyRange(List.of(bigint(5)), true, List.of(bigint(9)), false);
        SourceChange delete = new SourceChange(Operation.DELETE, List.of(bigint(2)), T + 100, Map.of(), Map.of(), Map.of(), 0,
                                               SourceChange.NONE, T + 100, false, range);
        out.put("range-delete", new Task("by_tag", 3, delete, 5));
        // a static row's change
        SourceChange statics = new SourceChange(Operation.UPDATE, List.of(bigint(3)), T + 200, row("s", "static value"),
                                                Map.of("s", T + 200), Map.of(), 0, SourceChange.NONE, SourceChange.NONE, true);
        out.put("static-update", new Task("copy", 1, statics, 9));
        // a dead letter an operator retried (its own id), and a task read back from a backup map
        Task plain = new Task("f", 2, List.of(bigint(4)), Operation.UPDATE, T + 300, row("v", "z"), 11);
        out.put("retried", plain.retried(ByteBuffer.wrap(new byte[]{ 9, 8, 7, 6 }), 12));
        out.put("recovered", plain.recovered(13, 2, new byte[]{ 4, 5 }));
        // a partition deletion, a task with no value at all
        out.put("partition-delete", new Task("f", 2, List.of(bigint(6)), Operation.DELETE, T + 400, Map.of(), 14));
        return out;
    }

    /** Everything a task holds, through its accessors, in a stable text. */
    static String describe(Task task)
    {
        StringBuilder s = new StringBuilder();
        s.append("flow=").append(task.flow()).append(" v").append(task.flowVersion())
         .append(" op=").append(task.operation()).append(" ts=").append(task.timestamp())
         .append(" key=").append(task.keyHex()).append(" id=").append(task.id())
         .append(" created=").append(task.createdNanos()).append(" attempts=").append(task.attempts())
         .append(" recovered=").append(task.isRecovered()).append(" resume=").append(task.resumeTarget())
         .append('/').append(hex(task.resumePaging()))
         .append(" liveness=").append(task.livenessTimestamp()).append(" deletion=").append(task.deletionTimestamp())
         .append(" static=").append(task.isStatic()).append(" rowExpires=").append(task.rowExpiresAt())
         .append(" expirations=").append(new TreeMap<>(task.expirations()));
        Map<String, String> values = new TreeMap<>();
        task.values().forEach((c, v) -> values.put(c, (v == null ? "null" : hex(v)) + "@" + task.timestampOf(c)));
        s.append(" values=").append(values);
        KeyRange r = task.range();
        if (r != null)
            s.append(" range=").append(r.startInclusive() ? '[' : '(').append(hexes(r.start())).append(',')
             .append(hexes(r.end())).append(r.endInclusive() ? ']' : ')');
        return s.toString();
    }

    private static String hexes(List<ByteBuffer> parts)
    {
        StringBuilder s = new StringBuilder();
        for (ByteBuffer b : parts)
            s.append(s.length() == 0 ? "" : ":").append(hex(b));
        return s.toString();
    }

    private static String hex(ByteBuffer b)
    {
        if (b == null)
            return "-";
        StringBuilder s = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining())
            s.append(String.format("%02x", d.get()));
        return s.toString();
    }

    /** Writes each sample as this version stores it, into the folder given: run once, when a format is retired. */
    public static void main(String[] args) throws Exception
    {
        java.nio.file.Path dir = java.nio.file.Path.of(args[0]);
        java.nio.file.Files.createDirectories(dir);
        StringBuilder described = new StringBuilder();
        for (Map.Entry<String, Task> e : samples().entrySet())
        {
            ByteBuffer blob = e.getValue().serialize();
            byte[] bytes = new byte[blob.remaining()];
            blob.get(bytes);
            java.nio.file.Files.write(dir.resolve(e.getKey() + ".ser"), bytes);
            described.append(e.getKey()).append(": ").append(describe(e.getValue())).append('\n');
        }
        java.nio.file.Files.writeString(dir.resolve("described.txt"), described.toString());
    }
}
