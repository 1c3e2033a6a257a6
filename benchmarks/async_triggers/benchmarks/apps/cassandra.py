"""The three applications' Cassandra side: the tweet store and the fan-out writer.

Every write is at the run's write consistency (ALL, as in the report) and every read at its read consistency
(ONE). A failed write is retried with backoff for up to ``retry_s`` seconds before the request fails, which is
what the report's failure model asks of the application (§3.3, §4.3: "write missing items again and rely on
idempotent writes"): a request that fails for good after its tweet may already be stored would otherwise leave a
tweet without its propagation. The timeline rows are keyed by (user, tweet), so a retried write is idempotent.

Sessions are per process and per target (a Spark Python worker or a queue worker opens one and every sender
thread shares it); the factories are frozen dataclasses so that they pickle to the Spark tasks.
"""
from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from typing import Callable, Iterable, Sequence

from async_triggers.benchmarks.apps.tweets import Tweet
from async_triggers.benchmarks.errors import BenchError

KEYSPACE = "twitter_report"   # the report's tables (harness.twitter_example.REPORT_TABLES)
INSERT_TWEET = 'INSERT INTO {ks}."tweets" ("tweet_id", "author_id", "body", "created_at") VALUES (?, ?, ?, ?)'
INSERT_TIMELINE = ('INSERT INTO {ks}."timeline" ("user_id", "tweet_id", "author_id", "body", "created_at") '
                   "VALUES (?, ?, ?, ?, ?)")
SELECT_FOLLOWERS = 'SELECT "follower_id" FROM {ks}."followers" WHERE "user_id" = ?'
SELECT_TIMELINE_ROW = 'SELECT "tweet_id" FROM {ks}."timeline" WHERE "user_id" = ? AND "tweet_id" = ?'
DEFAULT_RETRY_S = 60.0
DEFAULT_CONCURRENCY = 64
FOLLOWERS_PAGE = 5000


@dataclasses.dataclass(frozen=True)
class Target:
    """Where and how the benchmark writes: contact points, consistency levels, how long a failed write is
    retried, how many timeline writes a fan-out keeps in flight."""
    contact_points: tuple[str, ...]
    port: int = 9042
    keyspace: str = KEYSPACE
    write_consistency: str = "ALL"
    read_consistency: str = "ONE"
    retry_s: float = DEFAULT_RETRY_S
    concurrency: int = DEFAULT_CONCURRENCY
    # auth, TLS, local DC (async_triggers.connection); None: from the ASYNC_TRIGGERS_* environment and cqlshrc,
    # which is how a queue worker process gets them (worker_env)
    connection: object = None

    def __post_init__(self):
        from cassandra import ConsistencyLevel
        for what in ("write_consistency", "read_consistency"):
            if getattr(self, what) not in ConsistencyLevel.name_to_value:
                raise BenchError(f"'{what}' must be a Cassandra consistency level, found: {getattr(self, what)!r}")
        if not self.contact_points:
            raise BenchError("'contact_points' must name at least one Cassandra node")
        if self.concurrency < 1:
            raise BenchError(f"'concurrency' must be strictly positive, found: {self.concurrency}")

    def level(self, what: str) -> int:
        from cassandra import ConsistencyLevel
        return ConsistencyLevel.name_to_value[getattr(self, what)]


class _Sessions:
    """One driver session per (process, target), made on first use."""

    def __init__(self):
        self._lock = threading.Lock()
        self._made: dict[Target, object] = {}

    def get(self, target: Target):
        with self._lock:
            session = self._made.get(target)
            if session is None:
                cluster = _connection_of(target)
                session = cluster.connect()
                session.default_timeout = 30
                self._made[target] = session
            return session

    def close_all(self) -> None:
        with self._lock:
            for session in self._made.values():
                session.cluster.shutdown()
            self._made.clear()


def _connection_of(target: Target):
    """A driver Cluster for ``target``: its hosts and port with the connection's auth and TLS."""
    from async_triggers import connection as connection_mod, connection_clients
    conn = target.connection
    if conn is None:
        conn = connection_mod.resolve({"port": target.port})
    conn = connection_mod.with_password(connection_mod.with_hosts(conn, target.contact_points, target.port))
    return connection_clients.make_cluster(conn, **({} if conn.protocol_version else {"protocol_version": 5}))


SESSIONS = _Sessions()


