"""What a chaos run writes, and the clients that write it.

Four flows: ``chaos_timeline`` (a tweet to its author's timeline, a direct write, and through a fan-out that follows
the follows to every follower's), ``chaos_copy`` (tweets to tweets_copy), ``chaos_by_author``, whose source is
chaos_copy's target (a cascade), and ``chaos_counts`` (each author's tweet count, an aggregate). The follower graph is
a power law with one celebrity of ``celebrity_followers`` followers; during a run users of its own (ids ``id_base`` +
n) follow authors, the celebrity among them, and half of them unfollow again before the load ends.

A run's inputs depend on the workload seed only, so every run of a campaign writes the same logical operations;
each run uses its own tweet and follower ids (``id_base`` + n), so runs never touch each other's rows and nothing is
truncated; the follows a run keeps are removed after its check. The operations of one tweet or one follower are
written in order by one client thread; a failed write is retried with a new timestamp (the driver's client-side
timestamps) until it succeeds or the retry budget is spent.
"""
from __future__ import annotations

import dataclasses
import random
import threading
import time
from typing import Callable, Sequence

KEYSPACE = "chaos"
FLOWS = ("chaos_timeline", "chaos_copy", "chaos_by_author", "chaos_counts")
DRAINED = FLOWS + ("chaos_timeline_follows",)   # and the companion that follows the follows (docs/design.md)
SOURCES = {"chaos_timeline": "tweets", "chaos_copy": "tweets", "chaos_by_author": "tweets_copy",
           "chaos_counts": "tweets"}   # flow -> its source
# tables a run's checker compares with the reference run's, with the column holding the tweet id (the counts are
# the campaign's so far, not the run's: verified whole, not compared)
TABLES = (("tweets", "tweet_id"), ("tweets_copy", "tweet_id"), ("timeline", "tweet_id"), ("by_author", "tweet_id"))
RUN_IDS = {"timeline": ("user_id",)}   # other columns that hold a run's ids: its own followers
ID_STRIDE = 10_000_000   # tweet ids of run r: r * ID_STRIDE + n


def schema_cql(replication_factor: int) -> str:
    return f"""
CREATE KEYSPACE IF NOT EXISTS {KEYSPACE}
  WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {replication_factor}}};
CREATE TABLE IF NOT EXISTS {KEYSPACE}.followers (user_id bigint, follower_id bigint, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS {KEYSPACE}.tweets (tweet_id bigint PRIMARY KEY, author_id bigint, body text);
CREATE TABLE IF NOT EXISTS {KEYSPACE}.timeline (user_id bigint, tweet_id bigint, author_id bigint, body text,
  PRIMARY KEY (user_id, tweet_id));
CREATE TABLE IF NOT EXISTS {KEYSPACE}.tweets_copy (tweet_id bigint PRIMARY KEY, author_id bigint, body text);
CREATE TABLE IF NOT EXISTS {KEYSPACE}.by_author (author_id bigint, tweet_id bigint, body text,
  PRIMARY KEY (author_id, tweet_id));
CREATE TABLE IF NOT EXISTS {KEYSPACE}.tweet_counts (author_id bigint PRIMARY KEY, tweets bigint);
"""


FLOW_FILE = f'''
from async_triggers.flows import Aggregate, FanOut, Flow, Queue, Write, row, source

TWEET = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)
FLOWS = [
    Flow(name="chaos_timeline", source="{KEYSPACE}.tweets",
         steps=[Write("{KEYSPACE}.timeline", user_id=source.author_id, **TWEET),
                FanOut("{KEYSPACE}.followers", match={{"user_id": source.author_id}}, follow=True)
                .write("{KEYSPACE}.timeline", user_id=row.follower_id, **TWEET)],
         queue=Queue(capacity=5_000, workers=2), page_size=500),
    Flow(name="chaos_copy", source="{KEYSPACE}.tweets", steps=[Write("{KEYSPACE}.tweets_copy", **TWEET)]),
    Flow(name="chaos_by_author", source="{KEYSPACE}.tweets_copy",
         steps=[Write("{KEYSPACE}.by_author", author_id=source.author_id, tweet_id=source.tweet_id, body=source.body)]),
    Flow(name="chaos_counts", source="{KEYSPACE}.tweets",
         steps=[Aggregate("{KEYSPACE}.tweet_counts", group_by={{"author_id": source.author_id}}, count="tweets")]),
]
'''


