"""Completed propagations, as each approach counts them, and when a run has drained.

- synchronous (and the plain write): a request is acknowledged after its timelines are written, so completion =
  acknowledgement;
- external queue: every worker appends ``tweet_id,done_at,rows`` after acknowledging a message (distinct tweets);
- integrated: the plugin's per-node ``completed`` counters in ``async_triggers.flow_status`` (every 2 s), summed
  over the nodes with a node's restart (counter back to 0) carried over; the run is drained when the count
  reached the acknowledged tweets and every node reports nothing pending or active.
"""
from __future__ import annotations

import datetime as dt
import math
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from async_triggers import status
from async_triggers.benchmarks import results
from async_triggers.benchmarks.apps.external_queue import DEFAULT_QUEUE, queue_depth
from async_triggers.benchmarks.harness.config import FLOW, PLAIN

ACKED_IS_DONE = ("synchronous", PLAIN)   # the approaches whose acknowledgement is the completed propagation


class Completions:
    """Samples a cumulative count of completed propagations (and timeline rows) once per ``interval_s``."""

    def __init__(self, read: Callable[[], tuple[int, int]], interval_s: float = 1.0):
        self.read, self.interval_s = read, interval_s
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="completions", daemon=True)
        self.errors = 0

    def sample(self) -> tuple[float, int, int]:
        done, rows = self.read()
        # a counter that knows when its count was true (flow_status rows carry their report time) says so
        s = (getattr(self.read, "as_of", None) or time.time(), done, rows)
        self.samples.append(s)
        return s

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - a failed poll (a node down) only thins the series
                self.errors += 1

    def start(self) -> "Completions":
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def first_reaching(self, count: int) -> float | None:
        return next((t for t, done, _ in self.samples if done >= count), None)


class FlowCounters:
    """The integrated flow's completed tasks and timeline rows over every node, from flow_status, as counts since
    construction; a node whose counter went down restarted: its last value is carried over."""

    def __init__(self, session):
        self.session = session
        self.base: dict[str, tuple[int, int]] = {}
        self.carried: dict[str, tuple[int, int]] = {}
        self.last: dict[str, tuple[int, int]] = {}
        self.as_of: float | None = None     # the newest report's time, when the counts were true
        # per node, its reports: (report time, its completed tasks since construction), for done_at
        self.history: dict[str, list[tuple[float, int]]] = {}
        for s in status.read(session, [FLOW]):
            self.base[s.node] = (s.completed, s.fanout_rows + s.completed)
            self.last[s.node] = self.base[s.node]

    def __call__(self) -> tuple[int, int]:
        statuses = status.read(self.session, [FLOW])
        self.as_of = max((_epoch(s.updated) for s in statuses if s.updated), default=None)
        for s in statuses:
            now = (s.completed, s.fanout_rows + s.completed)
            prev = self.last.get(s.node, (0, 0))
            if now[0] < prev[0]:    # restarted: its counters began again at 0
                c = self.carried.get(s.node, (0, 0))
                self.carried[s.node] = (c[0] + prev[0], c[1] + prev[1])
            self.last[s.node] = now
            if s.updated:
                done = now[0] + self.carried.get(s.node, (0, 0))[0] - self.base.get(s.node, (0, 0))[0]
                reports = self.history.setdefault(s.node, [])
                if not reports or _epoch(s.updated) > reports[-1][0]:
                    reports.append((_epoch(s.updated), done))
        done = rows = 0
        for node, (c, r) in self.last.items():
            b, k = self.base.get(node, (0, 0)), self.carried.get(node, (0, 0))
            done += c + k[0] - b[0]
            rows += r + k[1] - b[1]
        return done, rows

    def done_at(self, at: float) -> int:
        """The tasks completed by ``at`` (epoch s) over every node: each node's last report before ``at`` carried on
        at the rate of its reports before (a node reports every 2 s, at its own moments; ``carried``)."""
        total = 0.0
        for reports in self.history.values():
            total += carried(reports, at)
        return int(total)

    def idle(self, since: float) -> bool:
        """Every node reported after ``since`` (epoch s) with nothing pending or active."""
        statuses = status.read(self.session, [FLOW])
        fresh = [s for s in statuses if s.updated and _epoch(s.updated) > since]
        return bool(statuses) and len(fresh) == len(statuses) and sum(s.pending + s.active for s in fresh) == 0


