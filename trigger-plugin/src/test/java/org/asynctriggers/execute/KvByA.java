package org.asynctriggers.execute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;

import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.string;

/** The lineage tests' tables: a source fuzz.kv (k, a, b) and its index on a, fuzz.kv_by_a ((a), k, b). */
final class KvByA
{
    private KvByA()
    {
    }

    /** The cluster as quorum reads see it: the source, its index and our keyspace. */
    static FakeGateway cluster()
    {
        return new FakeGateway().withAsyncTriggersKeyspace()
                                .table("fuzz", "kv", List.of("k"), List.of())
                                .table("fuzz", "kv_by_a", List.of("a"), List.of("k"));
    }

    /** One node's own copy of the source. */
    static FakeGateway replica()
    {
        return new FakeGateway().table("fuzz", "kv", List.of("k"), List.of());
    }

    /** The write of {@code task} applied to the cluster and to each of {@code replicas}. */
    static Task applied(FakeGateway cluster, Task task, FakeGateway... replicas)
    {
        cluster.applied("fuzz", "kv", task);
        for (FakeGateway replica : replicas)
            replica.applied("fuzz", "kv", task);
        return task;
    }

    /** The index's rows, as "a/k b=...". */
    static Set<String> byA(FakeGateway cluster)
    {
        Set<String> out = new TreeSet<>();
        for (Map<String, ByteBuffer> r : cluster.rows("fuzz", "kv_by_a"))
            out.add(string(r.get("a")) + "/" + longOf(r.get("k")) + " b=" + string(r.get("b")));
        return out;
    }
}
