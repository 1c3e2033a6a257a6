"""The status of each flow on each node (FlowNodeStatus: one row of async_triggers.flow_status, as that node's plugin
reports it), which flows are paused (async_triggers.flows), and waiting until the flows are drained everywhere."""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Mapping, Sequence

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from . import keyspace, render
from .errors import ClusterError, FlowPausedError

# the counters and the times of a flow_status row (keyspace.FLOW_STATUS), "updated" apart
COLUMNS = tuple(c for c, cql_type in keyspace.FLOW_STATUS.columns if cql_type in ("bigint", "int"))
TIMES = tuple(c for c, cql_type in keyspace.FLOW_STATUS.columns if cql_type == "timestamp" and c != "updated")
FLAGS = tuple(c for c, cql_type in keyspace.FLOW_STATUS.columns if cql_type == "boolean")
# what a status adds to its row: the flow's state, from the node's report and the flows table
DERIVED = ("state",)


@dataclasses.dataclass(frozen=True)
class FlowNodeStatus:
    flow: str
    node: str
    pending: int
    active: int
    completed: int
    failed: int
    retried: int
    oldest_pending_ms: int
    workers: int
    capacity: int
    spilled: int
    discarded: int
    updated: dt.datetime | None
    recovered: int = 0      # taken over from backup maps
    resumed: int = 0        # started from a fan-out resume position
    fanout_rows: int = 0    # rows written by fan-outs
    backlog: int = 0        # live backup entries of the flow on this node, as its last scan found them
    last_capture: dt.datetime | None = None  # when this node last captured a task (any flow)
    last_scan: dt.datetime | None = None     # when its last scan of the backup maps started
    paused: bool = False    # the node reports the flow paused (its workers take no task, its tasks wait in the maps)
    # running | paused | pausing (asked to pause, this node has not reported it yet) | resuming (the other way)
    state: str = "running"

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for key in ("updated",) + TIMES:
            d[key] = d[key].isoformat() if d[key] else None
        return d

    def settled(self) -> bool:
        """Nothing queued, running or waiting for a retry here, and no live backup entry of the flow on this node in
        a scan made after the node's last capture: no task of the flow is left that this node knows of."""
        scanned_after_captures = self.last_scan is not None and (self.last_capture is None
                                                                 or _naive(self.last_scan) >= _naive(self.last_capture))
        return self.pending == 0 and self.active == 0 and self.backlog == 0 and scanned_after_captures


def state_of(reported_paused: bool, wanted_paused: bool) -> str:
    """A flow's state on a node: what the node reports, against what the flows table asks."""
    if wanted_paused:
        return "paused" if reported_paused else "pausing"
    return "resuming" if reported_paused else "running"


def from_row(row: Mapping, wanted_paused: bool = False) -> FlowNodeStatus:
    """A status from a flow_status row (a mapping of column to value): a counter that is null (a node with an
    older plugin) or absent (a table from an older deploy) reads as 0, a flag as false. ``wanted_paused``: the
    flows table asks for the flow to be paused."""
    reported = bool(row.get("paused"))
    return FlowNodeStatus(flow=row["flow"], node=row["node"], updated=row.get("updated"),
                          **{c: row.get(c) or 0 for c in COLUMNS}, **{t: row.get(t) for t in TIMES},
                          paused=reported, state=state_of(reported, wanted_paused))


def _naive(t: dt.datetime) -> dt.datetime:
    return t.replace(tzinfo=None)


def made_after(statuses: Sequence[FlowNodeStatus], since: dt.datetime) -> list[FlowNodeStatus]:
    """The reports made after ``since`` (each node's ``updated``, its own clock)."""
    return [s for s in statuses if s.updated and _naive(s.updated) > _naive(since)]


def _table(session, table: keyspace.Table):
    ours = session.cluster.metadata.keyspaces.get(keyspace.KEYSPACE)
    return ours.tables.get(table.name) if ours is not None else None