@dataclasses.dataclass(frozen=True)
class Graph:
    users: int
    celebrity: int
    edges: tuple[tuple[int, int], ...]   # (user_id, follower_id)

    def followers(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for user, follower in self.edges:
            out.setdefault(user, []).append(follower)
        return out


def follower_graph(users: int, celebrity_followers: int, seed: int) -> Graph:
    """A power-law graph (followers of user u ~ u^-1.3, at most 200) plus user 0, the celebrity, whom
    ``celebrity_followers`` users follow."""
    if celebrity_followers >= users:
        raise ValueError(f"the celebrity's {celebrity_followers} followers need more than {users} users")
    rng = random.Random(seed)
    edges = {(0, f) for f in rng.sample(range(1, users), celebrity_followers)}
    for u in range(1, users):
        n = min(200, int(50 * u ** -1.3 * users ** 0.5))
        for f in rng.sample(range(users), min(n, users - 1)):
            if f != u:
                edges.add((u, f))
    return Graph(users, 0, tuple(sorted(edges)))


@dataclasses.dataclass(frozen=True)
class Op:
    at: float            # seconds after the start of the load
    tweet: int           # the tweet's number within the run (its id is id_base + tweet); a follower's for a follow
    kind: str            # insert | edit | reattribute | delete | follow | unfollow
    author: int | None   # None for a delete; the followed user for a follow
    body: str | None

    def statement(self, id_base: int) -> tuple[str, tuple]:
        tweet_id = id_base + self.tweet
        if self.kind == "follow":
            return f"INSERT INTO {KEYSPACE}.followers (user_id, follower_id) VALUES (?, ?)", (self.author, tweet_id)
        if self.kind == "unfollow":
            return f"DELETE FROM {KEYSPACE}.followers WHERE user_id = ? AND follower_id = ?", (self.author, tweet_id)
        if self.kind == "delete":
            return f"DELETE FROM {KEYSPACE}.tweets WHERE tweet_id = ?", (tweet_id,)
        return (f"INSERT INTO {KEYSPACE}.tweets (tweet_id, author_id, body) VALUES (?, ?, ?)",
                (tweet_id, self.author, self.body))

    @property
    def statement_kind(self) -> str:
        return self.kind if self.kind in ("follow", "unfollow", "delete") else "insert"


def operations(seed: int, tweets: int, seconds: float, users: int, celebrity_tweets: int,
               follows: int = 0) -> list[Op]:
    """The run's logical writes, in time order: each tweet inserted once; some edited (new body), some given
    another author (lineage moves its rows), some deleted, each later than the tweet's previous operation. Then
    ``follows`` users of the run's own follow an author of its tweets (one in five the celebrity) and half of them
    unfollow later."""
    rng = random.Random(seed)
    celebrity_at = set(rng.sample(range(tweets), min(celebrity_tweets, tweets)))
    ops: list[Op] = []
    for n in range(tweets):
        at = seconds * n / tweets
        author = 0 if n in celebrity_at else rng.randrange(1, users)
        ops.append(Op(at, n, "insert", author, f"tweet {n} by {author}"))
        roll = rng.random()
        later = min(seconds, at + rng.uniform(1.0, seconds / 3))
        if roll < 0.05:
            ops.append(Op(later, n, "edit", author, f"tweet {n} by {author}, edited"))
        elif roll < 0.08:
            other = rng.randrange(1, users)
            ops.append(Op(later, n, "reattribute", other, f"tweet {n} by {other}"))
        elif roll < 0.11:
            ops.append(Op(later, n, "delete", None, None))
    authors = sorted({op.author for op in ops if op.author})
    for follower in range(tweets, tweets + follows):   # numbered after the tweets: a lane of its own order
        followed = 0 if rng.random() < 0.2 else rng.choice(authors)
        at = rng.uniform(0, seconds * 0.8)
        ops.append(Op(at, follower, "follow", followed, None))
        if rng.random() < 0.5:
            ops.append(Op(rng.uniform(at + 1.0, seconds), follower, "unfollow", followed, None))
    return sorted(ops, key=lambda o: (o.at, o.tweet))


def kept_follows(ops: Sequence[Op], id_base: int) -> list[tuple[int, int]]:
    """The (user_id, follower_id) follows a run's operations leave in place: removed after its check."""
    last: dict[tuple[int, int], str] = {}
    for op in ops:
        if op.kind in ("follow", "unfollow"):
            last[(op.author, id_base + op.tweet)] = op.kind
    return sorted(pair for pair, kind in last.items() if kind == "follow")


@dataclasses.dataclass
class ClientStats:
    writes: int = 0
    attempts: int = 0
    retried: int = 0        # writes that needed more than one attempt
    gave_up: int = 0        # writes that never succeeded within the budget
    late: float = 0.0       # the largest delay behind the schedule, seconds

    def add(self, other: "ClientStats") -> None:
        self.writes += other.writes
        self.attempts += other.attempts
        self.retried += other.retried
        self.gave_up += other.gave_up
        self.late = max(self.late, other.late)


def write_all(session, ops: Sequence[Op], id_base: int, threads: int = 8, retry_budget_s: float = 240.0,
              consistency: str = "QUORUM", stop: threading.Event | None = None,
              progress: Callable[[str], None] = lambda _: None) -> ClientStats:
    """Writes the operations open loop: each at its time after the start (a thread that fell behind goes on at
    once), the operations of one tweet by one thread in order. A failed write is retried every half second with a
    new timestamp until it succeeds or ``retry_budget_s`` has passed."""
    from cassandra import ConsistencyLevel

    prepared = {}
    for kind in ("insert", "delete", "follow", "unfollow"):
        cql, _ = Op(0, 0, kind, 0, "").statement(id_base)
        p = session.prepare(cql)
        p.consistency_level = getattr(ConsistencyLevel, consistency)
        prepared[kind] = p
    lanes: list[list[Op]] = [[] for _ in range(threads)]
    for op in ops:
        lanes[op.tweet % threads].append(op)
    stats = [ClientStats() for _ in range(threads)]
    start = time.monotonic() + 0.5
    stop = stop or threading.Event()

    def lane(i: int) -> None:
        s = stats[i]
        for op in lanes[i]:
            wait = start + op.at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            s.late = max(s.late, -wait)
            _, values = op.statement(id_base)
            statement = prepared[op.statement_kind]
            deadline = time.monotonic() + retry_budget_s
            attempts = 0
            while True:
                attempts += 1
                try:
                    session.execute(statement, values, timeout=10)
                    break
                except Exception:  # noqa: BLE001 - timeouts, Unavailable, NoHostAvailable: a client retries
                    if time.monotonic() > deadline or stop.is_set():
                        s.gave_up += 1
                        break
                    time.sleep(0.5)
            s.writes += 1
            s.attempts += attempts
            s.retried += attempts > 1

    workers = [threading.Thread(target=lane, args=(i,), name=f"chaos-client-{i}", daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    total = ClientStats()
    for s in stats:
        total.add(s)
    return total
