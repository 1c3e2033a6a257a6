"""The JVM sender's Python half without a JVM: the plans it hands to ``JvmLoad``, the records it reads back, the
factories that can be sent from the JVM, and a jar that does not compile (the real sender: tests/cluster)."""
from __future__ import annotations

import struct

import pytest

from async_triggers.benchmarks.apps.cassandra import FanOutFactory, StoreFactory, Target
from async_triggers.benchmarks.apps.external_queue import ExternalQueueApp
from async_triggers.benchmarks.apps.integrated import IntegratedApp
from async_triggers.benchmarks.apps.synchronous import SynchronousApp
from async_triggers.benchmarks.apps.tweets import TweetSource
from async_triggers.benchmarks.experiments.capacity import ReleaseVersionApp
from async_triggers.spark_jobs import jvm_sender
from async_triggers.spark_jobs.errors import LoadGenError, SparkSetupError
from async_triggers.spark_jobs.sending import Record

TARGET = Target(("127.0.0.1",), keyspace="twitter", write_consistency="QUORUM", retry_s=12.0)


def _record_bytes(seq, scheduled, sent, acked, status, late, waited, error=b""):
    return struct.pack(">idddbbbi", seq, scheduled, sent, acked, status, late, waited, len(error)) + error


def test_should_read_back_ok_failed_and_dropped_requests_as_the_python_dispatcher_records_them():
    nan = float("nan")
    data = struct.pack(">i", 3) + b"".join([
        _record_bytes(0, 10.0, 10.001, 10.004, 0, 0, 0),
        _record_bytes(1, 10.5, 10.6, 12.0, 1, 1, 1, "WriteTimeoutException: é".encode()),
        _record_bytes(2, 11.0, nan, nan, 2, 1, 1)])
    assert jvm_sender.decode_records(4, data) == [
        Record(4, 0, 10.0, 10.001, 10.004, "ok", False, None, False),
        Record(4, 1, 10.5, 10.6, 12.0, "error", True, "WriteTimeoutException: é", True),
        Record(4, 2, 11.0, None, None, "dropped", True, None, True)]


def test_should_refuse_an_answer_with_bytes_left_over():
    data = struct.pack(">i", 1) + _record_bytes(0, 1.0, 1.0, 1.0, 0, 0, 0) + b"\x00"
    with pytest.raises(LoadGenError, match="task 2: the JVM sender's answer has 1 bytes too many"):
        jvm_sender.decode_records(2, data)


def test_should_plan_each_tweet_as_the_python_sender_draws_it():
    requests = IntegratedApp(StoreFactory(TARGET), 50, jvm=True).jvm_requests()
    assert (requests.kind, requests.consistency, requests.retry_s) == (jvm_sender.TWEET, "QUORUM", 12.0)
    assert requests.cql.startswith('INSERT INTO twitter."tweets"')
    plan = jvm_sender.encode_plan([0.0, 0.25], seed=9, task=1, requests=requests)
    (n,), at = struct.unpack_from(">i", plan), 4
    assert n == 2
    for seq, offset in enumerate([0.0, 0.25]):
        got_offset, author, node, clock_seq, length = struct.unpack_from(">diqii", plan, at)
        at += struct.calcsize(">diqii")
        body = plan[at:at + length].decode()
        at += length
        assert (got_offset, author, body, node, clock_seq) == (offset, *TweetSource(50, 9, 1).parts(seq)[:2],
                                                              *TweetSource(50, 9, 1).parts(seq)[2:])
    assert at == len(plan)


def test_should_plan_a_query_as_offsets_alone():
    requests = ReleaseVersionApp(TARGET, jvm=True).jvm_requests()
    assert (requests.kind, requests.cql) == (jvm_sender.QUERY, "SELECT release_version FROM system.local")
    plan = jvm_sender.encode_plan([0.0, 0.5, 1.5], seed=1, task=0, requests=requests)
    assert plan == struct.pack(">iddd", 3, 0.0, 0.5, 1.5)


def test_should_send_from_python_unless_asked_and_the_store_is_cassandras():
    assert IntegratedApp(StoreFactory(TARGET), 50).jvm_requests() is None
    assert IntegratedApp(lambda slot: object(), 50, jvm=True).jvm_requests() is None     # a local store: Python
    assert ReleaseVersionApp(TARGET).jvm_requests() is None
    assert ReleaseVersionApp(TARGET, blocking=True, jvm=True).jvm_requests() is None
    assert jvm_sender.jvm_requests(lambda slot: None) is None


def test_should_refuse_a_tweet_sender_without_its_tweets(monkeypatch):
    requests = jvm_sender.JvmRequests(jvm_sender.TWEET, "INSERT ...", "ONE", ("127.0.0.1",), 9042)
    with pytest.raises(LoadGenError, match="a JVM sender of kind 1 needs its tweets, found none"):
        jvm_sender.run(None, [jvm_sender.Phase(1, 10)], 1, 1, requests)


