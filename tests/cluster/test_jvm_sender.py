"""The load generator's JVM sender (spark_jobs/jvm_sender.py, spark-jobs/jvm) against the session's cluster: the
tweets it writes through the Java driver are exactly the ones the Python sender would write for the same schedule
(authors and bodies of each (seed, task, seq), each tweet's time UUID and created_at at its scheduled time), every
request is recorded once and none goes out before its time; a query without values (the capacity's sender) too; and
the synchronous application's requests (the tweet, then its author's and every follower's timeline row, answered
when all are written), with a celebrity whose followers take more than one page; and the external-queue application's
(the tweet, and its message published to a private RabbitMQ node and confirmed), messages the Python workers read."""
from __future__ import annotations

import collections
import datetime as dt
import json
import subprocess
import sys
import textwrap
import uuid

import pytest

from helpers import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]
KS, USERS, SEED, RATE, SECONDS = "jvm_sender_test", 50, 7, 150.0, 2.0
FAN_KS, CELEBRITY_FOLLOWERS = "jvm_sender_fanout_test", 5_001   # the fan-out reads 5,000 followers a page
PUB_KS, QUEUE = "jvm_sender_publish_test", "jvm-sender-tweets"


def _celebrity() -> int:
    """The author of task 0's first tweet (the schedule is seeded, so the celebrity surely tweets)."""
    from async_triggers.benchmarks.apps.tweets import TweetSource
    return TweetSource(USERS, SEED, 0).parts(0)[0]


def _followers(user: int) -> list[int]:
    """The celebrity has a page of followers and one more; the others have 0 to 3."""
    if user == _celebrity():
        return list(range(1_000, 1_000 + CELEBRITY_FOLLOWERS))
    return [100 + user * 10 + i for i in range(user % 4)]

