"""The hardware's limit (experiment ``bulk_writer``): timeline rows/s of a plain client writing at the run's
consistency, no flow — the faster of the Python driver (Spark tasks) and the Spark Cassandra Connector; and, beside
it, the integrated flow's fan-out rate with its queues never empty."""
from __future__ import annotations

import dataclasses
import time
import uuid

from async_triggers.benchmarks import results
from async_triggers.benchmarks.apps.cassandra import INSERT_TIMELINE, SESSIONS, StoreFactory, Target
from async_triggers.benchmarks.harness.completions import Completions, FlowCounters, wait_drained
from async_triggers.benchmarks.harness.testbed import Testbed


def run(bed: Testbed) -> dict:
    """The plain writer's run; then the flow's fan-out run when the integrated approach is among the apps."""
    from async_triggers.spark_jobs.loadgen import Record
    cfg = bed.cfg
    bed.use_cluster(cfg.db_nodes)
    bed.prepare("bulk_writer")
    bed.progress(f"bulk writer: {cfg.partitions} Spark tasks for {cfg.bulk_s:g} s")
    started = time.time()
    python = bulk_write(bed.spark_session(), bed.target(), cfg.bulk_s, cfg.partitions)
    bed.progress(f"  Python driver: {python['rows']} timeline rows in {python['seconds']:.1f} s = "
                 f"{python['rows_s']:.0f} rows/s")
    # the same number of rows again through the connector (JVM, asynchronous): the faster one is the limit
    jvm = connector_write(bed.spark_session(), bed.target(), max(python["rows"], 1000), cfg.partitions,
                          cfg.fanout_concurrency)
    bed.progress(f"  Spark Cassandra Connector: {jvm['rows']} timeline rows in {jvm['seconds']:.1f} s = "
                 f"{jvm['rows_s']:.0f} rows/s")
    best = max((python, jvm), key=lambda g: g["rows_s"])
    record = Record(0, 0, started, started, started + best["seconds"], "ok", False, None)
    run = results.summarise([record], experiment="bulk_writer", app="bulk_writer", db_nodes=bed.nodes,
                            duration_s=best["seconds"],
                            config={**bed.run_config(), "python_driver": python, "connector": jvm,
                                    "rows": best["rows"], "seconds": best["seconds"]},
                            fanout_rows_s=best["rows_s"])
    results.write_run(cfg.out, run)
    if "integrated" in cfg.apps:
        flow_fanout(bed, best["rows"])
    return run


def flow_fanout(bed: Testbed, rows: int) -> dict:
    """The integrated flow's fan-out rate with its queues never empty: the most-followed user's tweets, as
    many as make about ``rows`` timeline rows, written at once; timeline rows/s from the first write to the
    last task's completion (flow_status), the same count the bulk writer's rate is made of."""
    from async_triggers.benchmarks.apps.tweets import Tweet
    from cassandra.util import uuid_from_time
    from async_triggers.spark_jobs.loadgen import Record
    bed.prepare("integrated")
    author, followers = bed.top_user
    count = max(1, round(rows / (followers + 1)))
    store = StoreFactory(bed.target())()
    with bed.session() as session:
        counters = FlowCounters(session)
        completions = Completions(counters).start()
        bed.progress(f"integrated fan-out: {count} tweets by user {author} ({followers} followers) at once")
        records = []
        for i in range(count):
            at = time.time()
            store.write_tweet_async(Tweet(uuid_from_time(at), author, f"fan-out {i}", int(at * 1000))).result()
            records.append(Record(0, i, at, at, time.time(), "ok", False, None))
        completions_at, drained = wait_drained("integrated", records, completions, counters, count, time.time(),
                                               timeout_s=bed.cfg.drain_timeout_s, queue_url=None,
                                               progress=bed.progress)
        completions.stop()
    start = records[0].scheduled
    elapsed = (completions_at or time.time()) - start
    written = completions.samples[-1][2]
    run = results.summarise(records, experiment="bulk_writer", app="integrated", db_nodes=bed.nodes,
                            duration_s=max(elapsed, 1e-3),
                            config={**bed.run_config(), "author": author, "followers": followers,
                                    "tweets": count, "rows": written, "seconds": round(elapsed, 3),
                                    "drained": drained},
                            fanout_rows_s=written / elapsed, drain_s=None if completions_at is None
                            else completions_at - records[-1].acked)
    results.write_run(bed.cfg.out, run, records)
    bed.progress(f"  integrated fan-out: {written} timeline rows in {elapsed:.1f} s = "
                 f"{written / elapsed:.0f} rows/s")
    return run


