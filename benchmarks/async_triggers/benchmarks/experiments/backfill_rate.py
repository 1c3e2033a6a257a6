"""A backfill's rate against the bulk writer's, on one idle cluster and one Spark session (``make bench-backfill``).

``--rows`` users are written to a source table by the Spark Cassandra Connector as a bulk loader writes (its rows/s:
the bulk writer's, at the backfill's consistency), then two flows are deployed on it, an index (``users_by_name``:
a lineage target, one lineage entry and one row per source row) and a copy (one row per source row), and each is
backfilled with ``ctl trigger backfill``'s job in the same session; ``ctl verify``'s job checks each result. The
ratio is the backfill's source rows/s to the bulk writer's rows/s, each over its own wall time (the backfill's from
its start to its end: reading the source, every range, the lineage convergence). Repeated ``--repeat`` times after
``--warmup`` repetitions that are printed but not counted, the tables emptied between repetitions; the target holds
only if it holds in every counted one. Beside it, the same users are bulk-loaded into a second table in the batches
the backfill uses for rows that are each a partition of their own (rows whose partitions have the same replicas, a
few to a request: ``spark_jobs.batches``): the connector's default batches by partition, so it sends the bulk writer's rows one by one, and the
second ratio says how much of the backfill's lead is that batching.

    python -m async_triggers.benchmarks.experiments.backfill_rate [--rows 100000] [--nodes 3] [--repeat 2] [--warmup 1]
        [--wave-ranges N] [--write-concurrency N]      # 1 and 4: the job as it was, one range at a time
"""
from __future__ import annotations

import argparse
import sys
import time

from async_triggers import deploy
from async_triggers.benchmarks.harness.twitter_example import cluster_settings
from async_triggers.cql import connect
from async_triggers.flows import Flow, Write, source

KS = "bfbench"
TARGET = 0.5          # a backfill's source rows/s >= 0.5x the bulk writer's rows/s
SCHEMA = [
    f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
    "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
    f"CREATE TABLE IF NOT EXISTS {KS}.users (id bigint PRIMARY KEY, name text, email text, bio text)",
    f"CREATE TABLE IF NOT EXISTS {KS}.users_by_name (name text, id bigint, email text, PRIMARY KEY (name, id))",
    f"CREATE TABLE IF NOT EXISTS {KS}.users_copy (id bigint PRIMARY KEY, name text, email text, bio text)",
    # the bulk writer again, batched as the backfill batches rows of their own partitions (a second figure, not the target)
    f"CREATE TABLE IF NOT EXISTS {KS}.users_batched (id bigint PRIMARY KEY, name text, email text, bio text)",
]
FLOWS = [
    Flow(name="bf_by_name", source=f"{KS}.users",
         steps=[Write(f"{KS}.users_by_name", name=source.name, id=source.id, email=source.email)]),
    Flow(name="bf_copy", source=f"{KS}.users",
         steps=[Write(f"{KS}.users_copy", id=source.id, name=source.name, email=source.email, bio=source.bio)]),
]


