"""The load generator's JVM sender (spark_jobs/jvm_sender.py, spark-jobs/jvm) against the session's cluster: the
tweets it writes through the Java driver are exactly the ones the Python sender would write for the same schedule
(authors and bodies of each (seed, task, seq), each tweet's time UUID and created_at at its scheduled time), every
request is recorded once and none goes out before its time; a query without values (the capacity's sender) too."""
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

SCRIPT = textwrap.dedent(f"""
    import json
    from async_triggers import connection
    from async_triggers.benchmarks.apps.cassandra import StoreFactory, Target
    from async_triggers.benchmarks.apps.integrated import IntegratedApp
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
    print("RECORDS " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def sent(cluster_settings):
    from async_triggers.cql import connect
    with connect(cluster_settings) as session:
        yield from _sent(cluster_settings, session)


def _sent(cluster_settings, session):
    from async_triggers.connection import child_env
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    session.execute(f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}}")
    session.execute(f'CREATE TABLE {KS}.tweets (tweet_id timeuuid PRIMARY KEY, author_id bigint, body text, '
                    'created_at timestamp)')
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=child_env(cluster_settings.connection),
                            capture_output=True, text=True, timeout=500)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RECORDS "))
    rows = list(session.execute(f"SELECT tweet_id, author_id, body, created_at FROM {KS}.tweets"))
    yield json.loads(line[len("RECORDS "):]), rows
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")


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
    records, rows = sent
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
    records, _ = sent
    _check_schedule(records["query"])
