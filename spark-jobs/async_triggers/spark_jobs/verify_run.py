"""One deployed flow verified (and, with ``repair``, repaired) against Cassandra: the tables read at the chosen
consistency level, compared whole or token range by token range with checkpoints, and what differs repaired.

**Reads.** The source, fan-out and target tables are read through the connector at ``consistency`` (the
connector's ``spark.cassandra.input.consistency.level``, per read; default LOCAL_QUORUM), once per invocation; with
several ranges they are kept (memory and disk) while the ranges are compared.

**Token ranges** (``ranges`` > 1). The Murmur3 ring of the *source* partition key is split as the backfill splits it
(``ring``); a range's unit compares the expected rows derived from the source rows whose token is in the range with
the target rows that derive from those source rows. A target row names its source row when the target's primary key
carries the source partition key (``derive.trace_columns``): its token is computed from those key columns, so every
expected and every actual key of such a table falls in exactly one range, and the per-range counts add up to the
whole-table comparison exactly (a key in both has the same token on both sides). A table whose key does not carry
it is compared per range on the expected keys only (present, missing, wrong value: a left join with the whole
table), and its unexpected rows are found once, by a last unit against every expected row. Each unit done is
recorded (``verify_progress``) with its result, and a rerun resumes (``verify_progress.plan_run``).

**Repair** (``repair``): the differences of each unit are repaired before the unit is recorded (``repair``); after
the last unit a flow with lineage targets converges its lineage, as the backfill does.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Callable, Mapping, Sequence

from async_triggers.spec import FlowSpec

from . import backfill, compare, derive, follows, recent, repair, verify_progress
from .compare import Result
from .repair import FOUND_WRITETIME, Repaired

DEFAULT_CONSISTENCY = "LOCAL_QUORUM"
# the levels a read can ask for (ANY and the serial levels are write-only or Paxos-only)
READ_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE")
TRACE_TOKEN = "verify_token"
WHOLE = None     # the unit of a verification that is not split: the whole ring at once

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Options:
    consistency: str = DEFAULT_CONSISTENCY
    ranges: int = 1
    restart: bool = False
    repair: bool = False
    sample_size: int = compare.SAMPLE_SIZE

    def __post_init__(self):
        from async_triggers.errors import ConfigError
        if self.consistency not in READ_LEVELS:
            raise ConfigError(f"--consistency must be one of {', '.join(READ_LEVELS)}, found: {self.consistency!r}")
        if self.ranges < 1:
            raise ConfigError(f"--ranges must be at least 1, found: {self.ranges}")


@dataclasses.dataclass(frozen=True)
class FlowReport:
    """One flow's verification: a Result per target table, and with a repair what was repaired per table."""
    flow: str
    results: tuple[Result, ...]
    seconds: float
    consistency: str
    ranges: int = 1
    run: str | None = None           # the checkpointed run (its start time); None for a whole-table comparison
    done_before: int = 0             # units recorded by an earlier invocation of the run
    repaired: tuple[Repaired, ...] | None = None
    lineage_removed: int = 0

    @property
    def ok(self) -> bool:
        """Nothing differs; after a repair: everything that differed was repaired."""
        if self.repaired is not None:
            return all(r.not_repaired == 0 for r in self.repaired)
        return all(r.ok for r in self.results)


# --- reading ---------------------------------------------------------------------------------------------------

def read_options(consistency: str) -> dict:
    return {"spark.cassandra.input.consistency.level": consistency}


def _with_token(df, columns: Sequence[str], types: Sequence[str], name: str):
    from pyspark.sql import functions as F

    pos = [derive.position(df, c, "the table") for c in columns]
    renamed = derive.renamed(df, "_")
    token = backfill.token_udf(list(types))(*[F.col(f"_{p}") for p in pos])
    return renamed.withColumn(name, token).toDF(*df.columns, name)


def read_source(spark, spec: FlowSpec, options: Options, fallback_micros: int):
    """The source rows the flow reads (and its partition key); with a repair their write options and ring columns
    (``backfill.read_source``), with several ranges their token."""
    from .session import read_table

    src = spec.source
    if options.repair:
        return backfill.read_source(spark, spec, fallback_micros, read_options(options.consistency), cells=True)
    # every column, cached by the caller: a row is there when SELECT * returns it (backfill.read_source)
    df = read_table(spark, src.keyspace, src.table, None, read_options(options.consistency))
    if options.ranges > 1:
        df = _with_token(df, src.partition_key, [src.columns[c] for c in src.partition_key], backfill.TOKEN)
    return df