def paused_flows(session) -> set[str]:
    """The flows the flows table asks to be paused (``ctl trigger pause``); none before the first pause."""
    table = _table(session, keyspace.FLOWS)
    if table is None or "paused" not in table.columns:
        return set()
    rows = session.execute(SimpleStatement(
        f'SELECT "name", "paused" FROM {render.ident(keyspace.KEYSPACE)}.{render.ident(keyspace.FLOWS.name)}',
        consistency_level=ConsistencyLevel.LOCAL_ONE))
    return {r.name for r in rows if r.paused}


def read(session, flows: Sequence[str] | None = None) -> list[FlowNodeStatus]:
    table = _table(session, keyspace.FLOW_STATUS)
    if table is None:
        return []
    present = [c for c in COLUMNS + TIMES + FLAGS if c in table.columns]   # until a deploy adds the newer ones
    rows = session.execute(SimpleStatement(
        f'SELECT "flow", "node", {", ".join(render.ident(c) for c in present)}, "updated" '
        f'FROM {render.ident(keyspace.KEYSPACE)}.{render.ident(keyspace.FLOW_STATUS.name)}',
        consistency_level=ConsistencyLevel.LOCAL_ONE))
    wanted = paused_flows(session)
    out = [from_row(d, d["flow"] in wanted) for d in (r._asdict() for r in rows)]
    if flows:
        out = [s for s in out if s.flow in flows]
    return sorted(out, key=lambda s: (s.flow, s.node))


REPORT_FRESH_SECONDS = 10   # the plugin's own rule for a peer that is alive (PeerStatus)


def live_nodes(session) -> set[str]:
    """The broadcast addresses (what the plugin writes in flow_status.node) of the nodes that are up: those the
    driver sees up, and those of data centers its load balancing ignores (it keeps no state of them: is_up None)
    that reported in flow_status within the last REPORT_FRESH_SECONDS."""
    hosts = list(session.cluster.metadata.all_hosts())
    up = {str(h.broadcast_address or h.address) for h in hosts if h.is_up}
    unknown = {str(h.broadcast_address or h.address) for h in hosts if h.is_up is None}
    if unknown:
        now = dt.datetime.utcnow()
        fresh = {s.node for s in read(session)
                 if s.updated and (now - _naive(s.updated)).total_seconds() < REPORT_FRESH_SECONDS}
        up |= unknown & fresh
    return up


def wait_drained(session, flows: Sequence[str], since: dt.datetime, timeout: float = 600.0,
                 poll: float = 1.0, progress=lambda _: None) -> list[FlowNodeStatus]:
    """Wait until every node that reports the flows is settled (FlowNodeStatus.settled: nothing queued or running, no
    live backup entry) in a report newer than ``since`` (so the report was made after the last write we care
    about). A task whose write reached a replica is in that replica's backup map until it is done, so this does
    not say "drained" while any is left. Returns the final statuses."""
    deadline = time.monotonic() + timeout
    last = []
    while time.monotonic() < deadline:
        _fail_if_paused(session, flows)
        last = read(session, flows)
        fresh = made_after(last, since)
        # every node that is up reports every flow: one that does not (yet) may hold its tasks
        missing = sorted({(f, n) for f in flows for n in live_nodes(session)} - {(s.flow, s.node) for s in fresh})
        if fresh and not missing and len(fresh) == len(last) and all(s.settled() for s in fresh):
            return last
        pending = sum(s.pending + s.active for s in fresh)
        backlog = sum(s.backlog for s in fresh)
        progress(f"waiting for the flows to drain: {pending} pending/active, {backlog} live backup entries on "
                 f"{len(fresh)}/{len(last)} fresh reports" + (f", no fresh report of {missing}" if missing else ""))
        time.sleep(poll)
    _fail_if_paused(session, flows)
    raise ClusterError(f"queues of {', '.join(flows)} did not drain within {timeout:.0f} s: "
                       + "; ".join(f"{s.node} pending={s.pending} active={s.active} backlog={s.backlog}" for s in last))


def _fail_if_paused(session, flows: Sequence[str]) -> None:
    """Waiting for a paused flow to drain would wait until someone resumes it: say so at once instead."""
    paused = sorted(set(flows) & paused_flows(session))
    if paused:
        raise FlowPausedError(paused)
