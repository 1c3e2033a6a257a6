"""The external-queue application against a real RabbitMQ node (marker ``broker``): publisher confirms, persistent
messages in a durable queue, workers with manual acknowledgements, redelivery after a worker is killed. Cassandra is
replaced by in-memory writers here (its writers are the cluster-dependent part). Tests of the tweet messages and
sources need no broker."""
from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from async_triggers.benchmarks.apps import tweets
from async_triggers.benchmarks.apps.tweets import MessageError, Tweet, TweetSource
from broker_helpers import MemoryWriter, private_broker
from async_triggers.spark_jobs.loadgen import Phase, ScheduledRequest, Slot

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parents[1]   # where broker_helpers is


# -- tweets (no broker) --------------------------------------------------------------------------------------------
def test_should_make_tweets_reproducible_200_byte_messages():
    a, b = TweetSource(1000, seed=5, task=1), TweetSource(1000, seed=5, task=1)
    t1, t2 = a.tweet(7, 1_700_000_000.25), b.tweet(7, 1_700_000_000.25)
    assert t1 == t2 and len(t1.body) == 200 and 1 <= t1.author_id <= 1000
    assert t1.tweet_id.version == 1 and t1.created_at_ms == 1_700_000_000_250
    assert a.tweet(8, 1_700_000_000.25) != t1 and TweetSource(1000, seed=5, task=2).tweet(7, 1.0) != t1
    assert tweets.decode(tweets.encode(t1)) == t1


def test_should_draw_tweet_authors_across_all_users():
    src = TweetSource(10, seed=1, task=0)
    assert {src.tweet(i, 0.0).author_id for i in range(500)} == set(range(1, 11))


def test_should_give_a_clear_error_for_a_foreign_message():
    with pytest.raises(MessageError, match=r"^not a tweet message \(JSONDecodeError: .*\): b'hello'$"):
        tweets.decode(b"hello")
    with pytest.raises(MessageError, match=r"not a tweet message \(KeyError: 'body'\)"):
        tweets.decode(b'{"tweet_id": "%s", "author_id": 1, "created_at_ms": 1}' % str(uuid.uuid1()).encode())


# -- against a real broker -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    yield from private_broker(tmp_path_factory, "attest-queue")


@pytest.fixture()
def queue(broker):
    """A fresh queue name per test (queues are durable: they outlive a test)."""
    return f"tweets-{uuid.uuid4().hex[:8]}"


def some_tweets(n: int, task: int = 0) -> list[Tweet]:
    src = TweetSource(1000, seed=11, task=task)
    return [src.tweet(i, 1_700_000_000 + i) for i in range(n)]


class MemoryStore:
    """The request path's tweet write, in memory: a future that is already done (or failed)."""

    def __init__(self, fail: bool = False):
        self.tweets, self.fail = [], fail

    def write_tweet_async(self, tweet):
        f = concurrent.futures.Future()
        if self.fail:
            f.set_exception(RuntimeError("Unavailable: 2 replicas required, 1 alive"))
        else:
            self.tweets.append(tweet)
            f.set_result(None)
        return f


@pytest.mark.broker
def test_should_confirm_published_messages_and_have_a_worker_ack_them_all(broker, queue):
    from async_triggers.benchmarks.apps import external_queue as eq
    sent = some_tweets(200)
    pub = eq.Publisher(broker.config.url, queue)
    try:
        for t in sent:
            pub.publish(t)                         # returns once the broker confirmed
    finally:
        pub.close()
    assert eq.queue_depth(broker.config.url, queue) == 200
    writer, done = MemoryWriter(), []
    stats = eq.Worker(broker.config.url, writer, queue, prefetch=20,
                      on_done=lambda t, rows, at: done.append(t.tweet_id)).run(max_messages=200, idle_timeout_s=10)
    assert writer.written == sent and done == [t.tweet_id for t in sent]
    assert (stats.delivered, stats.acked, stats.redelivered, stats.failed, stats.rejected) == (200, 200, 0, 0, 0)
    assert stats.rows == sum(1 + t.author_id % 3 for t in sent)
    assert eq.queue_depth(broker.config.url, queue) == 0


