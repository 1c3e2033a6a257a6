"""What `ctl trigger drop` would throw away, and what it does about it.

Dropping a flow drops its source table's backup map when no other flow uses the table: every task captured and not
yet run (queued, running, waiting for a retry, spilled, or waiting in a backup entry, paused flows' included) is gone
with it, and its dead letters name a flow that no longer exists. So a drop first reads what the flow still holds,
from each node's first report made after the drop began (async_triggers.flow_status; an older one may predate the
capture of a write acknowledged before the drop) and the dead letters, and goes on only when that is nothing, when
told to wait for it (``--drain``) or when told to discard it (``--discard-pending``, which says how much, purges the
flow's dead letters, and asks first unless ``--yes``). A node whose clock runs ahead of the control host's by more
than its report interval (2 s) can pass an older report for a fresh one.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Sequence

from . import dlq, status
from .errors import FlowNotEmpty

@dataclasses.dataclass(frozen=True)
class Holdings:
    """What a flow still holds: per node, its unfinished tasks as that node reported them (queued + running + live
    backup entries; a task waiting to run has a backup entry on each replica of its row, so these count copies, not
    distinct tasks), of which ``entries`` in backup entries; and its dead letters."""
    flow: str
    unfinished: dict[str, int]
    dead_letters: int
    paused: bool = False
    # nodes whose count is not known yet: they captured since their last scan of the backup maps, or are up and
    # have not reported the flow
    uncounted: tuple[str, ...] = ()
    # per node, how many of its unfinished ones are live backup entries
    entries: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def tasks(self) -> int:
        return sum(self.unfinished.values())

    @property
    def empty(self) -> bool:
        return self.tasks == 0 and self.dead_letters == 0 and not self.uncounted

    def describe(self) -> str:
        parts = []
        paused = "; the flow is paused" if self.paused else ""
        if self.tasks:
            nodes = ", ".join(f"{n} {self._of(n)}" for n, c in sorted(self.unfinished.items()) if c)
            copies = "; each replica of a task's row holds a backup entry of it" if self.backed_up else ""
            parts.append(f"{self.tasks} unfinished task(s) ({nodes}{copies}{paused})")
        if self.uncounted:
            parts.append(f"tasks not counted yet on {', '.join(self.uncounted)} (captured since its last scan, or "
                         f"no report)" + ("" if self.tasks else paused))
        if self.dead_letters:
            parts.append(f"{self.dead_letters} dead letter(s)")
        return " and ".join(parts) or "nothing"

    @property
    def backed_up(self) -> int:
        return sum(self.entries.values())

    def _of(self, node: str) -> str:
        entries, queued = self.entries.get(node, 0), self.unfinished[node] - self.entries.get(node, 0)
        said = ([f"{queued} queued or running"] if queued else []) + ([f"{entries} in backup entries"] if entries else [])
        return " + ".join(said)

    def as_dict(self) -> dict:
        return {"flow": self.flow, "unfinished_tasks": self.tasks, "by_node": dict(sorted(self.unfinished.items())),
                "backup_entries": self.backed_up,
                "uncounted_nodes": list(self.uncounted), "dead_letters": self.dead_letters, "paused": self.paused}


def holdings_of(flow: str, statuses: Sequence[status.FlowNodeStatus], dead_letters: int, paused: bool = False,
                live: Sequence[str] = ()) -> Holdings:
    mine = [s for s in statuses if s.flow == flow]
    unfinished = {s.node: s.pending + s.active + s.backlog for s in mine}
    uncounted = {s.node for s in mine if unfinished[s.node] == 0 and not s.settled()}
    uncounted |= set(live) - {s.node for s in mine}
    return Holdings(flow, unfinished, dead_letters, paused, tuple(sorted(uncounted)), {s.node: s.backlog for s in mine})


# how long a drop waits for every live node's next report of the flow (the plugin reports every 2 s)
FRESH_REPORT_WAIT_SECONDS = 10.0


def fresh_reports(read, live: Sequence[str], since: dt.datetime, wait: float = FRESH_REPORT_WAIT_SECONDS,
                  poll: float = 0.5, sleep=time.sleep, clock=time.monotonic) -> list[status.FlowNodeStatus]:
    """The reports ``read()`` returns that were made after ``since``, once every node of ``live`` has one or after
    ``wait`` seconds (a node without one is then not counted: holdings_of names it). A report made before a drop
    began may predate the capture of a write acknowledged before it, and would say nothing of that write's task."""
    deadline = clock() + wait
    while True:
        reports = status.made_after(read(), since)
        if set(live) <= {s.node for s in reports} or clock() >= deadline:
            return reports
        sleep(poll)


def read_holdings(session, flow: str, wait: float = FRESH_REPORT_WAIT_SECONDS) -> Holdings:
    """What the flow holds, from reports made after this call began (fresh_reports)."""
    since = dt.datetime.utcnow()
    live = sorted(status.live_nodes(session))
    reports = fresh_reports(lambda: status.read(session, [flow]), live, since, wait)
    # the dead letters at a quorum, never less: a count that may be short must not let a drop through
    return holdings_of(flow, reports, dlq.count(session, flow, strict=True), flow in status.paused_flows(session), live)


def refusal(holdings: Holdings) -> FlowNotEmpty:
    how = ("`--drain` waits for its tasks (resume it first: a paused flow runs none)" if holdings.paused
           else "`--drain` waits for its tasks")
    letters = ("; its dead letters stay until `ctl trigger dlq retry` or `purge`" if holdings.dead_letters else "")
    return FlowNotEmpty(f"flow '{holdings.flow}' still holds {holdings.describe()}: dropping it now throws them away "
                        f"with its backup map. {how}{letters}; `--discard-pending` drops it anyway")


def drain_then_check(session, flow: str, timeout: float, progress=lambda _: None) -> Holdings:
    """Wait until the flow's tasks are done everywhere (FlowPausedError at once if it is paused), then read again."""
    status.wait_drained(session, [flow], dt.datetime.utcnow(), timeout=timeout, progress=progress)
    return read_holdings(session, flow)
