"""A backfill's checkpoints in ``async_triggers.backfill_progress``: one row per completed token range of a run.

A run is named by its start time. Without ``restart`` a backfill resumes the flow's latest run with that run's
number of ranges, and skips the ranges it recorded, if that run is incomplete and started after the flow's deployed
version; a complete run is never replayed, and a run of an earlier deploy (a flow dropped and deployed again under its
name, or deployed with another specification) is not resumed: either way a new run starts over the whole ring, as
does ``restart`` or no earlier run. The decision is the pure
:func:`plan_run`; the reads and writes are through the Python driver, at LOCAL_QUORUM (a backfill runs while another data center is down).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Iterable, Mapping, Sequence

from async_triggers import keyspace

from .errors import BackfillError
from .ring import split_ring

TABLE = keyspace.BACKFILL_PROGRESS


@dataclasses.dataclass(frozen=True)
class Run:
    flow: str
    started: dt.datetime                      # the run's name; also the timestamp of rows whose writetime is unknown
    ranges: tuple[tuple[int, int], ...]       # the whole ring, in token order
    done: frozenset[int]                      # range_start of the ranges completed before this invocation
    resumed: bool

    @property
    def pending(self) -> list[tuple[int, int]]:
        return [r for r in self.ranges if r[0] not in self.done]

    @property
    def started_micros(self) -> int:
        return int(self.started.replace(tzinfo=dt.timezone.utc).timestamp() * 1000) * 1000


def plan_run(flow: str, recorded: Iterable[Mapping], ranges: int, restart: bool, now: dt.datetime,
             deployed: dt.datetime | None = None) -> Run:
    """The run to execute: the latest recorded run of ``flow`` resumed (its ranges as recorded) when it is incomplete
    and started after ``deployed`` (the flow's deployed version), else a new run of ``ranges`` ranges started at
    ``now`` (millisecond precision, as a CQL timestamp keeps it), as when ``restart`` or when nothing is recorded.
    ``recorded``: rows with run, range_start, ranges."""
    rows = list(recorded)
    new = Run(flow, now.replace(microsecond=now.microsecond // 1000 * 1000, tzinfo=None), tuple(split_ring(ranges)),
              frozenset(), resumed=False)
    if restart or not rows:
        return new
    latest = max(r["run"] for r in rows)
    if deployed is not None and latest < deployed:
        return new   # a run of an earlier deploy: the rows it wrote may be another specification's
    mine = [r for r in rows if r["run"] == latest]
    counts = {r["ranges"] for r in mine}
    if len(counts) != 1:
        raise BackfillError(f"flow '{flow}': the checkpoints of the run started {latest} disagree on its number of "
                            f"ranges ({sorted(counts)}); start over with --restart")
    ring = tuple(split_ring(counts.pop()))
    starts = {s for s, _ in ring}
    done = frozenset(r["range_start"] for r in mine if r["range_start"] in starts)
    if done == starts:
        return new   # complete: a rerun backfills again (rows written since its end were captured; it changes nothing)
    return Run(flow, latest, ring, done, resumed=True)


def recorded(session, flow: str) -> list[dict]:
    """Every checkpoint of ``flow`` (all runs)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    try:
        rows = session.execute(SimpleStatement(
            f'SELECT "run", "range_start", "range_end", "ranges", "source_rows", "rows", "done_at" '
            f'FROM "{keyspace.KEYSPACE}"."{TABLE.name}" WHERE "flow" = %s', consistency_level=ConsistencyLevel.LOCAL_QUORUM),
            (flow,))
    except Exception as e:   # the driver's InvalidRequest: a keyspace deployed before backfills existed
        if "unconfigured table" in str(e).lower():
            raise BackfillError(f"flow '{flow}': {keyspace.KEYSPACE}.{TABLE.name} does not exist; deploy the flow "
                                "again with this version of ctl (ctl trigger deploy), which creates it") from e
        raise
    return [r._asdict() for r in rows]


def open_run(session, flow: str, ranges: int, restart: bool) -> Run:
    return plan_run(flow, recorded(session, flow), ranges, restart, dt.datetime.utcnow(), deployed_at(session, flow))


def deployed_at(session, flow: str) -> dt.datetime | None:
    """When the flow's deployed version was deployed (its ``version``, epoch milliseconds); None when unknown."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    rows = list(session.execute(SimpleStatement(
        f'SELECT "version" FROM "{keyspace.KEYSPACE}"."{keyspace.FLOWS.name}" WHERE "name" = %s',
        consistency_level=ConsistencyLevel.LOCAL_QUORUM), (flow,)))
    if not rows or rows[0].version is None:
        return None
    return dt.datetime.utcfromtimestamp(rows[0].version / 1000)


def record_many(session, run: Run, done: Sequence[tuple[Sequence[int], int, int | None]]) -> None:
    """Marks ranges of ``run`` completed (each ``(token_range, source_rows, rows)``; ``rows`` None when the range
    was written together with others and its own count is unknown), after everything they write was acknowledged."""
    for token_range, source_rows, rows in done:
        record(session, run, token_range, source_rows, rows)


def record(session, run: Run, token_range: Sequence[int], source_rows: int, rows: int | None) -> None:
    """Marks a range of ``run`` completed, after everything it writes was acknowledged."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    session.execute(SimpleStatement(
        f'INSERT INTO "{keyspace.KEYSPACE}"."{TABLE.name}" ("flow", "run", "range_start", "range_end", "ranges", '
        f'"source_rows", "rows", "done_at") VALUES (%s, %s, %s, %s, %s, %s, %s, toTimestamp(now()))',
        consistency_level=ConsistencyLevel.LOCAL_QUORUM),
        (run.flow, run.started, token_range[0], token_range[1], len(run.ranges), source_rows, rows))
