"""The time to the last follower, by fan-out size: the report's headline ("until the last of a celebrity's followers
sees the tweet") measured under load, for authors of every size from one follower to a celebrity's.

Probe authors of each size (``Testbed.probe_authors``: users beyond the graph, each followed by the first ``size``
users of the graph) tweet in turn through the application's own request path, one probe at a time. After the
acknowledgement the probe reads the timeline row of the follower the fan-out writes last (the highest follower id:
a fan-out pages the followers table in clustering order) every 5 ms until it is there, then every timeline row of
the tweet (the author's and each follower's), and every 100 ms again the ones still missing, until none is: the time
to the last follower is when the sweep that found the last of them ended, an upper bound by at most one sweep. A
sweep reads its rows ``IN_GROUP`` partitions to a request (``user_id IN ?``: the coordinator reads them in
parallel), ``IN_FLIGHT`` requests at a time, each answered one sent next. Read a partition to a request, 32 at a
time and each 32 waiting for its slowest, a sweep of a celebrity's 10,000 rows took longer than the fan-out itself
under load (its sentinel was found 2.4 s after the tweet, its last follower 16.9 s: the sweep's own time). Reads at
ONE, as a follower's client reads its timeline; a request that fails counts as its rows not found, and is counted.

A celebrity's probe writes as many rows as its followers, so it runs only every ``celebrity_every``-th probe: the
probes' rows per second are reported beside the load's.
"""
from __future__ import annotations

import collections
import os
import statistics
import time
from typing import Callable, Mapping, Sequence

from async_triggers.benchmarks import results
from async_triggers.benchmarks.apps.tweets import Tweet
from async_triggers.benchmarks.harness.lag_probe import ProbeThread

IN_FLIGHT = 32       # requests of a sweep in flight
IN_GROUP = 100       # timeline partitions read by one request of a sweep
POLL_S = 0.005       # between reads of the sentinel's row
SWEEP_PAUSE_S = 0.1  # between sweeps of the rows still missing (a sweep of 10,000 rows is 100 requests)


def wait_all(found: Callable[[Sequence[int]], set[int]], users: Sequence[int], sentinel: int, give_up_at: float,
             clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
             at_sentinel: Callable[[], None] = lambda: None) -> tuple[float | None, float | None]:
    """(when the sentinel's row was first read, when the last of ``users``' rows was), by ``clock``; None for what
    was not there by ``give_up_at``. ``found(users)`` returns those of ``users`` whose row is there now;
    ``at_sentinel()`` is called once the sentinel's row is, before the sweeps."""
    sentinel_at = None
    while clock() < give_up_at:
        if found([sentinel]):
            sentinel_at = clock()
            at_sentinel()
            break
        sleep(POLL_S)
    if sentinel_at is None:
        return None, None
    missing = list(users)
    while True:
        present = found(missing)   # one sweep: each missing row read once
        missing = [u for u in missing if u not in present]
        now = clock()
        if not missing:
            return sentinel_at, now
        if now >= give_up_at:
            return sentinel_at, None
        sleep(SWEEP_PAUSE_S)


def found_rows(session, single, grouped, tweet_id, users: Sequence[int], group: int = IN_GROUP,
               in_flight: int = IN_FLIGHT) -> tuple[set[int], int]:
    """Which of ``users`` have ``tweet_id``'s timeline row, and how many requests failed (their users count as not
    found): ``single`` reads one user's row (``user_id = ?``), ``grouped`` up to ``group`` users' (``user_id IN ?``);
    ``in_flight`` requests at a time, the next sent as the oldest is answered."""
    found, failed, pending = set(), 0, collections.deque()

    def collect() -> None:
        nonlocal failed
        future = pending.popleft()
        try:
            found.update(row[0] for row in future.result())
        except Exception:  # noqa: BLE001 - not found this time; the next sweep reads them again
            failed += 1

    for i in range(0, len(users), group):
        part = list(users[i:i + group])
        if len(pending) >= in_flight:
            collect()
        pending.append(session.execute_async(single, (part[0], tweet_id)) if len(part) == 1
                       else session.execute_async(grouped, (part, tweet_id)))
    while pending:
        collect()
    return found, failed


