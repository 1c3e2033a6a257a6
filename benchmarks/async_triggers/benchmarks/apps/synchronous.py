"""The synchronous application: the request writes the tweet and, at the same time, the tweet to its author's
and every follower's timeline; it is acknowledged when all of them are. A celebrity's tweet holds its request for
as long as its whole fan-out takes (the report's 13.8 s maximum response time)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from async_triggers.benchmarks.apps.tweets import TWEET_BYTES, FanOutWriter, TweetSource, TweetStore


class SynchronousSender:
    def __init__(self, store: TweetStore, writer: FanOutWriter, source: TweetSource):
        self.store, self.writer, self.source = store, writer, source

    def send(self, request) -> None:
        self.submit(self.source.tweet(request.seq, request.scheduled))

    def submit(self, tweet) -> None:
        pending = self.store.write_tweet_async(tweet)   # in flight while the timelines are written
        self.writer.fan_out(tweet)
        pending.result()

    def close(self) -> None:
        for part in (self.store, self.writer):
            close = getattr(part, "close", None)
            if callable(close):
                close()


@dataclasses.dataclass(frozen=True)
class SynchronousApp:
    """A sender factory for ``async_triggers.spark_jobs.loadgen`` (picklable: it travels to the Spark tasks).
    ``jvm``: the load generator sends the same requests through the Java driver (``spark_jobs/jvm_sender.py``, kind
    FANOUT: the tweet, the followers read, the timeline rows written with the fan-out's concurrency in flight), one
    request per sender thread as here, when both parts are Cassandra's; the lag probe still sends through Python."""
    store_factory: Callable[[Any], TweetStore]       # called with the loadgen Slot
    writer_factory: Callable[[Any], FanOutWriter]    # called with the loadgen Slot
    n_users: int
    body_bytes: int = TWEET_BYTES
    jvm: bool = False

    def __call__(self, slot) -> SynchronousSender:
        return SynchronousSender(self.store_factory(slot), self.writer_factory(slot),
                                 TweetSource(self.n_users, slot.seed, slot.task, self.body_bytes))

    def jvm_requests(self):
        from async_triggers.benchmarks.apps.cassandra import (INSERT_TIMELINE, SELECT_FOLLOWERS, FanOutFactory,
                                                              StoreFactory)
        from async_triggers.benchmarks.apps.integrated import tweet_requests
        from async_triggers.spark_jobs.jvm_sender import FANOUT
        if not (self.jvm and isinstance(self.store_factory, StoreFactory)
                and isinstance(self.writer_factory, FanOutFactory)):
            return None
        target = self.writer_factory.target
        fanout = (("followers", SELECT_FOLLOWERS.format(ks=target.keyspace)),
                  ("timeline", INSERT_TIMELINE.format(ks=target.keyspace)),
                  ("read_consistency", target.read_consistency), ("concurrency", str(target.concurrency)))
        return tweet_requests(FANOUT, self.store_factory.target, self.n_users, self.body_bytes, options=fanout,
                              blocking=True)
