"""One run of a history on a real cluster, then its check.

A run: the fan-out rows of its run id (at ALL); the operations, each sent to its coordinator at its consistency
level, the clients' at once (each client's in its order; a failed write is recorded, not retried: the check compares
the targets with whatever the source holds); the replica of the history's fault stopped and started where the
history says, with hinted handoff disabled on every node meanwhile, or paused (SIGSTOP) and resumed, hints on; after a
fault, the flows' source partitions read at ALL (blocking read repair brings the
writes the replica missed, and its capture makes their tasks), twice, with a drain after each (the first repair's
tasks write the cascade's source); the short TTLs waited out; every flow drained; then the verify job on each flow.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Callable, Sequence

from async_triggers import cluster as cluster_mod, deploy, follows, status
from ..errors import AsyncTriggersError, ClusterError
from . import oracle, schema
from .generator import History, Op

Progress = Callable[[str], None]
BASE_BEFORE_US = 3_600_000_000   # a run's timestamp base: an hour before it starts (below any Paxos timestamp)
TTL_MARGIN_S = 4.0               # derived cells expire with their source or up to a second before, never after; an
#                                  aggregate recomputes a group within a control cycle (2 s) of a member's expiry


@dataclasses.dataclass
class Cluster:
    """What runs need of the campaign's cluster: a driver session, a Spark session, the nodes by index, and the
    design whose tables and flows the keyspace holds."""
    settings: object
    name: str
    session: object
    spark: object
    keyspace: str
    nodes: tuple[tuple[str, str], ...]    # (name, address), node1 first
    design: schema.Design | None = None
    drain_timeout_s: float = 300.0
    start_timeout_s: float = 600.0


@dataclasses.dataclass
class RunResult:
    seed: int
    run: int
    ops: int
    failed_ops: int
    fault: str | None
    checks: list[oracle.FlowCheck]
    outcomes: list[dict]
    seconds: float = 0.0
    drained_s: float | None = None
    base: int = 0                   # the timestamps' base (microseconds): an op's TIMESTAMP is base + its offset
    error: str | None = None

    @property
    def failed_flows(self) -> list[str]:
        return oracle.failed(self.checks)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failed_flows

    def suspects(self, design: schema.Design) -> set[tuple[str, int]]:
        """The source partitions of the sampled rows that differ (this run's only)."""
        out: set[tuple[str, int]] = set()
        for check in self.checks:
            for sample in check.samples():
                if sample.get("run") in (None, self.run):
                    out |= design.suspects(sample)
        return out

    def line(self) -> str:
        parts = [f"seed {self.seed}", f"{self.ops} ops ({self.failed_ops} refused)"]
        if self.fault:
            parts.append(self.fault)
        parts.append(f"drained in {self.drained_s:.0f}s" if self.drained_s is not None else "not drained")
        if self.error:
            verdict = f"ERROR {self.error}"
        elif self.ok:
            verdict = f"ok ({len(self.checks)} flows)"
        else:
            verdict = "FAILED " + "; ".join(c.line() for c in self.checks if not c.ok)
        return " | ".join(parts + [verdict, f"{self.seconds:.0f}s"])

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["checks"] = [c.as_dict() for c in self.checks]
        d["ok"] = self.ok
        return d


def _level(name: str):
    from cassandra import ConsistencyLevel
    return getattr(ConsistencyLevel, name)


def _host(c: Cluster, index: int):
    return c.session.cluster.metadata.get_host(c.nodes[index][1])


def _wait_driver(c: Cluster, index: int, up: bool, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        host = _host(c, index)
        if host is not None and bool(host.is_up) == up:
            return
        time.sleep(0.5)


def _nodetool_everywhere(c: Cluster, *args: str) -> None:
    """What `ctl cluster nodetool NODE -- ARGS` runs, on every node at once (each starts a JVM). The commands are
    made one after the other: ccm's helpers swap sys.stdout while they run, which threads would leave swapped."""
    import subprocess
    commands = [(node, *cluster_mod.nodetool_command(c.settings, node, list(args), c.name)) for node, _ in c.nodes]
    procs = [(node, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
             for node, argv, env in commands]
    for node, proc in procs:
        output, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise ClusterError(f"nodetool {' '.join(args)} on {node} failed (exit {proc.returncode}): {output.strip()}")


def _coordinator(c: Cluster, op: Op, down: int | None):
    index = op.coordinator % len(c.nodes)
    if index == down:
        index = (index + 1) % len(c.nodes)
    return _host(c, index)


def _execute(c: Cluster, op: Op, run: int, base: int, down: int | None) -> dict:
    from cassandra.query import SimpleStatement
    statement = SimpleStatement(op.cql(c.keyspace, run, base), consistency_level=_level(op.consistency))
    outcome: dict = {"index": op.index, "ok": True}
    try:
        result = c.session.execute(statement, host=_coordinator(c, op, down), timeout=30)
        if op.lwt:
            outcome["applied"] = bool(result.was_applied)
    except Exception as e:  # noqa: BLE001 - a refused write is part of the history: recorded, the run goes on
        outcome.update(ok=False, error=f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
    return outcome


def read_sources_at_all(c: Cluster, run: int) -> None:
    """Every partition of the flows' sources at ALL: a blocking read repair of whatever a replica missed."""
    from cassandra.query import SimpleStatement
    for table, (column, keys) in c.design.source_keys().items():
        statement = SimpleStatement(f"SELECT * FROM {c.keyspace}.{table} WHERE run = %s AND {column} = %s",
                                    consistency_level=_level("ALL"))
        for key in keys:
            c.session.execute(statement, (run, key), timeout=60)


def _drain(c: Cluster, flows: Sequence[str]) -> None:
    """Waits for the flows and for the companions of those whose fan-out follows its table (the follows)."""
    names = list(flows) + follows.companions_of(deploy.read_deployed(c.session), flows)
    status.wait_drained(c.session, names, dt.datetime.utcnow(), timeout=c.drain_timeout_s)


def write_fans(c: Cluster, run: int, base: int) -> None:
    """The rows of ``fans`` a run starts with, at the run's base time: the history's removals (stamped after it) win."""
    from cassandra.query import SimpleStatement
    statement = SimpleStatement(f"INSERT INTO {c.keyspace}.fans (run, n, f) VALUES (%s, %s, %s) USING TIMESTAMP %s",
                                consistency_level=_level("ALL"))
    for row in schema.fan_rows(run):
        c.session.execute(statement, row + (base,), timeout=30)


def run_history(c: Cluster, history: History, run: int, flows: Sequence[str], progress: Progress = lambda _: None,
                base: int | None = None, midway: Callable[[], None] | None = None) -> RunResult:
    """Run ``history`` under run id ``run`` and verify ``flows``; a failure of the cluster is the result's error.
    ``midway`` runs between the history's first half and its second (a flow deployed and backfilled there)."""
    started = time.monotonic()
    base = int(time.time() * 1_000_000) - BASE_BEFORE_US if base is None else base
    fault = history.fault
    ran_down = fault is not None and any(fault.stop_before <= op.index < fault.start_before for op in history.ops)
    result = RunResult(history.seed, run, len(history.ops), 0, fault.describe() if ran_down else None, [], [],
                       base=base)
    down: int | None = None
    expires = 0.0
    try:
        write_fans(c, run, base)
        if ran_down and fault.kind == "stop":
            _nodetool_everywhere(c, "disablehandoff")
        try:
            for phase in _phases(history, midway is not None):
                stopped = ran_down and fault.stop_before <= phase[0].index < fault.start_before
                if stopped and down is None:
                    node = c.nodes[fault.node][0]
                    if fault.kind == "pause":
                        progress(f"pausing {node} before op {phase[0].index}")
                        cluster_mod.pause_node(c.settings, node, name=c.name)
                    else:
                        progress(f"stopping {node} before op {phase[0].index}")
                        cluster_mod.stop_node(c.settings, node, name=c.name)
                        _wait_driver(c, fault.node, up=False)
                    down = fault.node
                elif not stopped and down is not None:
                    _back(c, fault, progress)
                    down = None
                if midway is not None and down is None and phase[0].index >= len(history.ops) // 2:
                    midway()   # a deploy needs every node up: after the stopped replica is back, if it falls there
                    midway = None
                for op, outcome in _run_clients(c, phase, run, base, down):
                    result.outcomes.append(outcome)
                    if outcome["ok"] and op.short_ttl:
                        expires = max(expires, outcome["at"] + op.short_ttl)
            result.outcomes.sort(key=lambda o: o["index"])
        finally:
            if down is not None:
                _back(c, fault, progress)
            if ran_down and fault.kind == "stop":
                _nodetool_everywhere(c, "enablehandoff")
        if midway is not None:
            midway()   # the history's second half ran with a replica down
            midway = None
        result.failed_ops = sum(1 for o in result.outcomes if not o["ok"])
        drain_started = time.monotonic()
        if ran_down:
            for _ in range(2):
                read_sources_at_all(c, run)
                _drain(c, flows)
        if expires:
            time.sleep(max(0.0, expires + TTL_MARGIN_S - time.monotonic()))
        _drain(c, flows)
        result.drained_s = time.monotonic() - drain_started
        result.checks = oracle.check_flows(c.spark, flows)
        if c.design is not None:
            result.checks += oracle.check_ttls(c.session, c.keyspace, c.design, run)
    except AsyncTriggersError as e:
        result.error = str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001 - the driver's errors (NoHostAvailable...) end this run, not the campaign
        result.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    result.seconds = time.monotonic() - started
    return result


def _phases(history: History, halves: bool = False) -> list[list[Op]]:
    """The history cut where its fault stops and starts the replica (and in its middle when ``halves``): within a
    phase the clients run at once."""
    fault = history.fault
    half = len(history.ops) // 2
    part = lambda op: (fault is not None and fault.stop_before <= op.index < fault.start_before,
                       halves and op.index >= half)
    phases: list[list[Op]] = []
    for op in history.ops:
        if not phases or part(op) != part(phases[-1][-1]):
            phases.append([])
        phases[-1].append(op)
    return phases


def _run_clients(c: Cluster, ops: list[Op], run: int, base: int, down: int | None) -> list[tuple[Op, dict]]:
    """The operations, each client's in order on a thread of its own, the clients at once; each outcome says when
    its write was answered (``at``, the monotonic clock)."""
    from concurrent.futures import ThreadPoolExecutor
    by_client: dict[int, list[Op]] = {}
    for op in ops:
        by_client.setdefault(op.client, []).append(op)

    def client(mine: list[Op]) -> list[tuple[Op, dict]]:
        out = []
        for op in mine:
            outcome = _execute(c, op, run, base, down)
            outcome["at"] = time.monotonic()
            out.append((op, outcome))
        return out

    with ThreadPoolExecutor(max(1, len(by_client))) as pool:
        return [pair for done in pool.map(client, by_client.values()) for pair in done]


def _back(c: Cluster, fault, progress: Progress) -> None:
    """The fault's replica running again: started, or resumed (SIGCONT)."""
    if fault.kind == "pause":
        progress(f"resuming {c.nodes[fault.node][0]}")
        cluster_mod.resume_node(c.settings, c.nodes[fault.node][0], name=c.name)
        _wait_driver(c, fault.node, up=True)
    else:
        _start(c, fault.node, progress)


def _start(c: Cluster, index: int, progress: Progress) -> None:
    progress(f"starting {c.nodes[index][0]}")
    cluster_mod.start_node(c.settings, c.nodes[index][0], name=c.name, timeout=c.start_timeout_s)
    _wait_driver(c, index, up=True)


def truncate(c: Cluster) -> None:
    """Empty every table of the keyspace (before a run: it is verified on tables holding its own rows only)."""
    existing = c.session.cluster.metadata.keyspaces.get(c.keyspace)
    follow = [t for t in c.design.follow_tables(c.keyspace) if existing is not None and t in existing.tables]
    for table in list(c.design.tables()) + c.design.members_tables() + follow:
        try:
            c.session.execute(f"TRUNCATE {c.keyspace}.{table}", timeout=120)
        except Exception as e:  # noqa: BLE001 - the driver's errors: the campaign cannot go on without clean tables
            raise ClusterError(f"TRUNCATE {c.keyspace}.{table} failed: {type(e).__name__}: {e}") from e


def run_rows(c: Cluster, run: int) -> dict[str, list[dict]]:
    """Every row of the run in every table, read at ALL (a failing run's evidence)."""
    from cassandra.query import SimpleStatement
    out = {}
    for table in c.design.tables():
        statement = SimpleStatement(f"SELECT * FROM {c.keyspace}.{table} WHERE run = %s ALLOW FILTERING",
                                    consistency_level=_level("ALL"))
        out[table] = [dict(r._asdict()) for r in c.session.execute(statement, (run,), timeout=60)]
    return out
