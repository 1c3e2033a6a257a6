"""The synchronous and integrated applications' request paths, driven by the load generator's task logic with
local stores in place of Cassandra (whose writers are the cluster-dependent part)."""
from __future__ import annotations

import concurrent.futures
import threading
import time

from async_triggers.benchmarks.apps.integrated import IntegratedApp
from async_triggers.benchmarks.apps.synchronous import SynchronousApp
from async_triggers.benchmarks.apps.tweets import TweetSource
from async_triggers.spark_jobs.loadgen import ERROR, OK, Phase, run_task

N_USERS = 20
CELEBRITY_DELAY_S = 0.3


class Store:
    """Tweets land here; the write is acknowledged at once."""

    def __init__(self):
        self.tweets, self.lock = [], threading.Lock()

    def write_tweet_async(self, tweet):
        with self.lock:
            self.tweets.append(tweet)
        f = concurrent.futures.Future()
        f.set_result(None)
        return f

    def write_tweet_then(self, tweet, done):
        with self.lock:
            self.tweets.append(tweet)
        done(None)


class Timelines:
    """A fan-out whose cost grows with the author's followers: user 1 is a celebrity (0.3 s), others are instant;
    a user whose id is 13 has a failing replica."""

    def __init__(self):
        self.rows, self.lock = 0, threading.Lock()

    def fan_out(self, tweet) -> int:
        if tweet.author_id == 13:
            raise TimeoutError("WriteTimeout: 1 of 2 replicas")
        if tweet.author_id == 1:
            time.sleep(CELEBRITY_DELAY_S)
        with self.lock:
            self.rows += 1000 if tweet.author_id == 1 else 1
        return 1


def run(app, seconds=1.0, rate=40):
    return run_task(0, 1, time.time() + 0.2, [Phase(seconds, rate)], 21, app, concurrency=4)


def test_should_acknowledge_after_the_tweet_write_alone_in_the_integrated_app():
    store = Store()
    records = run(IntegratedApp(lambda slot: store, N_USERS))
    assert all(r.status == OK for r in records) and len(records) == 40
    source = TweetSource(N_USERS, 21, 0)
    assert sorted(store.tweets, key=lambda t: t.created_at_ms) == [source.tweet(r.seq, r.scheduled) for r in records]
    # the celebrity's tweets cost the request nothing more
    celebrity = [r for r in records if source.tweet(r.seq, r.scheduled).author_id == 1]
    assert celebrity and max(r.latency for r in celebrity) < CELEBRITY_DELAY_S / 2


def test_should_acknowledge_after_the_whole_fan_out_in_the_synchronous_app():
    store, timelines = Store(), Timelines()
    records = run(SynchronousApp(lambda slot: store, lambda slot: timelines, N_USERS))
    source = TweetSource(N_USERS, 21, 0)
    author = {r.seq: source.tweet(r.seq, r.scheduled).author_id for r in records}
    celebrity = [r for r in records if author[r.seq] == 1]
    assert celebrity and min(r.latency for r in celebrity) >= CELEBRITY_DELAY_S
    # a failed timeline write fails the request: the application could not acknowledge it
    failed = [r for r in records if author[r.seq] == 13]
    assert failed and all(r.status == ERROR and r.error == "TimeoutError: WriteTimeout: 1 of 2 replicas"
                          for r in failed)
    assert all(r.status == OK for r in records if author[r.seq] != 13)
    assert timelines.rows == sum(1000 if a == 1 else 1 for a in author.values() if a != 13)
    assert len(store.tweets) == len(records)       # the tweet itself was written, also when the fan-out failed
