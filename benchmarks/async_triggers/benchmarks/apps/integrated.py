"""The integrated application: the request writes the tweet and is acknowledged; the flow deployed in Cassandra (the
example's timeline flow as the report has it: benchmarks/async_triggers/benchmarks/harness/testbed.py) fans it out inside the nodes. The
application's whole job is one write, sent asynchronously (the load generator keeps many in flight; ``submit`` is the
blocking form the lag probe uses)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from async_triggers.benchmarks.apps.tweets import TWEET_BYTES, TweetSource, TweetStore


class IntegratedSender:
    def __init__(self, store: TweetStore, source: TweetSource):
        self.store, self.source = store, source

    def send_async(self, request, done) -> None:
        """The load generator's path: the write started, ``done`` called when it is acknowledged (or failed)."""
        self.store.write_tweet_then(self.source.tweet(request.seq, request.scheduled), done)

    def submit(self, tweet) -> None:
        self.store.write_tweet_async(tweet).result()

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if callable(close):
            close()


@dataclasses.dataclass(frozen=True)
class IntegratedApp:
    """A sender factory for ``async_triggers.spark_jobs.loadgen`` (picklable: it travels to the Spark tasks).
    ``jvm``: the load generator sends the same tweets through the Java driver (``spark_jobs/jvm_sender.py``) when
    the store is Cassandra's; the lag probe still writes through ``store_factory``."""
    store_factory: Callable[[Any], TweetStore]       # called with the loadgen Slot
    n_users: int
    body_bytes: int = TWEET_BYTES
    jvm: bool = False

    def __call__(self, slot) -> IntegratedSender:
        return IntegratedSender(self.store_factory(slot), TweetSource(self.n_users, slot.seed, slot.task,
                                                                      self.body_bytes))

    def jvm_requests(self):
        from async_triggers.benchmarks.apps.cassandra import StoreFactory
        from async_triggers.spark_jobs.jvm_sender import TWEET
        if not self.jvm or not isinstance(self.store_factory, StoreFactory):
            return None
        return tweet_requests(TWEET, self.store_factory.target, self.n_users, self.body_bytes)


def tweet_requests(kind: int, target, n_users: int, body_bytes: int, options=(), blocking: bool = False):
    """What the JVM sender sends for an application whose request writes a tweet (``kind`` of
    ``spark_jobs.jvm_sender``: the tweet alone, with its fan-out, or with its message to a queue)."""
    from async_triggers.benchmarks.apps.cassandra import INSERT_TWEET
    from async_triggers.spark_jobs.jvm_sender import JvmRequests
    return JvmRequests(kind, INSERT_TWEET.format(ks=target.keyspace), target.write_consistency,
                       target.contact_points, target.port, target.retry_s, tweets=JvmTweets(n_users, body_bytes),
                       options=tuple(options), blocking=blocking)


@dataclasses.dataclass(frozen=True)
class JvmTweets:
    """A task's tweets, as its Python sender would draw them."""
    n_users: int
    body_bytes: int

    def __call__(self, seed: int, task: int) -> TweetSource:
        return TweetSource(self.n_users, seed, task, self.body_bytes)