def schedule(sizes: Sequence[int], celebrity_every: int) -> Callable[[int], int]:
    """The size of probe ``i``: the largest size every ``celebrity_every``-th probe, the others in turn between."""
    largest, others = max(sizes), sorted(s for s in sizes if s != max(sizes))

    def size(i: int) -> int:
        if not others or i % celebrity_every == celebrity_every - 1:
            return largest
        return others[(i - i // celebrity_every) % len(others)]
    return size


def stats(lags_ms: Sequence[float]) -> dict:
    """n, median, p99 (nearest rank: the largest below 100 probes, said so) and max, in ms."""
    ordered = sorted(lags_ms)
    if not ordered:
        return {"n": 0}
    return {"n": len(ordered), "median": round(statistics.median(ordered), 1),
            "p99": round(results.nearest_rank(ordered, 99), 1), "p99_is_max": len(ordered) < 100,
            "max": round(ordered[-1], 1)}


class FanoutLagProbe(ProbeThread):
    """The probe thread: ``authors`` maps a fan-out size to (author id, its followers' ids); ``submit`` writes a
    tweet through the application's request path. ``lags_ms`` holds the one-follower probes' times (what the other
    runs' lag columns are), ``by_size`` every size's. ``cpu()``, when given, is the CPU seconds the database nodes
    have used so far: ``busy_cores`` holds, per size, how many cores they kept busy from the acknowledgement to the
    sentinel's row (a fan-out that keeps every core busy waits for none: it is the machine's work)."""

    def __init__(self, session, keyspace: str, submit: Callable[[Tweet], None],
                 authors: Mapping[int, tuple[int, Sequence[int]]], celebrity_every: int = 10,
                 interval_s: float = 1.0, timeout_s: float = 120.0, cpu: Callable[[], float] | None = None):
        from cassandra import ConsistencyLevel
        self.session, self.submit, self.authors = session, submit, dict(authors)
        self.size_of = schedule(sorted(authors), celebrity_every)
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self.read = session.prepare(f'SELECT "user_id" FROM {keyspace}."timeline" WHERE "user_id" = ? '
                                    'AND "tweet_id" = ?')
        self.read_in = session.prepare(f'SELECT "user_id" FROM {keyspace}."timeline" WHERE "user_id" IN ? '
                                       'AND "tweet_id" = ?')
        for statement in (self.read, self.read_in):
            statement.consistency_level = ConsistencyLevel.ONE
        self.by_size: dict[int, list[float]] = {s: [] for s in self.authors}
        self.to_sentinel: dict[int, list[float]] = {s: [] for s in self.authors}
        self.timed_out: dict[int, int] = {s: 0 for s in self.authors}
        self.cpu = cpu
        self.busy_cores: dict[int, list[float]] = {s: [] for s in self.authors}
        self.rows_written = 0
        self.read_errors = 0
        self.sent = 0
        self.errors: list[str] = []
        self._start_thread("fanout-lag-probe")

    @property
    def lags_ms(self) -> list[float]:
        return self.by_size.get(min(self.authors), [])

    def _found(self, tweet: Tweet, users: Sequence[int]) -> set[int]:
        found, failed = found_rows(self.session, self.read, self.read_in, tweet.tweet_id, users)
        self.read_errors += failed
        return found

    def _cpu(self) -> float | None:
        """The nodes' CPU seconds so far; None without ``cpu``, or from the first time it fails (a node's process
        gone): a figure not taken, never a probe lost."""
        if self.cpu is None:
            return None
        try:
            return self.cpu()
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"the nodes' CPU could not be read ({e}): busy cores no longer measured")
            self.cpu = None
            return None

    def _loop(self) -> None:
        from cassandra.util import uuid_from_time
        i = 0
        while not self._stop.is_set():
            size = self.size_of(i)
            i += 1
            author, followers = self.authors[size]
            started = time.time()
            tweet = Tweet(uuid_from_time(started), author, f"probe {self.sent} of {size}", int(started * 1000))
            acked = self._send(tweet)
            if acked is None:
                continue
            self.rows_written += 1 + len(followers)
            users = [author, *followers]
            sentinel = max(followers) if followers else author
            cpu_at_ack, cpu_at_sentinel = self._cpu(), []
            seen, last = wait_all(lambda us: self._found(tweet, us), users, sentinel, acked + self.timeout_s,
                                  at_sentinel=lambda: cpu_at_sentinel.append(self._cpu()))
            if cpu_at_ack is not None and cpu_at_sentinel and cpu_at_sentinel[0] is not None and seen > acked:
                self.busy_cores[size].append((cpu_at_sentinel[0] - cpu_at_ack) / (seen - acked))
            if last is None:
                self.timed_out[size] += 1
            else:
                self.by_size[size].append((last - acked) * 1000)
                self.to_sentinel[size].append((seen - acked) * 1000)
            self._stop.wait(max(0.0, self.interval_s - (time.time() - started)))

    def summary(self, seconds: float) -> dict:
        """Per size: the time to the last follower and to the sentinel's row (ms), the nodes' busy cores until the
        sentinel (median; None without ``cpu``), probes that timed out; the machine's cores; the probes' rows per
        second over ``seconds``."""
        return {"by_size": {str(s): {**stats(self.by_size[s]), "to_sentinel": stats(self.to_sentinel[s]),
                                     "busy_cores": (round(statistics.median(self.busy_cores[s]), 2)
                                                    if self.busy_cores[s] else None),
                                     "timed_out": self.timed_out[s]} for s in sorted(self.authors)},
                "cores": os.cpu_count(),
                "probe_rows_s": round(self.rows_written / seconds, 1) if seconds > 0 else None,
                "read_errors": self.read_errors}
