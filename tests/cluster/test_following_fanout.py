"""A fan-out that follows its table (docs/design.md, "A fan-out that follows its table") on the session's real
3-node cluster (RF 2): the Twitter shape with follow=True, while four clients with clocks up to 50 ms apart write
tweets (new, edited, moved to another author, deleted, some expiring) and follows (added, removed, some expiring, an
author following themself), retrying some writes with a new timestamp. After the queues drain the timeline must be the
join of the tables as they are (read at ALL), and `ctl verify` must find nothing. A following flow deployed over
existing tweets and follows starts paused, and `ctl trigger backfill` copies the follows, resumes it and fills it, with
follows and tweets changing meanwhile.
"""
from __future__ import annotations

import json
import random
import threading
import time

import pytest

from helpers import create_empty, deploy_flow_text, drain, run_ctl, verify_json
from verifier import shared

KS = "joins"
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TABLE IF NOT EXISTS {KS}.tweets (tweet_id int PRIMARY KEY, author_id int, body text);
CREATE TABLE IF NOT EXISTS {KS}.followers (user_id int, follower_id int, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS {KS}.timeline (user_id int, tweet_id int, author_id int, body text,
  PRIMARY KEY (user_id, tweet_id));
CREATE TABLE IF NOT EXISTS {KS}.old_tweets (tweet_id int PRIMARY KEY, author_id int, body text);
CREATE TABLE IF NOT EXISTS {KS}.old_followers (user_id int, follower_id int, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS {KS}.old_timeline (user_id int, tweet_id int, author_id int, body text,
  PRIMARY KEY (user_id, tweet_id));
"""
TABLES = ["tweets", "followers", "timeline", "old_tweets", "old_followers", "old_timeline"]
INTERNAL = ["async_join_joins_timeline", "async_follows_joins_timeline", "async_join_joins_old",
            "async_follows_joins_old"]


def flows(name: str, prefix: str) -> str:
    return f"""
from async_triggers.flows import FanOut, Flow, Write, row, source as s

COLUMNS = dict(tweet_id=s.tweet_id, author_id=s.author_id, body=s.body)
FLOWS = [Flow(name="{name}", source="{KS}.{prefix}tweets", steps=[
    Write("{KS}.{prefix}timeline", user_id=s.author_id, **COLUMNS),
    FanOut("{KS}.{prefix}followers", match={{"user_id": s.author_id}}, follow=True)
    .write("{KS}.{prefix}timeline", user_id=row.follower_id, **COLUMNS)])]
"""


AUTHORS = range(1, 6)
READERS = range(1, 16)   # authors among them: some follow themselves or each other
TTL = 8
LONG_TTL = 120   # seconds: longer than a backfill takes here


@pytest.fixture(scope="module")
def verifier(cluster_settings):
    return shared(cluster_settings)


@pytest.fixture(scope="module")
def flow(cluster_settings, tmp_path_factory, verifier):
    from async_triggers.cql import connect
    from async_triggers.cql_script import run_text
    with connect(cluster_settings) as s:   # an earlier session's internal tables, if the cluster was kept
        run_text(s, SCHEMA)
        for t in INTERNAL:
            s.execute(f"DROP TABLE IF EXISTS {KS}.{t}")
    create_empty(cluster_settings, SCHEMA, KS, TABLES)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("joins"), flows("joins_timeline", ""))


def execute(session, cql: str, args=(), consistency: str = "QUORUM"):
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return session.execute(SimpleStatement(cql, consistency_level=getattr(ConsistencyLevel, consistency)), args)


def joined(session, prefix: str = "") -> set[tuple]:
    """What the timeline should hold: each tweet in its author's timeline and its author's followers', read at ALL."""
    follows: dict[int, set[int]] = {}
    for r in execute(session, f"SELECT user_id, follower_id FROM {KS}.{prefix}followers", consistency="ALL"):
        follows.setdefault(r.user_id, set()).add(r.follower_id)
    out = set()
    for t in execute(session, f"SELECT tweet_id, author_id, body FROM {KS}.{prefix}tweets", consistency="ALL"):
        if t.author_id is None:
            continue
        for user in {t.author_id} | follows.get(t.author_id, set()):
            out.add((user, t.tweet_id, t.author_id, t.body))
    return out


def timeline(session, prefix: str = "") -> set[tuple]:
    return {tuple(r) for r in execute(session, f"SELECT user_id, tweet_id, author_id, body FROM {KS}.{prefix}timeline",
                                      consistency="ALL")}


def write(session, rng: random.Random, skew_us: int, prefix: str = "") -> None:
    """One client write of a tweet or a follow, at the client's clock; one in ten retried with a new timestamp."""
    tweet, author, reader = rng.randrange(40), rng.choice(AUTHORS), rng.choice(READERS)
    roll = rng.random()
    ttl = f"TTL {TTL} AND " if rng.random() < 0.1 else ""
    if roll < 0.25:
        cql = f"INSERT INTO {KS}.{prefix}tweets (tweet_id, author_id, body) VALUES (%s, %s, %s) USING {ttl}TIMESTAMP %s"
        args = lambda ts, v=(tweet, author, f"t{tweet}-{rng.randrange(1000)}"): v + (ts,)
    elif roll < 0.35:
        cql = f"UPDATE {KS}.{prefix}tweets USING TIMESTAMP %s SET body = %s WHERE tweet_id = %s"
        args = lambda ts, v=(f"edit-{rng.randrange(1000)}", tweet): (ts,) + v
    elif roll < 0.45:
        cql = f"UPDATE {KS}.{prefix}tweets USING TIMESTAMP %s SET author_id = %s WHERE tweet_id = %s"
        args = lambda ts, v=(author, tweet): (ts,) + v
    elif roll < 0.52:
        cql = f"DELETE FROM {KS}.{prefix}tweets USING TIMESTAMP %s WHERE tweet_id = %s"
        args = lambda ts, v=(tweet,): (ts,) + v
    elif roll < 0.80:
        cql = f"INSERT INTO {KS}.{prefix}followers (user_id, follower_id) VALUES (%s, %s) USING {ttl}TIMESTAMP %s"
        args = lambda ts, v=(author, reader): v + (ts,)
    else:
        cql = f"DELETE FROM {KS}.{prefix}followers USING TIMESTAMP %s WHERE user_id = %s AND follower_id = %s"
        args = lambda ts, v=(author, reader): (ts,) + v
    execute(session, cql, args(int(time.time() * 1_000_000) + skew_us), consistency=rng.choice(("ONE", "QUORUM")))
    if rng.random() < 0.1:
        execute(session, cql, args(int(time.time() * 1_000_000) + skew_us))


def client(session, rng: random.Random, skew_us: int, writes: int, errors: list, prefix: str = "") -> None:
    try:
        for _ in range(writes):
            write(session, rng, skew_us, prefix)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def test_should_keep_the_join_under_racing_tweets_follows_and_unfollows(flow, verifier, session):
    errors: list = []
    threads = [threading.Thread(target=client, args=(session, random.Random(seed), skew, 150, errors))
               for seed, skew in enumerate((0, -50_000, 30_000, 50_000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    drain(session, "joins_timeline", "joins_timeline_follows")
    time.sleep(TTL + 2)   # every tweet and follow written with a TTL has expired, with its rows
    want, got = joined(session), timeline(session)
    assert got == want, f"unexpected {sorted(got - want)[:8]}, missing {sorted(want - got)[:8]}"
    assert len({w[0] for w in want}) >= 8, want   # followers' timelines, not only authors'
    assert verifier.problems("joins_timeline") == []


def test_should_bring_an_authors_tweets_on_follow_and_take_them_on_unfollow(flow, verifier, session):
    for i in range(100, 106):
        execute(session, f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES (%s, 77, %s)", (i, f"b{i}"))
    drain(session, "joins_timeline")
    execute(session, f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (77, 500)")
    drain(session, "joins_timeline_follows")
    mine = lambda: {r.tweet_id for r in execute(session, f"SELECT tweet_id FROM {KS}.timeline WHERE user_id = 500",
                                                consistency="ALL")}
    assert mine() == set(range(100, 106))
    execute(session, f"DELETE FROM {KS}.followers WHERE user_id = 77 AND follower_id = 500")
    drain(session, "joins_timeline_follows")
    assert mine() == set()
    assert verifier.problems("joins_timeline") == []


def test_should_repair_a_following_flow_at_its_own_stamps_and_keep_following_after(flow, verifier, session,
                                                                                   cluster_settings):
    """Timeline rows lost (a truncate leaves no tombstone) and a row that is not the flow's (written by hand at an old
    timestamp), found by `ctl verify` and mended by `--repair` at the flow's own stamps: an unfollow then takes the
    repaired rows out (a repair's write above those stamps would outlive the unfollow's delete), a follow brings them
    back, a tweet reaches the follower."""
    for i in range(300, 304):
        execute(session, f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES (%s, 88, %s)", (i, f"r{i}"))
    execute(session, f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (88, 600)")
    drain(session, "joins_timeline", "joins_timeline_follows")
    execute(session, f"TRUNCATE {KS}.timeline", consistency="ALL")
    execute(session, f"INSERT INTO {KS}.timeline (user_id, tweet_id, author_id, body) VALUES (900, 900, 1, 'stray') "
                     "USING TIMESTAMP 1000")
    assert verifier.problems("joins_timeline") != []
    code, tables = verify_json(cluster_settings, "joins_timeline", "--repair")
    by_table = {t["table"]: t for t in tables}
    assert code == 0, json.dumps(tables)
    assert by_table[f"{KS}.timeline"]["repaired"] == {"written": len(joined(session)), "deleted": 1,
                                                       "not_repaired": 0, "raised": 0}, by_table
    assert timeline(session) == joined(session)
    assert verifier.problems("joins_timeline") == []

    mine = lambda: {r.tweet_id for r in execute(session, f"SELECT tweet_id FROM {KS}.timeline WHERE user_id = 600",
                                                consistency="ALL")}
    assert mine() == set(range(300, 304))
    execute(session, f"DELETE FROM {KS}.followers WHERE user_id = 88 AND follower_id = 600")
    drain(session, "joins_timeline_follows")
    assert mine() == set(), "an unfollow takes out the rows a repair wrote"
    execute(session, f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (88, 600)")
    execute(session, f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES (304, 88, 'after')")
    drain(session, "joins_timeline", "joins_timeline_follows")
    assert mine() == set(range(300, 305))
    assert timeline(session) == joined(session)
    assert verifier.problems("joins_timeline") == []


def test_should_backfill_a_following_flow_deployed_over_existing_rows(flow, verifier, session, cluster_settings,
                                                                      tmp_path_factory):
    rng = random.Random(7)
    for _ in range(300):
        write(session, rng, 0, "old_")
    # follows that outlive the copy and expire after it (CQL reads no TTL of a row of key columns only): their
    # timeline rows, the backfill's and a later tweet's, must leave with them
    for follower in (600, 601):
        execute(session, f"INSERT INTO {KS}.old_followers (user_id, follower_id) VALUES (1, %s) USING TTL {LONG_TTL}",
                (follower,))
    expired_at = time.time() + LONG_TTL
    execute(session, f"INSERT INTO {KS}.old_tweets (tweet_id, author_id, body) VALUES (900, 1, 'before')")
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("joins_old"), flows("joins_old", "old_"))
    from async_triggers import status
    # its fan-out table has rows: paused until the backfill has copied them (its tasks wait in the backup maps)
    assert "joins_old" in status.paused_flows(session)
    errors: list = []
    live = threading.Thread(target=client, args=(session, random.Random(8), 0, 60, errors, "old_"))
    live.start()   # tweets and follows change while the backfill runs
    done = run_ctl(cluster_settings, "trigger", "backfill", "joins_old", "--master", "local[2]", timeout=900)
    live.join()
    assert not errors, errors
    assert done.returncode == 0, done.stdout + done.stderr
    assert "copied for its following fan-out" in done.stderr + done.stdout
    assert "joins_old" not in status.paused_flows(session)
    drain(session, "joins_old", "joins_old_follows")
    time.sleep(TTL + 2)
    want, got = joined(session, "old_"), timeline(session, "old_")
    assert got == want, f"unexpected {sorted(got - want)[:8]}, missing {sorted(want - got)[:8]}"
    assert verifier.problems("joins_old") == []
    assert time.time() < expired_at - 5, "the backfill outlasted the follows meant to expire after it"
    execute(session, f"INSERT INTO {KS}.old_tweets (tweet_id, author_id, body) VALUES (901, 1, 'after')")
    drain(session, "joins_old")
    readers = lambda t: {r.user_id for r in execute(
        session, f"SELECT user_id FROM {KS}.old_timeline WHERE tweet_id = %s ALLOW FILTERING", (t,), consistency="ALL")}
    assert {600, 601} <= readers(900) and {600, 601} <= readers(901)
    time.sleep(max(0.0, expired_at - time.time()) + 2)
    assert not {600, 601} & (readers(900) | readers(901)), "rows through an expired follow stayed"
    want, got = joined(session, "old_"), timeline(session, "old_")
    assert got == want, f"unexpected {sorted(got - want)[:8]}, missing {sorted(want - got)[:8]}"
    assert verifier.problems("joins_old") == []


def test_should_backfill_exactly_after_the_flow_was_dropped_while_follows_changed(flow, verifier, session,
                                                                                  cluster_settings, tmp_path_factory):
    """Dropped, then follows and tweets change while no flow runs (unfollows, follows, a tweet moved to another
    author, tweets deleted), then deployed anew and backfilled: what the plugin kept for the old deploy (its copy of
    the follows, its join index) must not bring back what changed, in the backfill or in the tasks after it."""
    dropped = run_ctl(cluster_settings, "trigger", "drop", "joins_old", "--drain")
    assert dropped.returncode == 0, dropped.stdout + dropped.stderr
    follows = sorted((r.user_id, r.follower_id)
                     for r in execute(session, f"SELECT user_id, follower_id FROM {KS}.old_followers", consistency="ALL"))
    assert len(follows) > 10
    for user, follower in follows[::3]:   # unfollowed while no flow runs
        execute(session, f"DELETE FROM {KS}.old_followers WHERE user_id = %s AND follower_id = %s", (user, follower))
    execute(session, f"INSERT INTO {KS}.old_followers (user_id, follower_id) VALUES (1, 99)")
    tweets = sorted(r.tweet_id for r in execute(session, f"SELECT tweet_id FROM {KS}.old_tweets", consistency="ALL"))
    for t in tweets[::4]:
        execute(session, f"DELETE FROM {KS}.old_tweets WHERE tweet_id = %s", (t,))
    execute(session, f"UPDATE {KS}.old_tweets SET author_id = 2 WHERE tweet_id = %s", (tweets[1],))
    # the target is the user's: what the old deploy wrote there goes as after any drop, and the backfill fills it
    execute(session, f"TRUNCATE {KS}.old_timeline", consistency="ALL")
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("joins_old_again"), flows("joins_old", "old_"))
    done = run_ctl(cluster_settings, "trigger", "backfill", "joins_old", "--master", "local[2]", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    for i, author in enumerate(AUTHORS):   # new tweets fan out through what the plugin keeps now
        execute(session, f"INSERT INTO {KS}.old_tweets (tweet_id, author_id, body) VALUES (%s, %s, 'after')",
                (1000 + i, author))
    drain(session, "joins_old", "joins_old_follows")
    want, got = joined(session, "old_"), timeline(session, "old_")
    assert got == want, f"unexpected {sorted(got - want)[:8]}, missing {sorted(want - got)[:8]}"
    assert verifier.problems("joins_old") == []
