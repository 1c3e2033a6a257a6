"""Flows feeding flows, and racing writes of one row, on the session's real 3-node cluster (RF 2).

- A cascade ``a -> b -> c``: the derived writes of the first flow are writes like any other, so the replicas of
  ``b`` capture the second flow's tasks; every current row of ``a`` reaches ``c``, also when the executor of many
  of the rows is killed with kill -9 mid-way.
- Racing writes: 200 tweets each written 4 times with increasing timestamps (a different author each time), sent
  concurrently in shuffled order, on the Twitter-shaped flow (the author's own row and the followers' rows, both
  traced by lineage): every timeline holds exactly what the last write of each tweet says.
"""
from __future__ import annotations

import random
import time

import pytest

from helpers import create_schema, deploy_flow_text, drain, write_followers
from async_triggers import cluster as cluster_mod


SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS cas WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS cas.a (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS cas.b (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS cas.c (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS cas.followers (user_id bigint, follower_id bigint, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS cas.tweets (tweet_id bigint PRIMARY KEY, author_id bigint, body text);
CREATE TABLE IF NOT EXISTS cas.timeline (user_id bigint, tweet_id bigint, author_id bigint, body text,
  PRIMARY KEY (user_id, tweet_id));
"""
FLOWS = """
from async_triggers.flows import FanOut, Flow, Write, row, source
TWEET = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)
FLOWS = [
    Flow(name="cas_ab", source="cas.a", steps=[Write("cas.b", id=source.id, v=source.v)]),
    Flow(name="cas_bc", source="cas.b", steps=[Write("cas.c", id=source.id, v=source.v)]),
    Flow(name="cas_timeline", source="cas.tweets",
         steps=[Write("cas.timeline", user_id=source.author_id, **TWEET),
                FanOut("cas.followers", match={"user_id": source.author_id})
                .write("cas.timeline", user_id=row.follower_id, **TWEET)]),
]
"""
AUTHORS = {1: [11, 12, 13], 2: [12, 21, 22, 23], 3: [13, 31], 4: list(range(400, 460))}   # followers overlap


@pytest.fixture(scope="module")
def flows(cluster_settings, tmp_path_factory):
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("cas"), FLOWS)
    write_followers(cluster_settings, "cas", [(a, f) for a, fs in AUTHORS.items() for f in fs])


def read_all(session, cql: str):
    """Read at ALL: a replica killed with kill -9 may have lost its last writes (the commit log syncs every 10 s),
    and a read at ONE from it would see an older value than the one every client saw acknowledged."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.ALL))


def rows(session, table):
    return {r.id: r.v for r in read_all(session, f"SELECT id, v FROM cas.{table}")}


def write_twice(session, ids, tag):
    """Each row written twice, the second time with a newer timestamp, concurrently in shuffled order."""
    from cassandra.concurrent import execute_concurrent
    now = int(time.time() * 1_000_000)
    statements = []
    for i in ids:
        statements.append((f"INSERT INTO cas.a (id, v) VALUES ({i}, 'first {i}') USING TIMESTAMP {now}", ()))
        statements.append((f"INSERT INTO cas.a (id, v) VALUES ({i}, '{tag} {i}') USING TIMESTAMP {now + 1}", ()))
    random.Random(len(ids)).shuffle(statements)
    results = execute_concurrent(session, statements, concurrency=32, raise_on_first_error=True)
    assert all(ok for ok, _ in results)


def test_should_carry_every_write_through_a_cascade(flows, session):
    write_twice(session, range(300), "last")
    drain(session, "cas_ab", "cas_bc")
    expected = {i: f"last {i}" for i in range(300)}
    assert rows(session, "a") == expected
    assert rows(session, "b") == expected
    assert rows(session, "c") == expected, "c misses rows of b: derived writes did not fire the next flow"


def test_should_carry_a_cascade_through_a_kill_9_of_an_executor(flows, session, cluster_settings):
    ids = range(1_000, 1_600)
    try:
        write_twice(session, ids, "killed")
        cluster_mod.kill_node(cluster_settings, "node2", name=cluster_settings.cluster_name)
        # writes go on while node2 is down and not yet convicted: they time out or fail, and clients retry
        from cassandra import ConsistencyLevel
        from cassandra.query import SimpleStatement
        for i in range(1_600, 1_700):
            statement = SimpleStatement(f"INSERT INTO cas.a (id, v) VALUES ({i}, 'during {i}')",
                                        consistency_level=ConsistencyLevel.ONE)
            for _ in range(60):
                try:
                    session.execute(statement, timeout=5)
                    break
                except Exception:  # noqa: BLE001 - a client retries a failed write (with a new timestamp)
                    time.sleep(0.5)
            else:
                pytest.fail(f"write {i} failed for 30 s")
    finally:
        cluster_mod.start_node(cluster_settings, "node2", name=cluster_settings.cluster_name)
    drain(session, "cas_ab", "cas_bc", timeout=600)
    a = rows(session, "a")
    assert {i: a[i] for i in list(ids) + list(range(1_600, 1_700))} == \
        {**{i: f"killed {i}" for i in ids}, **{i: f"during {i}" for i in range(1_600, 1_700)}}
    assert rows(session, "c") == a


def test_should_converge_on_the_last_write_of_tweets_written_four_times_in_shuffled_order(flows, session):
    from cassandra.concurrent import execute_concurrent
    rng = random.Random(42)
    now = int(time.time() * 1_000_000)
    last: dict[int, int] = {}
    statements = []
    for tweet in range(200):
        for attempt in range(4):
            author = rng.choice(list(AUTHORS))
            statements.append((f"INSERT INTO cas.tweets (tweet_id, author_id, body) VALUES ({tweet}, {author}, "
                               f"'t{tweet} a{attempt}') USING TIMESTAMP {now + attempt}", ()))
            last[tweet] = author
    rng.shuffle(statements)
    assert all(ok for ok, _ in execute_concurrent(session, statements, concurrency=48, raise_on_first_error=True))
    drain(session, "cas_timeline", timeout=600)
    expected = {(author, tweet) for tweet, author in last.items()}
    expected |= {(f, tweet) for tweet, author in last.items() for f in AUTHORS[author]}
    got = {(r.user_id, r.tweet_id) for r in read_all(session, "SELECT user_id, tweet_id FROM cas.timeline")}
    assert got - expected == set(), f"rows of superseded authors left: {sorted(got - expected)[:10]}"
    assert expected - got == set(), f"rows of the last write missing: {sorted(expected - got)[:10]}"
    bodies = {r.tweet_id: r.body for r in read_all(session, "SELECT tweet_id, body FROM cas.timeline")}
    assert all(body == f"t{t} a3" for t, body in bodies.items())
