"""The propagation-lag probe: ack -> the tweet's timeline rows are readable, through each application's own
request path; and its stand-in for the plain write, which has no propagation."""
from __future__ import annotations

import threading
import time
from typing import Callable

from async_triggers.benchmarks.apps.cassandra import SELECT_TIMELINE_ROW, SESSIONS, Target, retriable
from async_triggers.benchmarks.apps.tweets import Tweet


class ProbeThread:
    """A probe's thread: ``_loop`` runs until ``stop``, which waits up to ``timeout_s`` more for the probe under way."""
    timeout_s: float

    def _start_thread(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def _loop(self) -> None:
        raise NotImplementedError

    def start(self):
        self._thread.start()
        return self

    def _send(self, tweet: Tweet) -> float | None:
        """Writes the probe tweet; the time it was acknowledged, or None after a failure (counted, and an interval
        waited: the run goes on)."""
        try:
            self.submit(tweet)
        except Exception as e:  # noqa: BLE001 - counted, the run goes on
            self.errors.append(f"{type(e).__name__}: {e}")
            self._stop.wait(self.interval_s)
            return None
        self.sent += 1
        return time.time()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout_s + 5)


class LagProbe(ProbeThread):
    """Once per ``interval_s`` writes a probe tweet through the application's own request path (``submit``) by
    a probe author with one follower, then reads the two timeline rows at ONE until both are there: the lag is
    from the acknowledgement to both rows readable. The probes are real tweets (verified like the others)."""

    def __init__(self, target: Target, submit: Callable[[Tweet], None], author_id: int, follower_id: int,
                 interval_s: float = 1.0, timeout_s: float = 600.0):
        from cassandra import ConsistencyLevel
        self.target, self.submit, self.author_id, self.follower_id = target, submit, author_id, follower_id
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self.session = SESSIONS.get(target)
        self.read = self.session.prepare(SELECT_TIMELINE_ROW.format(ks=target.keyspace))
        self.read.consistency_level = ConsistencyLevel.ONE
        self.lags_ms: list[float] = []
        self.sent = 0
        self.errors: list[str] = []
        self._start_thread("lag-probe")

    def _seen(self, tweet: Tweet) -> bool:
        for user in (self.author_id, self.follower_id):
            try:
                if self.session.execute(self.read, (user, tweet.tweet_id)).one() is None:
                    return False
            except retriable():
                return False
        return True

    def _loop(self) -> None:
        from cassandra.util import uuid_from_time
        while not self._stop.is_set():
            started = time.time()
            tweet = Tweet(uuid_from_time(started), self.author_id, f"probe {self.sent}", int(started * 1000))
            acked = self._send(tweet)
            if acked is None:
                continue
            give_up = acked + self.timeout_s
            while not self._seen(tweet) and time.time() < give_up:
                time.sleep(0.005)
            self.lags_ms.append((time.time() - acked) * 1000)
            self._stop.wait(max(0.0, self.interval_s - (time.time() - started)))


class NoProbe:
    """The plain write has no propagation to probe."""
    sent = 0
    lags_ms: list = []
    errors: list = []

    def start(self) -> "NoProbe":
        return self

    def stop(self) -> None:
        pass
