"""Backfill a deployed flow: write, for every row its source table already held, the rows the flow would have
written had it been deployed when that row was written.

    python -m async_triggers.spark_jobs.backfill --flow users_by_name --contact-points 127.0.0.1 --ranges 16

Exit code: 0 when every token range is done, 1 when the backfill could not run (the message names the flow).

How it converges with the live propagation that runs meanwhile (docs/design.md, "Backfill"):

- Every derived row is written at the source row's own timestamp: the newest WRITETIME of the source cells the flow
  reads (a task's timestamp is its write's), and expires when the first of them with a TTL does (none: no TTL), so
  a derived row does not outlive a value it was derived from, however long after its read it is written (by a
  second or two at most: CQL reads a remaining TTL in whole seconds; ``source_rows.with_ttl``). A live write or
  delete of the row is newer and wins whichever of the two lands first; a backfill write never overwrites newer
  data. A row with none of those cells set (key columns only) has no readable timestamp: it is written at the run's
  start time.
- Lineage targets: like the plugin's task, the backfill first records each row's image in
  ``async_triggers.lineage`` at that timestamp (and, on a clustered source, its key in ``lineage_keys``), then
  writes the rows; a live task of the row has a newer version and deletes the images it does not have. After the
  last range the backfill reads the entries, then the source again, and deletes the images the rows no longer have
  with their rows, at the entries' own timestamps (``backfill_lineage``): an image the backfill read before a live
  update does not survive it.
- The ring is split into ``--ranges`` token ranges; each is recorded in ``async_triggers.backfill_progress`` once
  written, and a rerun skips them (``checkpoints``); ``--restart`` starts over.

Flows with a Java handler cannot be applied by Spark and are refused.

About 300 lines: the run's steps in order (read, lineage entries, rows per range, convergence), with the command
line; what differs for an aggregate or a fan-out that follows its table lives in its own module.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Callable, Mapping, Sequence

from async_triggers.spec import FlowSpec

from . import checkpoints, derive, follows, ring
from .errors import AsyncTriggersError, BackfillError
from .source_rows import (  # noqa: F401 (verify_run, repair and the tests read them here too)
    CELLS, EXPIRES, LINEAGE_TTL_GRACE_SECONDS, LINEAGE_WRITE_CONSISTENCY, SOURCE_KEY, TOKEN, TTL, WRITETIME, image_columns, in_range, lineage_key_rows, lineage_rows, quoted, read_source, simple_timestamp_columns, source_key_columns, timestamp_columns, token_in, token_udf, with_ring_columns, with_ttl, with_write_options, write_rows)

DEFAULT_RANGES = 16
# writes in flight per Spark task, for the rows and lineage entries a backfill writes (the bulk writer keeps 64;
# the session's default, 4, suits verify's repairs)
WRITE_CONCURRENCY = 32
# writetime()/ttl() in Spark SQL come with the connector's extensions (its docs/14_data_frames.md, TTL and WRITETIME)
SESSION_CONF = {"spark.sql.extensions": "com.datastax.spark.connector.CassandraSparkExtensions"}
EXIT_STOPPED = 3

Progress = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Report:
    flow: str
    run: str
    ranges: int
    skipped: int                 # ranges recorded by an earlier invocation of the run
    source_rows: int             # read by this invocation (all ranges)
    written: int                 # derived rows written by this invocation
    lineage_removed: int         # older images whose rows and entry the convergence deleted
    seconds: float

    def text(self) -> str:
        return (f"backfill {self.flow}: {self.ranges} token ranges ({self.skipped} done before, "
                f"{self.ranges - self.skipped} now), {self.source_rows} source rows, {self.written} derived rows "
                f"written, {self.lineage_removed} older lineage images removed, in {self.seconds:.1f} s "
                f"({self.source_rows / max(self.seconds, 1e-3):.0f} source rows/s; run {self.run})")


class Stopped(Exception):
    """The test hook ``--stop-after-ranges`` ended the run as a crash would, after that many ranges."""


def check_applicable(spec: FlowSpec | Mapping) -> None:
    """A BackfillError when Spark cannot backfill ``spec`` (a document or its FlowSpec): a companion flow, a Java
    handler, targets it cannot derive."""
    spec = FlowSpec.parse(spec)
    refusal = follows.companion_refusal(spec, "backfill")
    if refusal:
        raise BackfillError(refusal)
    if spec.handler:
        raise BackfillError(f"flow '{spec.name}' runs the Java handler {spec.handler}: Spark cannot apply a handler, "
                            "so this flow cannot be backfilled")
    derive.targets_by_table(spec)    # the same checks verify makes (targets present, consistent keys)


def write_range(spec: FlowSpec, part, fanout_dfs: Mapping[str, object], spark=None,
                progress: Progress | None = None) -> int:
    """Writes what the flow derives from the source rows of ``part``: the lineage images first, then the rows, as
    the plugin's task does. Returns the number of derived rows written. A flow whose fan-out follows its table
    (``spark`` given) writes at the version its rows' write times fall in, each target at its stamp within it, the
    join index first, then fans out over the copy read after it (``follows``). ``progress`` hears how long each
    table's writes took."""
    from pyspark.sql import functions as F

    from async_triggers import keyspace

    def took(what: str, started: float) -> None:
        if progress:
            progress(f"backfill {spec.name}: {what} in {time.monotonic() - started:.1f} s")

    following = spec.following_target
    if following is not None:
        part = part.withColumn(WRITETIME, follows.base(F.col(WRITETIME)))

    started, lineage = time.monotonic(), any(t.mode == "lineage" for t in spec.targets)
    for index, target in enumerate(spec.targets):
        if target.mode == "lineage":
            # EACH_QUORUM, as the plugin writes lineage: a task in either data center must see the entry
            write_rows(lineage_rows(spec, index, part), keyspace.KEYSPACE, keyspace.LINEAGE.name,
                       consistency=LINEAGE_WRITE_CONSISTENCY, concurrency=WRITE_CONCURRENCY,
                       by_replicas=True)   # one entry per source row and target: a partition each
    if spec.source.clustering and lineage:
        # the rows a range or partition deletion of the source covers are found in lineage_keys
        write_rows(lineage_key_rows(spec, part), keyspace.KEYSPACE, keyspace.LINEAGE_KEYS.name, ttl=False,
                   consistency=LINEAGE_WRITE_CONSISTENCY, concurrency=WRITE_CONCURRENCY,
                   partition_key=keyspace.LINEAGE_KEYS.partition_key)
    if lineage:
        took("lineage entries written", started)
    written = 0
    for target in spec.targets:
        clash = {WRITETIME, TTL, EXPIRES} & set(target.columns)
        if clash:
            raise BackfillError(f"flow '{spec.name}': {target.qualified} has a column named "
                                f"{', '.join(sorted(clash))}, which the backfill uses for its write options")
        if following is not None and target is following:
            rows = follows.following_rows(spark, target, part, WRITETIME, EXPIRES)   # over the copy, after the join index
        else:
            rows = derive.target_rows(target, part, fanout_dfs, list(target.columns), carry=(WRITETIME, EXPIRES))
        if following is not None:
            rows = follows.stamped(target, rows, WRITETIME)
        rows = rows.persist()
        try:
            started = time.monotonic()
            n = rows.count()
            written += n
            write_rows(rows, target.keyspace, target.table, concurrency=WRITE_CONCURRENCY,
                       partition_key=target.partition_key if target.clustering else (),
                       by_replicas=not target.clustering)
            took(f"{n} rows of {target.qualified} derived and written", started)
        finally:
            rows.unpersist()
    return written