def read_target(spark, session, spec: FlowSpec, table: str, traced: Sequence[str] | None, options: Options):
    """A target table's compared columns; with a repair the newest write time of each row's cells
    (``verify_found_writetime``); for a traced table with several ranges its source token (``verify_token``)."""
    from pyspark.sql import functions as F

    from .session import read_table

    keyspace, name = table.split(".", 1)
    group = derive.targets_by_table(spec)[table]
    columns = derive.compared_columns(group)
    joined = any(not derive.is_aggregate(t) and t.join_index for t in group)
    df = read_table(spark, keyspace, name, None if options.repair or joined else columns, read_options(options.consistency))
    if joined:   # a join index keeps the rows its source rows left as gone for a while: they are not the flow's rows
        df = df.where(F.col(follows.GONE).isNull() | ~F.col(follows.GONE))
        if not options.repair:
            df = df.select(*[F.col(backfill.quoted(c)) for c in columns])
    if options.repair:
        dated = repair.dated_columns(session, keyspace, name)
        times = [F.expr(f"writetime({backfill.quoted(c)})") for c in dated]
        newest = (times[0] if len(times) == 1 else F.greatest(*times)) if times else F.lit(None)
        df = df.select(*[F.col(backfill.quoted(c)) for c in columns], newest.cast("long").alias(FOUND_WRITETIME))
    if traced is not None and options.ranges > 1:
        types = spec.source.columns
        df = _with_token(df, traced, [types[p] for p in spec.source.partition_key], TRACE_TOKEN)
    return df


def in_range(df, column: str, unit):
    from pyspark.sql import functions as F
    return df.where((F.col(column) > F.lit(unit[0])) & (F.col(column) <= F.lit(unit[1])))


# --- the units -------------------------------------------------------------------------------------------------

def compare_unit(spec: FlowSpec, unit, source, fanouts: Mapping, targets: Mapping, traced: Mapping,
                 options: Options, session=None, fallback_micros: int = 0, started_s: float | None = None):
    """Compares (and repairs) one unit: WHOLE, a token range, or verify_progress.FINAL. Returns the Result per table
    and, with a repair, the Repaired per table. ``started_s``: when the verification started reading (epoch
    seconds; default: now), from which a recency bound's edge is reckoned (recent.without_edge)."""
    started_s = time.time() if started_s is None else started_s
    from pyspark.sql import functions as F

    # a repair reads each row back and its source row again (repair_confirm): the source key and cells ride along
    carry = (backfill.WRITETIME, backfill.EXPIRES, backfill.CELLS, *backfill.source_key_columns(spec)) \
        if options.repair else ()
    found = (FOUND_WRITETIME,) if options.repair else ()
    final = unit == verify_progress.FINAL
    part = source if unit is WHOLE or final else in_range(source, backfill.TOKEN, unit)
    expected = derive.expected_rows(spec, part, fanouts, carry, since_s=started_s)
    results, repaired = {}, {}
    if unit is WHOLE or final:   # a group's total comes from source rows of every range: compared once, whole
        for table, aggregate in derive.aggregate_tables(spec).items():
            results[table] = compare_aggregate(table, aggregate, source, fanouts, targets[table], options)
            if options.repair:   # verify_flow has the plugin recompute every group once the members are repaired
                r = results[table]
                repaired[table] = Repaired(table, written=r.missing + r.wrong_value, deleted=r.unexpected)
    for table, exp in expected.items():
        group = derive.targets_by_table(spec)[table]
        act, join, kinds = targets[table], "full_outer", compare.KINDS
        if final:
            if traced[table] is not None:
                continue
            join, kinds = "right_outer", ("unexpected",)          # its other kinds were counted range by range
        elif unit is not WHOLE:
            if traced[table] is not None:
                act = in_range(act, TRACE_TOKEN, unit)
            else:
                join, kinds = "left_outer", ("present", "missing", "wrong_value")   # unexpected: in FINAL
        if TRACE_TOKEN in act.columns:
            act = act.drop(TRACE_TOKEN)
        classified, layout = compare.classify(exp, act, derive.primary_key(group[0]), carry=carry, found=found,
                                              newest=backfill.WRITETIME if options.repair else None, table=table,
                                              join=join)
        cached = classified = classified.where(F.col("kind").isin(*kinds)).persist()
        if any(recent.recent_of(t) for t in group):   # read whole first: the edge moved while it was read
            cached.count()
            classified = recent.without_edge(group, cached, derive.primary_key(group[0]), started_s, time.time())
        try:
            results[table] = compare.summarize(classified, layout, table, options.sample_size, kinds)
            if options.repair:
                repaired[table] = repair.repair_table(session, spec, table, classified, layout, part,
                                                      options.consistency, fallback_micros, fanouts) \
                    if not results[table].ok else Repaired(table)
        finally:
            cached.unpersist()
    return results, repaired


def compare_aggregate(table: str, aggregate: derive.AggregateTable, source, fanouts: Mapping, found, options: Options):
    """Compares an aggregate table with the totals the whole source gives (``derive.aggregate_rows``)."""
    from pyspark.sql import functions as F

    expected = derive.aggregate_rows(aggregate, source, fanouts)
    found = found.select(*[F.col(backfill.quoted(c)) for c in derive.compared_columns([aggregate])])
    classified, layout = compare.classify(expected, found, derive.primary_key(aggregate), table=table)
    classified = classified.persist()
    try:
        return compare.summarize(classified, layout, table, options.sample_size)
    finally:
        classified.unpersist()


