"""The integrated application: the request writes the tweet and is acknowledged; the flow deployed in Cassandra
(examples/twitter/flows.py) fans it out inside the nodes. The application's whole job is one write."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from async_triggers.benchmarks.apps.tweets import TWEET_BYTES, TweetSource, TweetStore


class IntegratedSender:
    def __init__(self, store: TweetStore, source: TweetSource):
        self.store, self.source = store, source

    def send(self, request) -> None:
        self.submit(self.source.tweet(request.seq, request.scheduled))

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
