"""The integrated application: the request writes the tweet and is acknowledged; the flow deployed in Cassandra
(examples/twitter/flows.py) fans it out inside the nodes. The application's whole job is one write, sent
asynchronously (the load generator keeps many in flight; ``submit`` is the blocking form the lag probe uses)."""
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
    """A sender factory for ``async_triggers.spark_jobs.loadgen`` (picklable: it travels to the Spark tasks)."""
    store_factory: Callable[[Any], TweetStore]       # called with the loadgen Slot
    n_users: int
    body_bytes: int = TWEET_BYTES

    def __call__(self, slot) -> IntegratedSender:
        return IntegratedSender(self.store_factory(slot), TweetSource(self.n_users, slot.seed, slot.task,
                                                                      self.body_bytes))