def bulk_load(spark, rows: int, partitions: int, concurrency: int, consistency: str, table: str = "users",
              by_replicas: bool = False) -> float:
    """Writes ``rows`` users to ``table`` with the connector, ``concurrency`` writes in flight per task; the seconds
    it took. ``by_replicas``: in the backfill's batches of rows whose partitions have the same replicas (the
    connector's default groups a batch by partition, and each user is a partition of its own)."""
    from pyspark.sql import functions as F

    from async_triggers.spark_jobs.session import CASSANDRA_FORMAT
    from async_triggers.spark_jobs import batches
    df = spark.range(0, rows, numPartitions=partitions).select(
        F.col("id"), F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")).alias("name"),
        F.concat(F.lit("u"), F.col("id").cast("string"), F.lit("@example.com")).alias("email"),
        F.lit("b" * 100).alias("bio"))
    options = {"keyspace": KS, "table": table, "spark.cassandra.output.consistency.level": consistency,
               "spark.cassandra.output.concurrent.writes": str(concurrency)}
    if by_replicas:   # every user's values are under batches.SMALL_ROW_BYTES
        options.update(batches.replica_set_options(batches.rows_per_batch(len(df.columns))))
    started = time.monotonic()
    df.write.format(CASSANDRA_FORMAT).options(**options).mode("append").save()
    return time.monotonic() - started


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--name", default="bench")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1,
                   help="repetitions run first and not counted (every JVM cold: the first bulk load took 4x the next)")
    p.add_argument("--partitions", type=int, default=4, help="Spark tasks of the bulk load")
    p.add_argument("--concurrency", type=int, default=64, help="the bulk load's writes in flight per task")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--wave-ranges", type=int, default=None,
                   help="token ranges per wave (default: every pending range at once; 1: one range at a time)")
    p.add_argument("--write-concurrency", type=int, default=None,
                   help="the backfill's writes in flight per Spark task (default: the job's own)")
    args = p.parse_args(argv)
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)

    from async_triggers.spark_jobs import backfill, verify
    from async_triggers.spark_jobs.session import build_session

    if args.write_concurrency:
        backfill.WRITE_CONCURRENCY = args.write_concurrency
    settings = cluster_settings(args.name, args.nodes, log)
    spark = build_session(master=args.master, connection=settings.connection, app_name="backfill-rate",
                          conf=backfill.SESSION_CONF)
    consistency = "LOCAL_QUORUM"     # the backfill's writes (its lineage entries: EACH_QUORUM, one DC here)
    lines, verdicts = [], []
    with connect(settings) as session:
        for statement in SCHEMA:
            session.execute(statement)
        for rep in range(1 - args.warmup, args.repeat + 1):
            for flow in FLOWS:
                if flow.name in deploy.read_deployed(session):
                    deploy.drop(session, flow.name)
            for table in ("users", "users_by_name", "users_copy", "users_batched"):
                session.execute(f"TRUNCATE {KS}.{table}")
            log(f"repetition {rep}: bulk load of {args.rows} users")
            bulk_s = bulk_load(spark, args.rows, args.partitions, args.concurrency, consistency)
            bulk_rate = args.rows / bulk_s
            batched_rate = args.rows / bulk_load(spark, args.rows, args.partitions, args.concurrency, consistency,
                                                 table="users_batched", by_replicas=True)
            deploy.deploy(session, FLOWS, progress=log)
            time.sleep(5)      # every node polls the flows every 2 s
            for flow in FLOWS:
                spec = deploy.read_deployed(session)[flow.name]
                report = backfill.backfill_with_session(spark, session, spec, restart=True, progress=log,
                                                        wave_ranges=args.wave_ranges)
                rate = report.source_rows / report.seconds
                tables = verify.verify_with_session(spark, spec)
                exact = all(t.ok for t in tables)
                ratio = rate / bulk_rate
                verdict = "met" if ratio >= TARGET and exact else "missed"
                if rep > 0:
                    verdicts.append(verdict)
                lines.append(f"{'repetition ' + str(rep) if rep > 0 else 'warm-up (not counted)'}, {flow.name}: {report.source_rows} source rows, {report.written} rows "
                             f"in {report.seconds:.1f} s = {rate:.0f} rows/s; bulk writer {args.rows} rows in "
                             f"{bulk_s:.1f} s = {bulk_rate:.0f} rows/s; ratio {ratio:.2f}x (target >= {TARGET}: "
                             f"{verdict}); verify: {'0 differences' if exact else 'DIFFERENCES'}; the bulk writer "
                             f"batched by replica set as the backfill is {batched_rate:.0f} rows/s, "
                             f"ratio {rate / batched_rate:.2f}x (not the target)")
                log(lines[-1])
    print(f"backfill against the bulk writer: {args.rows} source rows, {args.nodes} nodes, RF 3, "
          f"Spark {args.master}, {args.repeat} repetition(s) after {args.warmup} warm-up, waves of "
          f"{args.wave_ranges or 'every pending'} range(s), {backfill.WRITE_CONCURRENCY} writes in flight per task")
    for line in lines:
        print("  " + line)
    print(f"target (>= {TARGET}x in every repetition): {'met' if set(verdicts) == {'met'} else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
