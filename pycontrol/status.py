"""Flow status per node, as each node's plugin reports it into async_triggers.flow_status."""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Mapping, Sequence

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from . import render
from .errors import ClusterError

COLUMNS = ("pending", "active", "completed", "failed", "retried", "oldest_pending_ms", "workers", "capacity",
           "spilled", "discarded", "recovered", "resumed", "abandoned", "fanout_rows")


@dataclasses.dataclass(frozen=True)
class NodeStatus:
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
    abandoned: int = 0      # dropped: their source write was never stored
    fanout_rows: int = 0    # rows written by fan-outs

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["updated"] = self.updated.isoformat() if self.updated else None
        return d


def from_row(row: Mapping) -> NodeStatus:
    """A status from a flow_status row (a mapping of column to value): a counter that is null (a node with an
    older plugin) or absent (a table from an older deploy) reads as 0."""
    return NodeStatus(flow=row["flow"], node=row["node"], updated=row.get("updated"),
                      **{c: row.get(c) or 0 for c in COLUMNS})


def read(session, flows: Sequence[str] | None = None) -> list[NodeStatus]:
    keyspace = session.cluster.metadata.keyspaces.get(render.KEYSPACE)
    table = keyspace.tables.get("flow_status") if keyspace is not None else None
    if table is None:
        return []
    present = [c for c in COLUMNS if c in table.columns]   # until a deploy adds the newer ones
    rows = session.execute(SimpleStatement(
        f'SELECT "flow", "node", {", ".join(render.ident(c) for c in present)}, "updated" '
        f'FROM {render.ident(render.KEYSPACE)}."flow_status"',
        consistency_level=ConsistencyLevel.ONE))
    out = [from_row(r._asdict()) for r in rows]
    if flows:
        out = [s for s in out if s.flow in flows]
    return sorted(out, key=lambda s: (s.flow, s.node))


def wait_drained(session, flows: Sequence[str], since: dt.datetime, timeout: float = 600.0,
                 poll: float = 1.0, progress=lambda _: None) -> list[NodeStatus]:
    """Wait until every node that reports the flows has nothing pending or active in a report newer than
    ``since`` (so the report was made after the last write we care about). Returns the final statuses."""
    deadline = time.monotonic() + timeout
    last = []
    while time.monotonic() < deadline:
        last = read(session, flows)
        fresh = [s for s in last if s.updated and s.updated.replace(tzinfo=None) > since.replace(tzinfo=None)]
        pending = sum(s.pending + s.active for s in fresh)
        if fresh and len(fresh) == len(last) and pending == 0:
            return last
        progress(f"waiting for queues to drain: {pending} pending/active on {len(fresh)}/{len(last)} fresh reports")
        time.sleep(poll)
    raise ClusterError(f"queues of {', '.join(flows)} did not drain within {timeout:.0f} s: "
                       + "; ".join(f"{s.node} pending={s.pending} active={s.active}" for s in last))
