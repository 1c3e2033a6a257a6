"""A following fan-out with a recency bound (docs/design.md, "A fan-out that follows its table") on the session's real
3-node cluster (RF 2): `FanOut(..., follow=True, recent=Recent(source.tweet_id, W))` keeps in each follower's timeline
the tweets whose timeuuid is within W of now. A backfill over existing tweets and follows brings only those, a tweet
stamped older than the bound is never fanned out, a follow brings only the author's recent tweets, a tweet leaves
every follower's timeline by itself when it grows older than the bound (its author's own row stays: that step has
no bound), and `ctl verify` says 0 before and after it left."""
from __future__ import annotations

import time
import uuid

import pytest

from helpers import create_empty, deploy_flow_text, drain, run_ctl
from verifier import shared

KS = "recentks"
W = 300                    # the bound, seconds: longer than a backfill takes here
EPOCH_OFFSET = 0x01B21DD213814000
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TABLE IF NOT EXISTS {KS}.tweets (tweet_id timeuuid PRIMARY KEY, author_id int, body text);
CREATE TABLE IF NOT EXISTS {KS}.followers (user_id int, follower_id int, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS {KS}.timeline (user_id int, tweet_id timeuuid, author_id int, body text,
  PRIMARY KEY (user_id, tweet_id));
"""
FLOWS = f"""
from async_triggers.flows import FanOut, Flow, Recent, Write, row, source as s

COLUMNS = dict(tweet_id=s.tweet_id, author_id=s.author_id, body=s.body)
FLOWS = [Flow(name="recent_timeline", source="{KS}.tweets", steps=[
    Write("{KS}.timeline", user_id=s.author_id, **COLUMNS),
    FanOut("{KS}.followers", match={{"user_id": s.author_id}}, follow=True, recent=Recent(s.tweet_id, {W}))
    .write("{KS}.timeline", user_id=row.follower_id, **COLUMNS)])]
"""
AUTHOR = 1


def timeuuid(age_s: float) -> uuid.UUID:
    """A timeuuid of ``age_s`` seconds ago (a random clock sequence and node)."""
    ticks = int((time.time() - age_s) * 1e7) + EPOCH_OFFSET
    rnd = uuid.uuid4().int
    return uuid.UUID(fields=(ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, ((ticks >> 48) & 0x0FFF) | 0x1000,
                             0x80 | (rnd >> 8 & 0x3F), rnd & 0xFF, rnd >> 16 & 0xFFFFFFFFFFFF))


def age(tweet: uuid.UUID) -> float:
    return time.time() - (tweet.time - EPOCH_OFFSET) / 1e7


def execute(session, cql: str, args=(), consistency: str = "QUORUM"):
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return session.execute(SimpleStatement(cql, consistency_level=getattr(ConsistencyLevel, consistency)), args)


def tweet(session, age_s: float, body: str) -> uuid.UUID:
    t = timeuuid(age_s)
    execute(session, f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES (%s, %s, %s)", (t, AUTHOR, body))
    return t


def follow(session, follower: int) -> None:
    execute(session, f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (%s, %s)", (AUTHOR, follower))


def timeline_of(session, user: int) -> dict[uuid.UUID, str]:
    return {r.tweet_id: r.body for r in execute(session, f"SELECT tweet_id, body FROM {KS}.timeline WHERE user_id = %s",
                                                (user,), consistency="ALL")}


@pytest.fixture(scope="module")
def verifier(cluster_settings):
    return shared(cluster_settings)


def test_should_keep_only_the_tweets_within_the_bound_through_backfill_follows_and_time(
        cluster_settings, session, verifier, tmp_path_factory):
    from async_triggers import status
    from async_triggers.cql import connect
    from async_triggers.cql_script import run_text
    with connect(cluster_settings) as s:   # an earlier session's internal tables, if the cluster was kept
        run_text(s, SCHEMA)
        for t in ("async_join_recent_timeline", "async_follows_recent_timeline"):
            s.execute(f"DROP TABLE IF EXISTS {KS}.{t}")
    create_empty(cluster_settings, SCHEMA, KS, ["tweets", "followers", "timeline"])
    ancient, fresh = tweet(session, 3600, "ancient"), tweet(session, 5, "fresh")
    follow(session, 10)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("recent"), FLOWS)
    assert "recent_timeline" in status.paused_flows(session)   # its follows are copied first
    done = run_ctl(cluster_settings, "trigger", "backfill", "recent_timeline", "--master", "local[2]", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    drain(session, "recent_timeline", "recent_timeline_follows")
    assert timeline_of(session, 10) == {fresh: "fresh"}, "the backfill brings only the tweets within the bound"
    assert set(timeline_of(session, AUTHOR)) == {ancient, fresh}, "the author's own rows have no bound"
    assert verifier.problems("recent_timeline") == []

    # live: a new tweet, one stamped older than the bound (never fanned out), one that leaves soon, an edit of an
    # old one (still out of the bound), then a new follower: it gets the recent tweets only
    new, stale = tweet(session, 0, "new"), tweet(session, 2 * W, "stale")
    leaving = tweet(session, W - 40, "leaving")
    execute(session, f"UPDATE {KS}.tweets SET body = 'ancient, edited' WHERE tweet_id = %s", (ancient,))
    follow(session, 11)
    drain(session, "recent_timeline", "recent_timeline_follows")
    within = {fresh: "fresh", new: "new", leaving: "leaving"}
    if age(leaving) < W - 5:   # the drain took less than 35 s (as it does): it is still there
        assert timeline_of(session, 10) == within and timeline_of(session, 11) == within
    assert set(timeline_of(session, AUTHOR)) == {ancient, fresh, new, stale, leaving}
    assert verifier.problems("recent_timeline") == []

    time.sleep(max(0.0, W - age(leaving)) + 2)   # it leaves every follower's timeline by itself
    follow(session, 12)
    drain(session, "recent_timeline_follows")
    assert timeline_of(session, 10) == timeline_of(session, 11) == timeline_of(session, 12) == {fresh: "fresh",
                                                                                                new: "new"}
    assert leaving in timeline_of(session, AUTHOR)
    assert verifier.problems("recent_timeline") == []