SCRIPT = textwrap.dedent(f"""
    import json
    from async_triggers import connection
    from async_triggers.benchmarks.apps.cassandra import StoreFactory, Target
    import os
    from async_triggers.benchmarks.apps.cassandra import FanOutFactory
    from async_triggers.benchmarks.apps.external_queue import ExternalQueueApp
    from async_triggers.benchmarks.apps.integrated import IntegratedApp
    from async_triggers.benchmarks.apps.synchronous import SynchronousApp
    from async_triggers.benchmarks.experiments.capacity import ReleaseVersionApp
    from async_triggers.spark_jobs import loadgen
    from async_triggers.spark_jobs.schedule import Phase
    from async_triggers.spark_jobs.session import build_session

    conn = connection.resolve()
    spark = build_session(master="local[2]", app_name="jvm-sender-test", connection=conn, load_sender=True)
    target = Target(tuple(conn.hosts), port=conn.port, keyspace="{KS}", write_consistency="QUORUM")
    out = {{}}
    for name, app in (("tweets", IntegratedApp(StoreFactory(target), {USERS}, jvm=True)),
                      ("query", ReleaseVersionApp(target, jvm=True))):
        records = loadgen.run(spark, [Phase({SECONDS}, {RATE})], 2, {SEED}, app, start_delay_s=0.5)
        out[name] = [r._asdict() for r in records]
    fan = Target(tuple(conn.hosts), port=conn.port, keyspace="{FAN_KS}", write_consistency="QUORUM", concurrency=16)
    app = SynchronousApp(StoreFactory(fan), FanOutFactory(fan), {USERS}, jvm=True)
    records = loadgen.run(spark, [Phase({SECONDS}, {RATE} / 5)], 2, {SEED}, app, start_delay_s=0.5, concurrency=4)
    out["fanout"] = [r._asdict() for r in records]
    pub = Target(tuple(conn.hosts), port=conn.port, keyspace="{PUB_KS}", write_consistency="QUORUM")
    app = ExternalQueueApp(os.environ["TEST_BROKER_URL"], StoreFactory(pub), {USERS}, queue="{QUEUE}", jvm=True)
    records = loadgen.run(spark, [Phase({SECONDS}, {RATE})], 2, {SEED}, app, start_delay_s=0.5, concurrency=8)
    out["publish"] = [r._asdict() for r in records]
    print("RECORDS " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from broker_helpers import private_broker
    yield from private_broker(tmp_path_factory, "attest-jvm-sender")


@pytest.fixture(scope="module")
def sent(cluster_settings, broker):
    from async_triggers.cql import connect
    with connect(cluster_settings) as session:
        yield from _sent(cluster_settings, session, broker.config.url)


def _messages(url: str) -> list:
    """Every message in the queue, as the Python workers decode them."""
    from async_triggers.benchmarks.apps.external_queue import connect
    from async_triggers.benchmarks.apps.tweets import decode
    conn = connect(url)
    try:
        channel, out = conn.channel(), []
        while True:
            method, _, body = channel.basic_get(QUEUE, auto_ack=True)
            if method is None:
                return out
            out.append(decode(body))
    finally:
        conn.close()


def _sent(cluster_settings, session, broker_url):
    from async_triggers.connection import child_env
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    session.execute(f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}}")
    session.execute(f'CREATE TABLE {KS}.tweets (tweet_id timeuuid PRIMARY KEY, author_id bigint, body text, '
                    'created_at timestamp)')
    session.execute(f"DROP KEYSPACE IF EXISTS {FAN_KS}")
    session.execute(f"CREATE KEYSPACE {FAN_KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}}")
    from async_triggers.benchmarks.harness.twitter_example import report_table
    for table in ("tweets", "followers", "timeline"):   # the benchmarks' tables
        session.execute(report_table(table, FAN_KS))
    session.execute(f"DROP KEYSPACE IF EXISTS {PUB_KS}")
    session.execute(f"CREATE KEYSPACE {PUB_KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}}")
    session.execute(f'CREATE TABLE {PUB_KS}.tweets (tweet_id timeuuid PRIMARY KEY, author_id bigint, body text, '
                    'created_at timestamp)')
    from cassandra.concurrent import execute_concurrent_with_args
    insert = session.prepare(f"INSERT INTO {FAN_KS}.followers (user_id, follower_id) VALUES (?, ?)")
    execute_concurrent_with_args(session, insert, [(u, f) for u in range(USERS) for f in _followers(u)],
                                 concurrency=64, raise_on_first_error=True)
    env = {**child_env(cluster_settings.connection), "TEST_BROKER_URL": broker_url}
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=500)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RECORDS "))
    rows = list(session.execute(f"SELECT tweet_id, author_id, body, created_at FROM {KS}.tweets"))
    timelines = collections.Counter((row.author_id, row.body, row.created_at) for row in session.execute(
        f"SELECT author_id, body, created_at FROM {FAN_KS}.timeline"))
    tweets = list(session.execute(f"SELECT author_id, body, created_at FROM {FAN_KS}.tweets"))
    published = list(session.execute(f"SELECT tweet_id, author_id, body, created_at FROM {PUB_KS}.tweets"))
    yield json.loads(line[len("RECORDS "):]), rows, timelines, tweets, published, _messages(broker_url)
    for ks in (KS, FAN_KS, PUB_KS):
        session.execute(f"DROP KEYSPACE IF EXISTS {ks}")


def _check_schedule(records):
    assert len(records) == RATE * SECONDS
    assert collections.Counter(r["task"] for r in records) == {0: RATE * SECONDS / 2, 1: RATE * SECONDS / 2}
    assert sorted((r["task"], r["seq"]) for r in records) == sorted(
        (t, s) for t in (0, 1) for s in range(int(RATE * SECONDS / 2)))
    assert all(r["status"] == "ok" and r["error"] is None for r in records), [r for r in records if r["status"] != "ok"][:3]
    assert all(r["scheduled"] <= r["sent"] <= r["acked"] for r in records), "a request went out before its time"
    start = min(r["scheduled"] for r in records)
    assert sorted(r["scheduled"] - start for r in records) == pytest.approx([i / RATE for i in range(len(records))],
                                                                           abs=1e-6)


def test_should_write_through_the_java_driver_the_tweets_the_python_sender_would(sent):
    from async_triggers.benchmarks.apps.tweets import TweetSource
    records, rows = sent[:2]
    _check_schedule(records["tweets"])
    expected = collections.Counter(TweetSource(USERS, SEED, r["task"]).parts(r["seq"])[:2] for r in records["tweets"])
    assert collections.Counter((row.author_id, row.body) for row in rows) == expected
    scheduled_ms = sorted(int(r["scheduled"] * 1000) for r in records["tweets"])
    assert sorted(_epoch_ms(row.created_at) for row in rows) == scheduled_ms
    for row in rows:
        assert row.tweet_id.version == 1 and row.tweet_id.variant == uuid.RFC_4122
        # the time UUID's time is the tweet's scheduled time (100 ns steps since 1582-10-15)
        at_ms = (row.tweet_id.time - 0x01B21DD213814000) / 1e4
        assert 0 <= at_ms - _epoch_ms(row.created_at) < 1.0, row


def _epoch_ms(naive_utc: dt.datetime) -> int:
    return round((naive_utc - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


def test_should_send_a_query_without_values_through_the_java_driver(sent):
    records = sent[0]
    _check_schedule(records["query"])


def test_should_answer_the_synchronous_apps_request_once_its_author_and_every_follower_has_the_tweet(sent):
    from async_triggers.benchmarks.apps.tweets import TweetSource
    records, _, timelines, tweets = sent[:4]
    fanout = records["fanout"]
    assert len(fanout) == RATE / 5 * SECONDS
    assert all(r["status"] == "ok" and r["error"] is None for r in fanout), [r for r in fanout if r["status"] != "ok"][:3]
    sent_tweets = collections.Counter(TweetSource(USERS, SEED, r["task"]).parts(r["seq"])[:2] for r in fanout)
    assert collections.Counter((t.author_id, t.body) for t in tweets) == sent_tweets
    # every tweet on its author's and each follower's timeline, with its time: the celebrity's across two pages of
    # followers
    expected = collections.Counter()
    for t in tweets:
        expected[(t.author_id, t.body, t.created_at)] += 1 + len(_followers(t.author_id))
    assert timelines == expected
    assert any(author == _celebrity() for author, _ in sent_tweets)


def test_should_answer_the_queue_apps_request_once_the_tweet_is_written_and_its_message_confirmed(sent):
    from async_triggers.benchmarks.apps.tweets import TweetSource
    records, published, messages = sent[0]["publish"], sent[4], sent[5]
    _check_schedule(records)
    expected = collections.Counter(TweetSource(USERS, SEED, r["task"]).parts(r["seq"])[:2] for r in records)
    assert collections.Counter((row.author_id, row.body) for row in published) == expected
    # one message per tweet, which the Python workers decode into the very tweet written
    assert sorted((m.tweet_id, m.author_id, m.body, m.created_at_ms) for m in messages) == sorted(
        (row.tweet_id, row.author_id, row.body, _epoch_ms(row.created_at)) for row in published)