def backfill_with_session(spark, session, spec: FlowSpec | Mapping, ranges: int = DEFAULT_RANGES, restart: bool = False,
                          progress: Progress = _stderr, stop_after: int | None = None,
                          hold_while: str | None = None, wave_ranges: int | None = None) -> Report:
    """Backfills ``spec`` (a document or its FlowSpec) through the Spark session (rows) and the driver session
    (checkpoints, convergence). The pending token ranges are written in waves of ``wave_ranges`` (default: all of
    them in one), each wave's ranges recorded once all its writes were acknowledged: a crash redoes at most one wave
    (its writes are idempotent: the same cells at the same timestamps). ``stop_after`` and ``hold_while`` are test
    hooks: stop as a crash would after that many ranges (written one per wave); wait after reading the source while
    that file exists."""
    from pyspark import StorageLevel

    from . import aggregate_recompute, backfill_lineage
    from .session import read_table

    started = time.monotonic()
    spec = FlowSpec.parse(spec)
    flow = spec.name
    check_applicable(spec)
    run = checkpoints.open_run(session, flow, ranges, restart)
    if run.resumed and len(run.ranges) != ranges:
        progress(f"backfill {flow}: resuming the run started {run.started} with its {len(run.ranges)} ranges")
    pending = run.pending
    progress(f"backfill {flow}: run {run.started}, {len(run.ranges) - len(pending)}/{len(run.ranges)} token ranges "
             f"done before, {len(pending)} to do")
    if spec.following_target is not None and pending:
        follows.fill_copy(spark, spec, LINEAGE_WRITE_CONSISTENCY, progress)   # before any range fans out over it
        follows.resume_held(session, flow, progress)   # its tasks now fan out over the whole copy
    source = read_source(spark, spec, run.started_micros).persist(StorageLevel.MEMORY_AND_DISK)
    fanout_dfs = {name: read_table(spark, *name.split(".", 1), cols).persist(StorageLevel.MEMORY_AND_DISK)
                  for name, cols in derive.fanout_columns(spec).items()}
    total_source = written = 0
    try:
        if pending:
            read_started = time.monotonic()
            n_read = source.count()
            progress(f"backfill {flow}: {n_read} source rows read in {time.monotonic() - read_started:.1f} s")
        _hold(hold_while)
        size = 1 if stop_after is not None else max(1, wave_ranges or len(pending))
        done = len(run.ranges) - len(pending)
        for wave in [pending[i:i + size] for i in range(0, len(pending), size)]:
            wave_started = time.monotonic()
            part = source if len(wave) == len(run.ranges) else in_ranges(source, wave)
            counts = range_counts(part, wave)
            n_source = sum(counts.values())
            n_rows = write_range(spec, part, fanout_dfs, spark, progress) if n_source else 0
            # a range's own derived rows are known only when it was written alone
            checkpoints.record_many(session, run, [(r, counts[r[0]], n_rows if len(wave) == 1 else None)
                                                   for r in wave])
            total_source, written, done = total_source + n_source, written + n_rows, done + len(wave)
            what = (f"token range ({wave[0][0]}, {wave[0][1]}]" if len(wave) == 1
                    else f"{len(wave)} token ranges at once")
            rate = n_source / max(time.monotonic() - wave_started, 1e-3)
            progress(f"backfill {flow}: ranges {done}/{len(run.ranges)} done ({what}: {n_source} source rows, "
                     f"{n_rows} rows written, {rate:.0f} source rows/s); {written} rows written by this run")
            if stop_after is not None and done - (len(run.ranges) - len(pending)) >= stop_after \
                    and done < len(run.ranges):
                raise Stopped(f"stopped after {stop_after} token ranges (--stop-after-ranges)")
        removed = backfill_lineage.converge(spark, session, spec, progress) \
            if any(t.mode == "lineage" for t in spec.targets) else 0
        aggregate_recompute.recompute_all(spark, session, spec, source, fanout_dfs, progress)
    finally:
        source.unpersist()
        for df in fanout_dfs.values():
            df.unpersist()
    return Report(flow, str(run.started), len(run.ranges), len(run.ranges) - len(pending), total_source, written,
                  removed, time.monotonic() - started)