def test_should_plan_the_synchronous_apps_tweets_with_their_fan_out_one_request_per_thread():
    app = SynchronousApp(StoreFactory(TARGET), FanOutFactory(TARGET), 50, jvm=True)
    requests = app.jvm_requests()
    assert (requests.kind, requests.consistency, requests.blocking) == (jvm_sender.FANOUT, "QUORUM", True)
    options = dict(requests.options)
    assert options["followers"] == 'SELECT "follower_id" FROM twitter."followers" WHERE "user_id" = ?'
    assert options["timeline"].startswith('INSERT INTO twitter."timeline"')
    assert (options["read_consistency"], options["concurrency"]) == ("ONE", str(TARGET.concurrency))
    # the same tweets as the integrated app's, so both approaches write the same load
    tweets = IntegratedApp(StoreFactory(TARGET), 50, jvm=True).jvm_requests()
    assert (jvm_sender.encode_plan([0.0, 0.25], 9, 1, requests)
            == jvm_sender.encode_plan([0.0, 0.25], 9, 1, tweets))
    assert SynchronousApp(StoreFactory(TARGET), FanOutFactory(TARGET), 50).jvm_requests() is None
    assert SynchronousApp(StoreFactory(TARGET), lambda slot: object(), 50, jvm=True).jvm_requests() is None


def test_should_plan_the_queue_apps_tweets_with_the_broker_they_are_published_to():
    app = ExternalQueueApp("amqp://guest:guest@127.0.0.1:35672/%2F", StoreFactory(TARGET), 50, queue="q1", jvm=True)
    requests = app.jvm_requests()
    assert (requests.kind, requests.consistency, requests.blocking) == (jvm_sender.PUBLISH, "QUORUM", True)
    assert dict(requests.options) == {"url": "amqp://guest:guest@127.0.0.1:35672/%2F", "queue": "q1"}
    tweets = IntegratedApp(StoreFactory(TARGET), 50, jvm=True).jvm_requests()
    assert jvm_sender.encode_plan([0.0], 3, 0, requests) == jvm_sender.encode_plan([0.0], 3, 0, tweets)
    assert ExternalQueueApp("amqp://x", StoreFactory(TARGET), 50).jvm_requests() is None
    bad = jvm_sender.JvmRequests(jvm_sender.PUBLISH, "INSERT ...", "ONE", ("127.0.0.1",), 9042,
                                 tweets=lambda seed, task: None, options=(("url", "amqp://x"),), blocking=True)
    with pytest.raises(LoadGenError, match="kind 4 needs the option.s. queue"):
        jvm_sender.run(None, [jvm_sender.Phase(1, 10)], 1, 1, bad)


@pytest.mark.parametrize("fanout, message", [
    ((), "kind 3 needs the option.s. followers, timeline, read_consistency, concurrency"),
    ((("followers", "SELECT"), ("timeline", "INSERT"), ("read_consistency", "ONE"), ("concurrency", "0")),
     "'concurrency' must be a positive integer, found: '0'"),
    ((("followers", "SELECT"), ("timeline", " "), ("read_consistency", "ONE"), ("concurrency", "8")),
     "needs the option.s. timeline"),
])
def test_should_refuse_a_fan_out_sender_missing_an_option(fanout, message):
    requests = jvm_sender.JvmRequests(jvm_sender.FANOUT, "INSERT ...", "ONE", ("127.0.0.1",), 9042,
                                      tweets=lambda seed, task: None, options=fanout, blocking=True)
    with pytest.raises(LoadGenError, match=message):
        jvm_sender.run(None, [jvm_sender.Phase(1, 10)], 1, 1, requests)


def test_should_keep_a_blocking_apps_concurrency_outstanding_and_refuse_none():
    requests = jvm_sender.JvmRequests(jvm_sender.FANOUT, "INSERT ...", "ONE", ("127.0.0.1",), 9042,
                                      tweets=lambda seed, task: None, blocking=True,
                                      options=(("followers", "S"), ("timeline", "I"), ("read_consistency", "ONE"),
                                              ("concurrency", "4")))
    with pytest.raises(LoadGenError, match="'concurrency' must be strictly positive, found: 0"):
        jvm_sender.run(None, [jvm_sender.Phase(1, 10)], 1, 1, requests, in_flight=256, concurrency=0)


def test_should_say_why_the_jvm_sender_did_not_compile_and_leave_no_jar(tmp_path, monkeypatch):
    sources = tmp_path / "jvm" / "org" / "x"
    sources.mkdir(parents=True)
    (sources / "Broken.java").write_text("package org.x; class Broken { int f() { return missing; } }\n")
    monkeypatch.setattr(jvm_sender, "SOURCES", tmp_path / "jvm")
    with pytest.raises(SparkSetupError, match=r"(?s)the JVM load generator did not compile \(javac exit 1\).*"
                                              r"Broken.java.*cannot find symbol"):
        jvm_sender.build_jar(tmp_path / "home", [])
    assert not list((tmp_path / "home" / "spark-jars").glob("*.jar"))
    # a source changed: another jar name, so a stale jar is never used
    before = jvm_sender.jar_path(tmp_path / "home")
    (sources / "Broken.java").write_text("package org.x; class Broken { }\n")
    assert jvm_sender.jar_path(tmp_path / "home") != before
    assert jvm_sender.build_jar(tmp_path / "home", []).is_file()