@pytest.mark.broker
def test_should_redeliver_the_message_of_a_worker_killed_before_acking(broker, queue, tmp_path):
    from async_triggers.benchmarks.apps import external_queue as eq
    sent = some_tweets(3)
    pub = eq.Publisher(broker.config.url, queue)
    for t in sent:
        pub.publish(t)
    pub.close()
    marker = tmp_path / "holding"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))   # the test writer
    proc = subprocess.Popen(
        [sys.executable, "-m", "async_triggers.benchmarks.apps.external_queue", "worker", "--url", broker.config.url, "--queue",
         queue, "--prefetch", "1", "--writer", "broker_helpers:hanging_writer", "--writer-arg", f"marker={marker}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"the worker never started a fan-out: {proc.communicate(timeout=5)}"
        assert marker.read_text() == str(sent[0].tweet_id)     # it holds the first tweet, unacknowledged
    finally:
        os.kill(proc.pid, signal.SIGKILL)                      # dies mid fan-out, before its ack
        proc.wait(10)
    writer = MemoryWriter()
    stats = eq.Worker(broker.config.url, writer, queue, prefetch=1).run(max_messages=3, idle_timeout_s=20)
    assert sorted(t.tweet_id for t in writer.written) == sorted(t.tweet_id for t in sent)
    assert stats.acked == 3 and stats.redelivered == 1
    assert eq.queue_depth(broker.config.url, queue) == 0


@pytest.mark.broker
def test_should_retry_a_failed_fan_out_and_drop_a_foreign_message(broker, queue):
    from async_triggers.benchmarks.apps import external_queue as eq
    sent = some_tweets(2)
    pub = eq.Publisher(broker.config.url, queue)
    pub.publish(sent[0])
    pub.publish(b"not a tweet")
    pub.publish(sent[1])
    pub.close()
    writer = MemoryWriter(fail_first=1)
    stats = eq.Worker(broker.config.url, writer, queue, prefetch=5).run(max_messages=2, idle_timeout_s=10)
    assert sorted(t.tweet_id for t in writer.written) == sorted(t.tweet_id for t in sent)
    assert (stats.acked, stats.failed, stats.rejected) == (2, 1, 1)
    assert stats.last_error.startswith("not a tweet message") or stats.last_error.startswith("TimeoutError")
    assert eq.queue_depth(broker.config.url, queue) == 0


@pytest.mark.broker
def test_should_keep_persistent_messages_across_a_broker_restart(broker, queue):
    from async_triggers.benchmarks.apps import external_queue as eq
    pub = eq.Publisher(broker.config.url, queue)
    for t in some_tweets(5):
        pub.publish(t)
    pub.close()
    broker.stop()
    broker.start()
    assert eq.queue_depth(broker.config.url, queue) == 5
    assert eq.purge(broker.config.url, queue) == 5


@pytest.mark.broker
def test_should_acknowledge_a_request_after_both_the_tweet_write_and_the_publish(broker, queue):
    from async_triggers.benchmarks.apps import external_queue as eq
    store = MemoryStore()
    app = eq.ExternalQueueApp(broker.config.url, lambda slot: store, n_users=1000, queue=queue)
    sender = app(Slot(task=2, slot=0, partitions=4, seed=11))
    try:
        for seq in range(5):
            sender.send(ScheduledRequest(2, seq, 1_700_000_000 + seq))
    finally:
        sender.close()
    expected = [TweetSource(1000, 11, 2).tweet(seq, 1_700_000_000 + seq) for seq in range(5)]
    assert store.tweets == expected
    writer = MemoryWriter()
    eq.Worker(broker.config.url, writer, queue).run(max_messages=5, idle_timeout_s=10)
    assert writer.written == expected
    # a failed tweet write fails the request (the loadgen records it), whatever the broker said
    failing = eq.ExternalQueueApp(broker.config.url, lambda slot: MemoryStore(fail=True), 1000, queue)(
        Slot(0, 0, 1, 1))
    with pytest.raises(RuntimeError, match="Unavailable"):
        failing.send(ScheduledRequest(0, 0, 1_700_000_000.0))
    failing.close()


@pytest.mark.broker
def test_should_name_an_unreachable_broker(broker):
    from async_triggers.benchmarks.apps import external_queue as eq
    from async_triggers.benchmarks.errors import BrokerError
    from broker_helpers import free_ports
    (port,) = free_ports(1)
    with pytest.raises(BrokerError, match=rf"cannot connect to the broker at amqp://guest@127.0.0.1:{port}/%2F: "):
        eq.Publisher(f"amqp://guest:secret@127.0.0.1:{port}/%2F")


@pytest.mark.broker
@pytest.mark.spark
def test_should_drive_the_external_queue_app_from_the_load_generator(broker, queue, spark):
    """Spark local[2] tasks publish through the real broker with confirms; every request is in the queue."""
    from async_triggers.benchmarks.apps import external_queue as eq
    from async_triggers.spark_jobs import loadgen

    class DoneStore:
        def write_tweet_async(self, tweet):
            f = concurrent.futures.Future()
            f.set_result(None)
            return f

    app = eq.ExternalQueueApp(broker.config.url, lambda slot: DoneStore(), n_users=1000, queue=queue)
    records = loadgen.run(spark, [Phase(3.0, 100)], partitions=2, seed=4, sender_factory=app, concurrency=2)
    assert len(records) == 300 and all(r.status == "ok" for r in records), \
        [r.error for r in records if r.status != "ok"][:3]
    assert all(r.sent >= r.scheduled for r in records)
    assert eq.queue_depth(broker.config.url, queue) == 300
    writer = MemoryWriter()
    eq.Worker(broker.config.url, writer, queue, prefetch=50).run(max_messages=300, idle_timeout_s=10)
    expected = {TweetSource(1000, 4, r.task).tweet(r.seq, r.scheduled).tweet_id for r in records}
    assert {t.tweet_id for t in writer.written} == expected
