"""The checkpoints of a verification split into token ranges (``ctl verify --ranges N``, N > 1), in
``async_triggers.verify_progress``: one row per unit a run compared (and repaired), with its result as JSON.

A run is named by its start time. The units of a run are its token ranges of the source ring, plus, when a target
table's key does not carry the source partition key (``derive.trace_columns``), a last unit that looks for that
table's unexpected rows (range_start = range_end = the maximum token, which starts no ring range).

Without ``restart`` a verification resumes the flow's latest run when that run is incomplete and was started for
the same work: the same mode (verify or repair), consistency level and flow specification (its hash). Otherwise,
and always after a complete run, a rerun starts a new run: an old verdict is never replayed as a new one. The
decision is the pure :func:`plan_run`; reads and writes go through the Python driver at LOCAL_QUORUM, as the
backfill's checkpoints (``checkpoints``).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from typing import Iterable, Mapping, Sequence

from async_triggers import keyspace
from async_triggers.spec import FlowSpec

from .errors import VerifyError
from .ring import MAX_TOKEN, split_ring

TABLE = keyspace.VERIFY_PROGRESS
FINAL = (MAX_TOKEN, MAX_TOKEN)    # the unit that finds the unexpected rows of tables without a traceable key


def spec_hash(doc: Mapping) -> str:
    """The hash of a specification document (``FlowSpec.doc``)."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Run:
    flow: str
    started: dt.datetime                      # the run's name; also the timestamp of rows without a readable one
    ranges: tuple[tuple[int, int], ...]       # the whole ring, in token order
    final: bool                               # whether the run has the FINAL unit
    done: Mapping[int, dict]                  # range_start -> recorded result, of the units done before
    resumed: bool
    mode: str
    consistency: str
    spec_hash: str

    @property
    def units(self) -> list[tuple[int, int]]:
        return list(self.ranges) + ([FINAL] if self.final else [])

    @property
    def pending(self) -> list[tuple[int, int]]:
        return [u for u in self.units if u[0] not in self.done]

    @property
    def started_micros(self) -> int:
        return int(self.started.replace(tzinfo=dt.timezone.utc).timestamp() * 1000) * 1000


def plan_run(flow: str, recorded: Iterable[Mapping], ranges: int, restart: bool, now: dt.datetime, mode: str,
             consistency: str, digest: str, final: bool) -> Run:
    """The run to execute: the latest recorded run of ``flow`` when it is incomplete and matches ``mode``,
    ``consistency`` and ``digest`` (its own number of ranges kept), else a new run of ``ranges`` ranges started at
    ``now`` (millisecond precision, as a CQL timestamp keeps it). ``recorded``: rows with run, range_start, ranges,
    mode, consistency, spec_hash, result."""
    rows = list(recorded)
    if not restart and rows:
        latest = max(r["run"] for r in rows)
        mine = [r for r in rows if r["run"] == latest]
        counts = {r["ranges"] for r in mine}
        same = all((r["mode"], r["consistency"], r["spec_hash"]) == (mode, consistency, digest) for r in mine)
        if len(counts) == 1 and same:
            ring = tuple(split_ring(counts.pop()))
            units = {s for s, _ in ring} | ({FINAL[0]} if final else set())
            done = {r["range_start"]: json.loads(r["result"] or "{}") for r in mine if r["range_start"] in units}
            if len(done) < len(units):
                return Run(flow, latest, ring, final, done, True, mode, consistency, digest)
    started = now.replace(microsecond=now.microsecond // 1000 * 1000, tzinfo=None)
    return Run(flow, started, tuple(split_ring(ranges)), final, {}, False, mode, consistency, digest)


def recorded(session, flow: str) -> list[dict]:
    """Every checkpoint of ``flow`` (all runs)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    try:
        rows = session.execute(SimpleStatement(
            f'SELECT "run", "range_start", "ranges", "mode", "consistency", "spec_hash", "result" '
            f'FROM "{keyspace.KEYSPACE}"."{TABLE.name}" WHERE "flow" = %s',
            consistency_level=ConsistencyLevel.LOCAL_QUORUM), (flow,))
    except Exception as e:   # the driver's InvalidRequest: a keyspace deployed before checkpointed verifications
        if "unconfigured table" in str(e).lower():
            raise VerifyError(f"flow '{flow}': {keyspace.KEYSPACE}.{TABLE.name} does not exist; deploy the flow again "
                              "with this version of ctl (ctl trigger deploy), which creates it, or verify without "
                              "--ranges") from e
        raise
    return [r._asdict() for r in rows]


def open_run(session, flow: str, ranges: int, restart: bool, mode: str, consistency: str, spec: FlowSpec,
             final: bool) -> Run:
    return plan_run(flow, recorded(session, flow), ranges, restart, dt.datetime.utcnow(), mode, consistency,
                    spec_hash(spec.doc), final)


def record(session, run: Run, unit: Sequence[int], result: Mapping) -> None:
    """Marks a unit of ``run`` done, after everything it repaired was acknowledged."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    session.execute(SimpleStatement(
        f'INSERT INTO "{keyspace.KEYSPACE}"."{TABLE.name}" ("flow", "run", "range_start", "range_end", "ranges", '
        f'"mode", "consistency", "spec_hash", "result", "done_at") '
        f'VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, toTimestamp(now()))',
        consistency_level=ConsistencyLevel.LOCAL_QUORUM),
        (run.flow, run.started, unit[0], unit[1], len(run.ranges), run.mode, run.consistency, run.spec_hash,
         json.dumps(result, default=str)))