def in_ranges(df, token_ranges: Sequence[Sequence[int]]):
    """The rows of ``df`` whose token falls in one of ``token_ranges`` (each ``(start, end]``)."""
    from functools import reduce
    return df.where(reduce(lambda x, y: x | y, [token_in(r) for r in token_ranges]))


def range_counts(part, token_ranges: Sequence[Sequence[int]]) -> dict[int, int]:
    """Source rows of ``part`` per range of ``token_ranges`` (by range start), in one Spark job."""
    from pyspark.sql import functions as F
    which = F.lit(None).cast("long")
    for token_range in reversed(token_ranges):
        which = F.when(token_in(token_range), F.lit(token_range[0])).otherwise(which)
    found = {r[0]: r[1] for r in part.groupBy(which.alias("range_start")).count().collect() if r[0] is not None}
    return {a: found.get(a, 0) for a, _ in token_ranges}


def _hold(path: str | None, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while path and os.path.exists(path):
        if time.monotonic() > deadline:
            raise BackfillError(f"{path} still exists after {timeout:.0f} s (--hold-while)")
        time.sleep(0.2)


def run_backfill(flow: str, connection=None, master: str = "local[*]", home=None, ranges: int = DEFAULT_RANGES,
                 restart: bool = False, progress: Progress = _stderr, stop_after: int | None = None,
                 hold_while: str | None = None) -> Report:
    """Starts a Spark session with the connector and its extensions, reads ``flow``'s deployed specification and
    backfills it. ``connection`` (async_triggers.connection.Connection; default: the environment and cqlshrc) says
    how to reach Cassandra, for Spark and the driver alike. Raises BackfillError (naming the flow) when it cannot."""
    from async_triggers import connection as connection_mod
    from async_triggers.cql import connect

    from .errors import describe_error
    from .session import build_session
    from .specs import load_spec

    connection = connection_mod.with_password(connection or connection_mod.resolve({}))
    spark = build_session(master=master, connection=connection, app_name=f"backfill-{flow}", home=home,
                          conf=SESSION_CONF)
    try:
        spec = load_spec(spark, flow)
        with connect(connection) as session:
            return backfill_with_session(spark, session, spec, ranges, restart, progress, stop_after, hold_while)
    except (AsyncTriggersError, Stopped):   # ours say what went wrong, with their outcome (unknown flow: bad input)
        raise
    except Exception as e:   # Spark and the driver surface Cassandra's errors as their own types
        raise BackfillError(f"backfill of flow '{flow}' failed: {describe_error(e)}") from e


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.spark_jobs.backfill",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--flow", required=True, help="a deployed flow (its spec is read from async_triggers.flows)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--home", default=None, help="cache dir (default $ASYNC_TRIGGERS_HOME or ~/.cache/async-triggers)")
    p.add_argument("--ranges", type=int, default=DEFAULT_RANGES,
                   help=f"token ranges of a new run (default {DEFAULT_RANGES}); a resumed run keeps its own")
    p.add_argument("--restart", action="store_true", help="start a new run instead of resuming the latest one")
    p.add_argument("--json", action="store_true", help="the report (or the error) as one JSON object")
    p.add_argument("--stop-after-ranges", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--hold-while", default=None, help=argparse.SUPPRESS)
    from async_triggers.connection import add_arguments
    add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None, connection=None) -> int:
    """The job's command line; ``connection`` (ctl's, password included) replaces its connection options."""
    from async_triggers.connection import from_arguments

    args = _parser().parse_args(argv)
    try:
        report = run_backfill(args.flow, connection or from_arguments(args), args.master, args.home, args.ranges,
                              args.restart, stop_after=args.stop_after_ranges, hold_while=args.hold_while)
    except Stopped as e:
        print(f"backfill {args.flow}: {e}", file=sys.stderr)
        return EXIT_STOPPED
    except AsyncTriggersError as e:
        from async_triggers.errors import exit_code_of
        text = str(e) if f"'{args.flow}'" in str(e) else f"flow '{args.flow}': {e}"
        print(json.dumps({"error": text, "exit_code": exit_code_of(e)}) if args.json else f"error: {text}",
              file=sys.stderr)
        return exit_code_of(e)
    print(json.dumps(dataclasses.asdict(report)) if args.json else report.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
