"""The three applications' Cassandra side: the tweet store, the fan-out writer, the plain bulk writer.

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
import uuid
from typing import Callable, Iterable, Sequence

from async_triggers.benchmarks.apps.tweets import Tweet
from async_triggers.benchmarks.errors import BenchError

INSERT_TWEET = 'INSERT INTO {ks}."tweets" ("tweet_id", "author_id", "body", "created_at") VALUES (?, ?, ?, ?)'
INSERT_TIMELINE = ('INSERT INTO {ks}."timeline" ("user_id", "tweet_id", "author_id", "body") '
                   "VALUES (?, ?, ?, ?)")
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
    keyspace: str = "twitter"
    write_consistency: str = "ALL"
    read_consistency: str = "ONE"
    retry_s: float = DEFAULT_RETRY_S
    concurrency: int = DEFAULT_CONCURRENCY

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
                from cassandra.cluster import Cluster
                from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
                cluster = Cluster(list(target.contact_points), port=target.port, connect_timeout=10,
                                  load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
                                  protocol_version=5)
                session = cluster.connect()
                session.default_timeout = 30
                self._made[target] = session
            return session

    def close_all(self) -> None:
        with self._lock:
            for session in self._made.values():
                session.cluster.shutdown()
            self._made.clear()


SESSIONS = _Sessions()


def _retriable() -> tuple[type, ...]:
    from cassandra import OperationTimedOut, ReadTimeout, Unavailable, WriteFailure, WriteTimeout
    from cassandra.cluster import NoHostAvailable
    return Unavailable, WriteTimeout, WriteFailure, ReadTimeout, OperationTimedOut, NoHostAvailable


def retrying(fn: Callable[[], object], retry_s: float, what: str, first_error: BaseException | None = None):
    """Call ``fn`` until it succeeds, retrying Cassandra's transient errors with backoff (0.05 s doubling to 1 s)
    for up to ``retry_s`` seconds; then raise the last error, saying what was being written."""
    retriable = _retriable()
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
        except retriable as e:
            last, attempts = e, attempts + 1


class _RetryingWrite:
    """A write in flight: ``result()`` waits for it and, if it failed, writes again until it succeeds."""

    def __init__(self, session, statement, values, retry_s: float, what: str):
        self.session, self.statement, self.values, self.retry_s, self.what = session, statement, values, retry_s, what
        self.future = session.execute_async(statement, values)

    def result(self):
        try:
            return self.future.result()
        except _retriable() as e:
            return retrying(lambda: self.session.execute(self.statement, self.values), self.retry_s, self.what, e)


class CassandraTweetStore:
    """``twitter.tweets`` at the target's write consistency."""

    def __init__(self, target: Target):
        self.target = target
        self.session = SESSIONS.get(target)
        self.insert = self.session.prepare(INSERT_TWEET.format(ks=target.keyspace))
        self.insert.consistency_level = target.level("write_consistency")

    def write_tweet_async(self, tweet: Tweet) -> _RetryingWrite:
        values = (tweet.tweet_id, tweet.author_id, tweet.body, tweet.created_at_ms)
        return _RetryingWrite(self.session, self.insert, values, self.target.retry_s, f"tweet {tweet.tweet_id}")


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
        write_rows(self.session, self.insert, ((u, tweet.tweet_id, tweet.author_id, tweet.body) for u in users),
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
        if not isinstance(first, _retriable()) or time.monotonic() + backoff > deadline:
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


def fanout_writer(contact_points: str, write_consistency: str = "ALL", read_consistency: str = "ONE",
                  concurrency: str = str(DEFAULT_CONCURRENCY), retry_s: str = str(DEFAULT_RETRY_S),
                  keyspace: str = "twitter") -> CassandraFanOut:
    """The external queue worker's writer, from ``--writer-arg`` strings."""
    target = Target(tuple(h for h in contact_points.split(",") if h), keyspace=keyspace,
                    write_consistency=write_consistency, read_consistency=read_consistency,
                    concurrency=int(concurrency), retry_s=float(retry_s))
    return CassandraFanOut(target)


def worker_args(target: Target) -> list[str]:
    """The ``--writer``/``--writer-arg`` options that make :func:`fanout_writer` write to ``target``."""
    args = {"contact_points": ",".join(target.contact_points), "write_consistency": target.write_consistency,
            "read_consistency": target.read_consistency, "concurrency": str(target.concurrency),
            "retry_s": str(target.retry_s), "keyspace": target.keyspace}
    return ["--writer", "async_triggers.benchmarks.cassandra_io:fanout_writer",
            *itertools.chain.from_iterable(("--writer-arg", f"{k}={v}") for k, v in args.items())]


# -- the hardware's limit: a plain client writing timeline rows, no flow -------------------------------------------
@dataclasses.dataclass(frozen=True)
class BulkWriter:
    """Writes synthetic timeline rows for ``seconds`` with the target's concurrency, as fast as the cluster takes
    them; returns (rows written, seconds taken). Each Spark task writes to its own user range."""
    target: Target
    seconds: float
    users: int = 100_000

    def __call__(self, task: int) -> tuple[int, float]:
        from cassandra.concurrent import execute_concurrent_with_args
        session = SESSIONS.get(self.target)
        insert = session.prepare(INSERT_TIMELINE.format(ks=self.target.keyspace))
        insert.consistency_level = self.target.level("write_consistency")
        started = time.monotonic()
        deadline = started + self.seconds
        body = "b" * 200
        rows = 0
        batch = 2000
        while time.monotonic() < deadline:
            params = [((task * 7919 + rows + i) % self.users + 1, uuid.uuid1(), 0, body) for i in range(batch)]
            results = execute_concurrent_with_args(session, insert, params, concurrency=self.target.concurrency,
                                                   raise_on_first_error=False)
            rows += sum(1 for r in results if r.success)
        return rows, time.monotonic() - started


def bulk_write(spark, target: Target, seconds: float, partitions: int) -> dict:
    """Run :class:`BulkWriter` as ``partitions`` Spark tasks at once; timeline rows per second in total."""
    writer = BulkWriter(target, seconds)
    got = spark.sparkContext.parallelize(range(partitions), partitions) \
        .map(lambda task: writer(task)).collect()
    rows = sum(r for r, _ in got)
    elapsed = max(s for _, s in got)
    return {"rows": rows, "seconds": round(elapsed, 3), "rows_s": round(rows / elapsed, 2)}


def connector_write(spark, target: Target, rows: int, partitions: int, concurrency: int = 64) -> dict:
    """The JVM's bulk writer: ``rows`` synthetic timeline rows written by the Spark Cassandra Connector
    (asynchronous writes, ``concurrency`` in flight per task, the target's write consistency); rows per second."""
    from pyspark.sql import functions as F
    from async_triggers.spark_jobs.session import CASSANDRA_FORMAT
    # a timeuuid column takes version-1 UUIDs only: made from the row number (as the time) and its hash (node)
    tweet_id = F.expr("concat(lpad(hex(id % 4294967296), 8, '0'), '-', lpad(hex((id div 4294967296) % 65536), 4, "
                      "'0'), '-11f1-8', substr(md5(cast(id as string)), 1, 3), '-', "
                      "substr(md5(cast(id as string)), 4, 12))")
    df = spark.range(0, rows, numPartitions=partitions).select(
        (F.col("id") % 100_000 + 1).alias("user_id"), tweet_id.alias("tweet_id"),
        F.lit(0).cast("long").alias("author_id"), F.lit("b" * 200).alias("body"))
    started = time.monotonic()
    df.write.format(CASSANDRA_FORMAT).options(keyspace=target.keyspace, table="timeline").option(
        "spark.cassandra.output.consistency.level", target.write_consistency).option(
        "spark.cassandra.output.concurrent.writes", str(concurrency)).mode("append").save()
    elapsed = time.monotonic() - started
    return {"rows": rows, "seconds": round(elapsed, 3), "rows_s": round(rows / elapsed, 2)}


# -- propagation probes: ack -> the tweet's timeline rows are readable ---------------------------------------------
class LagProbe:
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
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lag-probe", daemon=True)

    def start(self) -> "LagProbe":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout_s + 5)

    def _seen(self, tweet: Tweet) -> bool:
        for user in (self.author_id, self.follower_id):
            try:
                if self.session.execute(self.read, (user, tweet.tweet_id)).one() is None:
                    return False
            except _retriable():
                return False
        return True

    def _loop(self) -> None:
        from cassandra.util import uuid_from_time
        while not self._stop.is_set():
            started = time.time()
            tweet = Tweet(uuid_from_time(started), self.author_id, f"probe {self.sent}", int(started * 1000))
            try:
                self.submit(tweet)
            except Exception as e:  # noqa: BLE001 - counted, the run goes on
                self.errors.append(f"{type(e).__name__}: {e}")
                self._stop.wait(self.interval_s)
                continue
            self.sent += 1
            acked = time.time()
            give_up = acked + self.timeout_s
            while not self._seen(tweet) and time.time() < give_up:
                time.sleep(0.005)
            self.lags_ms.append((time.time() - acked) * 1000)
            self._stop.wait(max(0.0, self.interval_s - (time.time() - started)))
