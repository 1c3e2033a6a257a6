"""What `ctl trigger status` and `ctl trigger top` show: a flow per line at a glance, or a line per flow and node.

The figures come from each node's latest report (async_triggers.flow_status, every few seconds, TTL 30 s), the dead
letters, and the driver's view of the ring (each host's data center, rack and whether it is up). A node the ring
knows that has no fresh report of a flow (older than ``STALE_S``, or none: its row expired) is shown as not
reporting, never left out: its tasks are not counted and nobody may think them zero.

Pure functions from those inputs to rows and text, so that the views are tested without a cluster.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from typing import Iterable, Mapping, Sequence

from .status import FlowNodeStatus, _naive

STALE_S = 15.0   # a report older than this (the plugin writes one every 2 s) is stale: the node may be gone


@dataclasses.dataclass(frozen=True)
class Host:
    address: str
    dc: str
    rack: str
    up: bool | None   # None: the driver keeps no state of it (a data center its load balancing ignores)


@dataclasses.dataclass(frozen=True)
class FlowLine:
    flow: str
    # running | paused | pausing | resuming | degraded (a node not reporting) | starting (deployed within STALE_S,
    # not every node has reported it yet: each reads the flows and reports every 2 s) | idle
    state: str
    pending: int               # queued + running, on the nodes that report
    backlog: int               # live backup entries, as the nodes' last scans found them
    lag_ms: int                # the oldest queued task's age, on any node
    completed: int
    rate: float | None         # completed per second since the previous sample (None: first sample)
    dead_letters: int
    nodes: dict[str, tuple[int, int]]   # per data center: (reporting, expected)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["nodes"] = {dc: {"reporting": r, "expected": e} for dc, (r, e) in sorted(self.nodes.items())}
        return d


def hosts_of(session) -> list[Host]:
    return [Host(str(h.broadcast_address or h.address), h.datacenter or "?", h.rack or "?", h.is_up)
            for h in session.cluster.metadata.all_hosts()]


def fresh(s: FlowNodeStatus, now: dt.datetime) -> bool:
    return s.updated is not None and (now - _naive(s.updated)).total_seconds() <= STALE_S


def completed_by_node(flow: str, statuses: Sequence[FlowNodeStatus], now: dt.datetime) -> dict[str, int]:
    """The flow's completed count per node with a fresh report: what the next sample's rate starts from."""
    return {s.node: s.completed for s in statuses if s.flow == flow and fresh(s, now)}


def summarize(flows: Sequence[str], statuses: Sequence[FlowNodeStatus], hosts: Sequence[Host],
              letters: Mapping[str, int], now: dt.datetime,
              previous: Mapping[str, tuple[dt.datetime, Mapping[str, int]]] | None = None,
              deployed_ms: Mapping[str, int] | None = None) -> list[FlowLine]:
    """One line per flow. ``previous``: flow -> (when, completed per node) of the last sample, for the rate: summed
    over the nodes in both samples, each counted from its own figure (a node that went silent or restarted, its
    counter back to 0, neither drops nor spikes the rate). ``deployed_ms``: flow -> when its deployed version was
    written (epoch ms): a flow some node has not reported yet within ``STALE_S`` of that is starting, not degraded."""
    by_address = {h.address: h for h in hosts}
    out = []
    for flow in flows:
        mine = [s for s in statuses if s.flow == flow and fresh(s, now)]
        nodes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for h in hosts:
            nodes[h.dc][1] += 1
        for s in mine:
            nodes[by_address[s.node].dc if s.node in by_address else "?"][0] += 1
        completed = sum(s.completed for s in mine)
        rate = None
        if previous and flow in previous:
            when, before = previous[flow]
            seconds = (now - when).total_seconds()
            done = sum(max(0, s.completed - before[s.node]) for s in mine if s.node in before)
            rate = done / seconds if seconds > 0 else None
        states = {s.state for s in mine}
        missing = len(mine) < len(hosts)
        starting = (deployed_ms is not None and flow in deployed_ms
                    and (now - dt.datetime.utcfromtimestamp(deployed_ms[flow] / 1000)).total_seconds() <= STALE_S)
        state = (("starting" if starting else "degraded") if missing else
                 next((x for x in ("pausing", "resuming", "paused") if x in states), "running" if mine else "idle"))
        out.append(FlowLine(flow, state, sum(s.pending + s.active for s in mine), sum(s.backlog for s in mine),
                            max((s.oldest_pending_ms for s in mine), default=0), completed, rate,
                            letters.get(flow, 0), {dc: (r, e) for dc, (r, e) in nodes.items()}))
    return out


def duration(ms: int) -> str:
    """A lag as people read it: 0, 850ms, 12s, 4m05s, 2h10m."""
    if ms <= 0:
        return "0"
    if ms < 1000:
        return f"{ms}ms"
    s = ms // 1000
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def summary_text(lines: Sequence[FlowLine]) -> list[str]:
    """The at-a-glance table: within 100 columns for flow names up to 22 characters and two data centers."""
    out = [f"{'FLOW':<22} {'STATE':<9} {'PENDING':>7} {'BACKLOG':>7} {'LAG':>6} {'DONE/S':>7} {'DONE':>8} "
           f"{'DEAD':>5}  NODES"]
    for f in lines:
        rate = "-" if f.rate is None else f"{f.rate:.1f}"
        nodes = " ".join(f"{dc} {r}/{e}" for dc, (r, e) in sorted(f.nodes.items()))
        out.append(f"{f.flow:<22} {f.state:<9} {f.pending:>7} {f.backlog:>7} {duration(f.lag_ms):>6} {rate:>7} "
                   f"{f.completed:>8} {f.dead_letters:>5}  {nodes}")
    return out


def node_rows(flows: Sequence[str], statuses: Sequence[FlowNodeStatus], hosts: Sequence[Host],
              now: dt.datetime) -> list[dict]:
    """A row per flow and node the ring knows (and per node that reports without being known), not reporting ones
    included."""
    rows = []
    by_key = {(s.flow, s.node): s for s in statuses}
    addresses = sorted({h.address for h in hosts} | {s.node for s in statuses if s.flow in flows})
    host = {h.address: h for h in hosts}
    for flow in flows:
        for address in addresses:
            s, h = by_key.get((flow, address)), host.get(address)
            if s is None and h is None:
                continue
            row = {"flow": flow, "node": address, "dc": h.dc if h else "?", "rack": h.rack if h else "?"}
            if s is None or not fresh(s, now):
                age = None if s is None or s.updated is None else int((now - _naive(s.updated)).total_seconds())
                row.update(state="down" if h is not None and h.up is False else "not reporting",
                           last_report_s=age)
            else:   # every figure of the node's report (status.FlowNodeStatus), its lag under the summary's name
                row.update({k: v for k, v in s.as_dict().items() if k not in row}, lag_ms=s.oldest_pending_ms)
            rows.append(row)
    return rows


def node_text(rows: Iterable[dict]) -> list[str]:
    out = [f"{'FLOW':<20} {'NODE':<15} {'DC':<11} {'RACK':<6} {'STATE':<13} {'PENDING':>7} {'ACTIVE':>6} "
           f"{'BACKLOG':>7} {'LAG':>6}"]
    for r in rows:
        if "pending" in r:
            figures = f"{r['pending']:>7} {r['active']:>6} {r['backlog']:>7} {duration(r['lag_ms']):>6}"
        else:
            figures = ("no report" if r["last_report_s"] is None else f"last report {r['last_report_s']}s ago")
        out.append(f"{r['flow'][:20]:<20} {r['node'][:15]:<15} {r['dc'][:11]:<11} {r['rack'][:6]:<6} "
                   f"{r['state']:<13} {figures}")
    return out