def _unit_text(unit) -> str:
    if unit is WHOLE:
        return "the whole ring"
    if unit == verify_progress.FINAL:
        return "unexpected rows of the tables whose key does not name the source row"
    return f"token range ({unit[0]}, {unit[1]}]"


def _micros(now: dt.datetime) -> int:
    """A run's start as a write timestamp, in milliseconds as a checkpointed run keeps it."""
    return int(now.replace(tzinfo=dt.timezone.utc).timestamp() * 1000) * 1000


def _quiet(msg: str) -> None:
    pass


def verify_flow(spark, session, spec: FlowSpec | Mapping, options: Options = Options(), progress: Progress = _quiet,
                now: dt.datetime | None = None) -> FlowReport:
    """Verifies (and repairs) ``spec`` (a document or its FlowSpec) through the Spark session (reads, comparisons,
    repair writes) and the driver ``session`` (checkpoints, deletes, schema; None is enough for a whole-table
    verification without repair). ``progress`` gets a line per unit done (the command line prints them on stderr)."""
    from pyspark import StorageLevel

    from .session import read_table

    started, started_s = time.monotonic(), time.time()
    spec = FlowSpec.parse(spec)
    flow = spec.name
    groups = derive.targets_by_table(spec)
    if options.repair:
        backfill.check_applicable(spec)
    ranged = options.ranges > 1
    traced = {t: derive.trace_columns(spec, g) for t, g in groups.items()}
    run = None
    if ranged:
        run = verify_progress.open_run(session, flow, options.ranges, options.restart,
                                       "repair" if options.repair else "verify", options.consistency, spec,
                                       final=any(v is None for v in traced.values()))
        units, fallback = run.pending, run.started_micros
        progress(f"verify {flow}: run {run.started}, {len(run.done)}/{len(run.units)} units done before, "
                 f"{len(units)} to do (read at {options.consistency})")
    else:
        units, fallback = [WHOLE], _micros(now or dt.datetime.utcnow())
    keep = StorageLevel.MEMORY_AND_DISK
    source = read_source(spark, spec, options, fallback)
    fanouts = {n: read_table(spark, *n.split(".", 1), cols, read_options(options.consistency))
               for n, cols in derive.fanout_columns(spec).items()}
    targets = {t: read_target(spark, session, spec, t, traced[t], options) for t in groups}
    frames = [source, *fanouts.values(), *targets.values()]
    if len(units) > 1:
        frames = [f.persist(keep) for f in frames]
    else:
        frames[0] = source.persist(keep)   # its whole rows read, not narrowed to the columns compared
    source, fanouts = frames[0], dict(zip(fanouts, frames[1:1 + len(fanouts)]))
    targets = dict(zip(targets, frames[1 + len(fanouts):]))
    per_unit: list[tuple[dict, dict]] = []
    if run is not None:
        for recorded in run.done.values():
            per_unit.append(({t["table"]: compare.result_from_dict(t) for t in recorded.get("tables", [])},
                             {r["table"]: Repaired(**r) for r in recorded.get("repaired") or []}))
    try:
        total = len(run.units) if run is not None else 1
        done = total - len(units)
        for unit in units:
            results, repaired = compare_unit(spec, unit, source, fanouts, targets, traced, options, session, fallback,
                                             started_s)
            if run is not None:
                verify_progress.record(session, run, unit, {
                    "tables": [r.as_dict() for r in results.values()],
                    "repaired": [r.as_dict() for r in repaired.values()] if options.repair else None})
            per_unit.append((results, repaired))
            done += 1
            found = sum(r.differences for r in results.values())
            so_far = sum(r.differences for res, _ in per_unit for r in res.values())
            progress(f"verify {flow}: ranges {done}/{total} done ({_unit_text(unit)}: {found} difference(s)); "
                     f"{so_far} difference(s) so far")
        removed = 0
        if options.repair and any(t.mode == "lineage" for t in spec.targets):
            from . import backfill_lineage
            removed = backfill_lineage.converge(spark, session, spec, progress, label=f"verify {flow} --repair")
        if options.repair and any(r.differences for res, _ in per_unit for r in res.values()):
            from . import aggregate_recompute   # the members as repaired and converged: the plugin recomputes the totals
            aggregate_recompute.recompute_all(spark, session, spec, source, fanouts, progress)
    finally:
        for f in frames if len(units) > 1 else frames[:1]:
            f.unpersist()
    results = tuple(compare.merge([res[t] for res, _ in per_unit if t in res], options.sample_size) for t in groups)
    repaired = None
    if options.repair:
        repaired = tuple(sum((rep[t] for _, rep in per_unit if t in rep), Repaired(t)) for t in groups)
    return FlowReport(flow, results, time.monotonic() - started, options.consistency, len(run.ranges) if run else 1,
                      str(run.started) if run else None, len(run.done) if run else 0, repaired, removed)