def retriable() -> tuple[type, ...]:
    from cassandra import OperationTimedOut, ReadTimeout, Unavailable, WriteFailure, WriteTimeout
    from cassandra.cluster import NoHostAvailable
    return Unavailable, WriteTimeout, WriteFailure, ReadTimeout, OperationTimedOut, NoHostAvailable


def retrying(fn: Callable[[], object], retry_s: float, what: str, first_error: BaseException | None = None):
    """Call ``fn`` until it succeeds, retrying Cassandra's transient errors with backoff (0.05 s doubling to 1 s)
    for up to ``retry_s`` seconds; then raise the last error, saying what was being written."""
    transient = retriable()
    deadline = time.monotonic() + retry_s
    backoff, last = 0.05, first_error
    attempts = 0 if first_error is None else 1
    while True:
        if last is not None:
            if time.monotonic() + backoff > deadline:
                raise BenchError(f"{what} failed after {attempts} attempts in {retry_s:.0f} s: "
                                 f"{type(last).__name__}: {last}") from last
            time.sleep(backoff)
            backoff = min(1.0, backoff * 2)
        try:
            return fn()
        except transient as e:
            last, attempts = e, attempts + 1


class _RetryingWrite:
    """A write in flight: ``result()`` waits for it and, if it failed, writes again until it succeeds."""

    def __init__(self, session, statement, values, retry_s: float, what: str):
        self.session, self.statement, self.values, self.retry_s, self.what = session, statement, values, retry_s, what
        self.future = session.execute_async(statement, values)

    def result(self):
        try:
            return self.future.result()
        except retriable() as e:
            return retrying(lambda: self.session.execute(self.statement, self.values), self.retry_s, self.what, e)


_RETRIES = None
_RETRIES_LOCK = threading.Lock()
RETRY_THREADS = 16


def _retry_pool():
    """The threads that retry failed asynchronous writes (a write that failed is rare: a fault, an overload): the
    request path stays asynchronous and a retry blocks one of these, never the dispatcher or the driver's I/O."""
    global _RETRIES
    with _RETRIES_LOCK:
        if _RETRIES is None:
            from concurrent.futures import ThreadPoolExecutor
            _RETRIES = ThreadPoolExecutor(RETRY_THREADS, thread_name_prefix="bench-retry")
        return _RETRIES


def execute_then(session, statement, values, retry_s: float, what: str,
                 done: Callable[[BaseException | None], None]) -> None:
    """Start the write and return; ``done(None)`` once it is written (retried as :func:`retrying` does when it
    failed with a transient error), ``done(error)`` when it finally failed."""
    def failed(e: BaseException) -> None:
        if not isinstance(e, retriable()):
            done(e)
            return

        def again() -> None:
            try:
                retrying(lambda: session.execute(statement, values), retry_s, what, e)
            except BaseException as last:  # noqa: BLE001 - handed to the request's answer
                done(last)
            else:
                done(None)
        _retry_pool().submit(again)

    future = session.execute_async(statement, values)
    future.add_callbacks(lambda _rows: done(None), failed)


class CassandraTweetStore:
    """The target keyspace's ``tweets`` at its write consistency."""

    def __init__(self, target: Target):
        self.target = target
        self.session = SESSIONS.get(target)
        self.insert = self.session.prepare(INSERT_TWEET.format(ks=target.keyspace))
        self.insert.consistency_level = target.level("write_consistency")

    def write_tweet_async(self, tweet: Tweet) -> _RetryingWrite:
        values = (tweet.tweet_id, tweet.author_id, tweet.body, tweet.created_at_ms)
        return _RetryingWrite(self.session, self.insert, values, self.target.retry_s, f"tweet {tweet.tweet_id}")

    def write_tweet_then(self, tweet: Tweet, done: Callable[[BaseException | None], None]) -> None:
        """The tweet written asynchronously: ``done`` is called with None or the error (see :func:`execute_then`)."""
        values = (tweet.tweet_id, tweet.author_id, tweet.body, tweet.created_at_ms)
        execute_then(self.session, self.insert, values, self.target.retry_s, f"tweet {tweet.tweet_id}", done)


