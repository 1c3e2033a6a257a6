"""The workload's requests and the small interfaces the three applications write through.

A request is a tweet of about 200 bytes (the report's size) by a user drawn uniformly at random, made from the
run's seed and the request's place in the schedule, so a run is reproducible whatever the timing. The applications
reach Cassandra only through :class:`TweetStore` (write the tweet) and :class:`FanOutWriter` (write a tweet to its
author's and every follower's timeline): the Cassandra implementations are the cluster-dependent part; tests and
calibration runs plug in local ones.
"""
from __future__ import annotations

import dataclasses
import json
import random
import uuid
from typing import Callable, Optional, Protocol

from cassandra.util import uuid_from_time

from async_triggers.benchmarks.errors import BenchError
from async_triggers.examples.twitter.workload import tweet_body

TWEET_BYTES = 200


class MessageError(BenchError):
    """A queue message is not a tweet this benchmark wrote."""


@dataclasses.dataclass(frozen=True)
class Tweet:
    tweet_id: uuid.UUID        # a time UUID (the tweets table's tweet_id is a timeuuid)
    author_id: int
    body: str
    created_at_ms: int


def encode(tweet: Tweet) -> bytes:
    """The queue message of a tweet: compact JSON."""
    return json.dumps({"tweet_id": str(tweet.tweet_id), "author_id": tweet.author_id, "body": tweet.body,
                       "created_at_ms": tweet.created_at_ms}, separators=(",", ":")).encode()


def decode(message: bytes) -> Tweet:
    try:
        d = json.loads(message)
        return Tweet(uuid.UUID(d["tweet_id"]), int(d["author_id"]), str(d["body"]), int(d["created_at_ms"]))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        shown = message[:80] + (b"..." if len(message) > 80 else b"")
        raise MessageError(f"not a tweet message ({type(e).__name__}: {e}): {shown!r}") from None


class TweetSource:
    """The tweets of one load generator task: ``tweet(seq, at)`` is the same for the same (seed, task, seq)."""

    def __init__(self, n_users: int, seed: int, task: int, body_bytes: int = TWEET_BYTES):
        if n_users < 1:
            raise BenchError(f"'n_users' must be strictly positive, found: {n_users}")
        if body_bytes < 1:
            raise BenchError(f"'body_bytes' must be strictly positive, found: {body_bytes}")
        self.n_users, self.seed, self.task, self.body_bytes = n_users, seed, task, body_bytes

    def tweet(self, seq: int, at: float) -> Tweet:
        author, body, node, clock_seq = self.parts(seq)
        return Tweet(uuid_from_time(at, node=node, clock_seq=clock_seq), author, body, int(at * 1000))

    def parts(self, seq: int) -> tuple[int, str, int, int]:
        """What request ``seq``'s tweet is apart from its time: author, body, and its time UUID's node and clock
        sequence (the JVM sender makes the tweet at its scheduled time from these)."""
        rng = random.Random(f"{self.seed}/{self.task}/{seq}")
        author = rng.randint(1, self.n_users)
        body = tweet_body(rng, self.body_bytes)
        return author, body, rng.getrandbits(48), rng.getrandbits(14)


class Waitable(Protocol):
    def result(self): ...


class TweetStore(Protocol):
    """Writes a tweet to the tweets table; ``write_tweet_async`` returns something whose ``result()`` blocks
    until the write is acknowledged and raises if it failed (the driver's ``ResponseFuture`` is one)."""

    def write_tweet_async(self, tweet: Tweet) -> Waitable: ...

    def write_tweet_then(self, tweet: Tweet, done: Callable[[Optional[BaseException]], None]) -> None:
        """Start the write and return; ``done(None)`` when acknowledged, ``done(error)`` when it failed."""


class FanOutWriter(Protocol):
    """Writes a tweet to its author's and every follower's timeline; returns the number of timeline rows."""

    def fan_out(self, tweet: Tweet) -> int: ...