@dataclasses.dataclass(frozen=True)
class BulkWriter:
    """Writes synthetic timeline rows for ``seconds`` with the target's concurrency, as fast as the cluster takes
    them; returns (rows written, seconds taken). Each Spark task writes to its own user range."""
    target: Target
    seconds: float
    users: int = 100_000

    def __call__(self, task: int) -> tuple[int, float]:
        from cassandra.concurrent import execute_concurrent_with_args
        session = SESSIONS.get(self.target)
        insert = session.prepare(INSERT_TIMELINE.format(ks=self.target.keyspace))
        insert.consistency_level = self.target.level("write_consistency")
        started = time.monotonic()
        deadline = started + self.seconds
        body = "b" * 200
        rows = 0
        batch = 2000
        while time.monotonic() < deadline:
            now_ms = int(time.time() * 1000)
            params = [((task * 7919 + rows + i) % self.users + 1, uuid.uuid1(), 0, body, now_ms) for i in range(batch)]
            results = execute_concurrent_with_args(session, insert, params, concurrency=self.target.concurrency,
                                                   raise_on_first_error=False)
            rows += sum(1 for r in results if r.success)
        return rows, time.monotonic() - started


def bulk_write(spark, target: Target, seconds: float, partitions: int) -> dict:
    """Run :class:`BulkWriter` as ``partitions`` Spark tasks at once; timeline rows per second in total."""
    writer = BulkWriter(target, seconds)
    got = spark.sparkContext.parallelize(range(partitions), partitions) \
        .map(lambda task: writer(task)).collect()
    rows = sum(r for r, _ in got)
    elapsed = max(s for _, s in got)
    return {"rows": rows, "seconds": round(elapsed, 3), "rows_s": round(rows / elapsed, 2)}


def connector_write(spark, target: Target, rows: int, partitions: int, concurrency: int = 64) -> dict:
    """The JVM's bulk writer: ``rows`` synthetic timeline rows written by the Spark Cassandra Connector
    (asynchronous writes, ``concurrency`` in flight per task, the target's write consistency); rows per second."""
    from pyspark.sql import functions as F
    from async_triggers.spark_jobs.session import CASSANDRA_FORMAT
    # a timeuuid column takes version-1 UUIDs only: made from the row number (as the time) and its hash (node)
    tweet_id = F.expr("concat(lpad(hex(id % 4294967296), 8, '0'), '-', lpad(hex((id div 4294967296) % 65536), 4, "
                      "'0'), '-11f1-8', substr(md5(cast(id as string)), 1, 3), '-', "
                      "substr(md5(cast(id as string)), 4, 12))")
    df = spark.range(0, rows, numPartitions=partitions).select(
        (F.col("id") % 100_000 + 1).alias("user_id"), tweet_id.alias("tweet_id"),
        F.lit(0).cast("long").alias("author_id"), F.lit("b" * 200).alias("body"),
        F.current_timestamp().alias("created_at"))
    started = time.monotonic()
    df.write.format(CASSANDRA_FORMAT).options(keyspace=target.keyspace, table="timeline").option(
        "spark.cassandra.output.consistency.level", target.write_consistency).option(
        "spark.cassandra.output.concurrent.writes", str(concurrency)).mode("append").save()
    elapsed = time.monotonic() - started
    return {"rows": rows, "seconds": round(elapsed, 3), "rows_s": round(rows / elapsed, 2)}
