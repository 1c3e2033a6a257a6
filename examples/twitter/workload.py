"""The Twitter workload's client side: writing tweets and timing their acknowledgement."""
from __future__ import annotations

import dataclasses
import random
import statistics
import time
from typing import Sequence

from cassandra import ConsistencyLevel
from cassandra.util import uuid_from_time

INSERT_TWEET = ('INSERT INTO "twitter"."tweets" ("tweet_id", "author_id", "body", "created_at") '
                "VALUES (?, ?, ?, ?)")


@dataclasses.dataclass(frozen=True)
class WriteStats:
    count: int
    latencies_ms: tuple[float, ...]
    tweet_ids: tuple = ()

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies_ms)

    def percentile_ms(self, p: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def tweet_body(rng: random.Random, size: int = 200) -> str:
    words = []
    while sum(len(w) + 1 for w in words) < size:
        words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))))
    return " ".join(words)[:size]


def write_tweets(session, authors: Sequence[int], rng: random.Random,
                 consistency: int = ConsistencyLevel.QUORUM, insert=None) -> WriteStats:
    """Write one tweet per author, one at a time, timing each acknowledgement (the client's view). ``insert``: the
    INSERT_TWEET statement prepared once by a caller that writes often (else it is prepared here, before the writes)."""
    insert = insert if insert is not None else session.prepare(INSERT_TWEET)
    insert.consistency_level = consistency
    latencies, ids = [], []
    for author in authors:
        now = time.time()
        values = (uuid_from_time(now), author, tweet_body(rng), int(now * 1000))
        ids.append(values[0])
        started = time.perf_counter()
        session.execute(insert, values)
        latencies.append((time.perf_counter() - started) * 1000)
    return WriteStats(count=len(latencies), latencies_ms=tuple(latencies), tweet_ids=tuple(ids))


def change_follows(session, added: Sequence[tuple[int, int]], removed: Sequence[tuple[int, int]],
                   rng: random.Random, consistency: int = ConsistencyLevel.QUORUM) -> None:
    """Follows (``added``) and unfollows (``removed``) as (user_id, follower_id) pairs, in a shuffled order, one at a
    time, as the users make them."""
    follow = session.prepare('INSERT INTO "twitter"."followers" ("user_id", "follower_id") VALUES (?, ?)')
    unfollow = session.prepare('DELETE FROM "twitter"."followers" WHERE "user_id" = ? AND "follower_id" = ?')
    follow.consistency_level = unfollow.consistency_level = consistency
    changes = [(follow, pair) for pair in added] + [(unfollow, pair) for pair in removed]
    rng.shuffle(changes)
    for statement, pair in changes:
        session.execute(statement, pair)