class CassandraFanOut:
    """Writes a tweet to its author's timeline and to every follower's (read at the read consistency, written at
    the write consistency, ``concurrency`` writes in flight); failed rows are written again."""

    def __init__(self, target: Target):
        self.target = target
        self.session = SESSIONS.get(target)
        self.insert = self.session.prepare(INSERT_TIMELINE.format(ks=target.keyspace))
        self.insert.consistency_level = target.level("write_consistency")
        self.followers = self.session.prepare(SELECT_FOLLOWERS.format(ks=target.keyspace))
        self.followers.consistency_level = target.level("read_consistency")
        self.followers.fetch_size = FOLLOWERS_PAGE

    def follower_ids(self, author_id: int) -> list[int]:
        rows = retrying(lambda: list(self.session.execute(self.followers, (author_id,))), self.target.retry_s,
                        f"reading the followers of user {author_id}")
        return [r.follower_id for r in rows]

    def fan_out(self, tweet: Tweet) -> int:
        users = [tweet.author_id, *self.follower_ids(tweet.author_id)]
        write_rows(self.session, self.insert, ((u, tweet.tweet_id, tweet.author_id, tweet.body, tweet.created_at_ms) for u in users),
                   self.target.concurrency, self.target.retry_s, f"the timelines of tweet {tweet.tweet_id}")
        return len(users)


def write_rows(session, statement, rows: Iterable[Sequence], concurrency: int, retry_s: float, what: str) -> int:
    """Write ``rows`` with ``concurrency`` in flight; the rows that failed are written again (with backoff) until
    they succeed or ``retry_s`` has passed. Returns the number of rows."""
    from cassandra.concurrent import execute_concurrent_with_args
    pending = list(rows)
    deadline = time.monotonic() + retry_s
    backoff = 0.05
    total = len(pending)
    while pending:
        results = execute_concurrent_with_args(session, statement, pending, concurrency=concurrency,
                                               raise_on_first_error=False)
        failed = [(row, r.result_or_exc) for row, r in zip(pending, results) if not r.success]
        if not failed:
            return total
        first = failed[0][1]
        if not isinstance(first, retriable()) or time.monotonic() + backoff > deadline:
            raise BenchError(f"writing {what} failed for {len(failed)} of {total} rows: "
                             f"{type(first).__name__}: {first}") from first
        time.sleep(backoff)
        backoff = min(1.0, backoff * 2)
        pending = [row for row, _ in failed]
    return total


# -- factories (picklable: they travel to Spark tasks and are named on the worker's command line) ----------------
@dataclasses.dataclass(frozen=True)
class StoreFactory:
    target: Target

    def __call__(self, _slot=None) -> CassandraTweetStore:
        return CassandraTweetStore(self.target)


@dataclasses.dataclass(frozen=True)
class FanOutFactory:
    target: Target

    def __call__(self, _slot=None) -> CassandraFanOut:
        return CassandraFanOut(self.target)


def worker_env(target: Target) -> dict[str, str]:
    """The environment of a queue worker process: the connection's options, the password among them (never in the
    worker's argv)."""
    from async_triggers import connection as connection_mod
    conn = target.connection if target.connection is not None else connection_mod.resolve({"port": target.port})
    return connection_mod.child_env(connection_mod.with_password(conn))


def fanout_writer(contact_points: str, port: str = "9042", write_consistency: str = "ALL", read_consistency: str = "ONE",
                  concurrency: str = str(DEFAULT_CONCURRENCY), retry_s: str = str(DEFAULT_RETRY_S),
                  keyspace: str = KEYSPACE) -> CassandraFanOut:
    """The external queue worker's writer, from ``--writer-arg`` strings."""
    target = Target(tuple(h for h in contact_points.split(",") if h), port=int(port), keyspace=keyspace,
                    write_consistency=write_consistency, read_consistency=read_consistency,
                    concurrency=int(concurrency), retry_s=float(retry_s))
    return CassandraFanOut(target)


def worker_args(target: Target) -> list[str]:
    """The ``--writer``/``--writer-arg`` options that make :func:`fanout_writer` write to ``target``."""
    args = {"contact_points": ",".join(target.contact_points), "port": str(target.port), "write_consistency": target.write_consistency,
            "read_consistency": target.read_consistency, "concurrency": str(target.concurrency),
            "retry_s": str(target.retry_s), "keyspace": target.keyspace}
    return ["--writer", "async_triggers.benchmarks.apps.cassandra:fanout_writer",
            *itertools.chain.from_iterable(("--writer-arg", f"{k}={v}") for k, v in args.items())]