def interpolated(points: Sequence[tuple[float, int]], at: float) -> float:
    """The cumulative count of ``points`` ((time, count), ascending) at ``at``: linear between the points around it,
    0 before the first, the last count after the last."""
    if not points or at < points[0][0]:
        return 0.0
    for (t0, c0), (t1, c1) in zip(points, points[1:]):
        if t0 <= at < t1:
            return c0 + (c1 - c0) * (at - t0) / (t1 - t0)
    return float(points[-1][1])


def carried(points: Sequence[tuple[float, int]], at: float) -> float:
    """The cumulative count of ``points`` ((time, count), ascending) at ``at``: the last point before it carried on
    at the rate between that point and the one before, never past the next point's count. Not the line to the next
    point: when ``at`` is the load's end, the next report counts little after it, and the line would take from ``at``
    what was done before it (up to half a report interval's work)."""
    before = [p for p in points if p[0] <= at]
    if not before:
        return 0.0
    t0, c0 = before[-1]
    after = points[len(before)] if len(before) < len(points) else None
    if len(before) < 2:
        return interpolated(points, at)
    tp, cp = before[-2]   # earlier: a node's reports are kept only when newer than its last
    estimate = c0 + (c0 - cp) / (t0 - tp) * (at - t0)
    return min(estimate, float(after[1])) if after is not None else float(c0)


def done_by(app: str, records: Sequence, counters: "FlowCounters | None", done_files: Sequence[Path],
            at: float) -> int:
    """The propagations completed by ``at`` (epoch s), as the approach counts them (the integrated flow's include
    the lag probe's tweets)."""
    if app in ACKED_IS_DONE:
        return sum(1 for r in records if r.status == "ok" and r.acked is not None and r.acked <= at)
    if app == "external_queue":
        return sum(1 for t, _ in DoneFiles(done_files).entries().values() if t <= at)
    return counters.done_at(at)


def _epoch(when: dt.datetime) -> float:
    """Cassandra's timestamps come back naive, in UTC."""
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


class DoneFiles:
    """The external queue's completions: the workers' ``tweet_id,done_at,rows`` files (distinct tweets)."""

    def __init__(self, paths: Sequence[Path]):
        self.paths = list(paths)

    def entries(self) -> dict[str, tuple[float, int]]:
        seen: dict[str, tuple[float, int]] = {}
        for path in self.paths:
            if not path.exists():
                continue
            for line in path.read_text().splitlines():
                parts = line.split(",")
                if len(parts) == 3 and parts[0] not in seen:
                    seen[parts[0]] = (float(parts[1]), int(parts[2]))
        return seen

    def __call__(self) -> tuple[int, int]:
        e = self.entries()
        return len(e), sum(rows for _, rows in e.values())


def wait_drained(app: str, records: Sequence, completions: Completions | None, counters: FlowCounters | None,
                 expected: int, end_of_load: float, *, timeout_s: float, queue_url: str | None,
                 progress: Callable[[str], None]) -> tuple[float | None, bool]:
    """When every propagation of the run completed (epoch s), or None after ``timeout_s``; and whether."""
    if app in ACKED_IS_DONE:
        acks = [r.acked for r in records if r.acked is not None]
        return (max(acks) if acks else end_of_load), True
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        t, done, _ = completions.sample()
        if done >= expected:
            if app == "external_queue" and queue_depth(queue_url, DEFAULT_QUEUE) == 0:
                return t, True
            if app == "integrated" and counters.idle(since=end_of_load):
                return completions.first_reaching(expected) or t, True
        time.sleep(1.0)
    progress(f"  not drained within {timeout_s:.0f} s: "
             f"{completions.samples[-1][1]} of {expected} propagations completed")
    return None, False


def propagated_per_bucket(app: str, records: Sequence, completions: Completions | None, done_files: Sequence[Path],
                          start: float, duration: float) -> list[float]:
    """Completed propagations per 3-s bucket, as long as the run's time series."""
    bucket = results.BUCKET_S
    acks = [r.acked for r in records if r.status == "ok"]
    if app in ACKED_IS_DONE:
        times = acks
    elif app == "external_queue":
        times = [t for t, _ in DoneFiles(done_files).entries().values()]
    else:
        times = []
        prev = 0
        for t, done, _ in completions.samples:   # spread each sample's increase over its interval
            times.extend([t] * max(0, done - prev))
            prev = max(prev, done)
    end = max([start + duration, *[r.acked for r in records if r.acked is not None]])
    n = max(1, math.ceil((end - start) / bucket))
    counts = [0] * n
    for t in times:
        i = int((t - start) // bucket)
        if 0 <= i < n:
            counts[i] += 1
    return [c / bucket for c in counts]
