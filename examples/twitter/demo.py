"""The main job: a 2-node cluster; a power-law follower graph loaded with Spark; the Twitter example deployed (its
timeline flow starts paused, as a following fan-out does over follows already there) and backfilled with Spark, which
copies the follows and resumes it; 1,000 tweets written (acknowledged before their fan-out) while users follow and
unfollow, some tweets deleted; the queues drained; and Spark verifying every timeline row against the join of the
tables as they are, and every user's tweet count."""
from __future__ import annotations

import dataclasses
import datetime as dt
import random
import time
from pathlib import Path
from typing import Callable

from async_triggers import aggregates, cluster as cluster_mod, config, deploy, follows, status
from async_triggers.cql import connect
from async_triggers.cql_script import run_file
from async_triggers.errors import AsyncTriggersError, VerifyError
from async_triggers.flow_file import load_flow_file

from .workload import INSERT_TWEET, WriteStats, change_follows, write_tweets

Progress = Callable[[str], None]
FLOW, COUNTS = "twitter_timeline", "twitter_tweet_counts"
TABLES = ("tweets", "timeline", "followers", "users", "tweet_counts")
SCHEMA = Path(__file__).resolve().parent / "schema.cql"
FLOWS = Path(__file__).resolve().parent / "flows.py"
ROUNDS = 10   # the tweets, follows and unfollows are written in this many alternating rounds


@dataclasses.dataclass(frozen=True)
class Differences:
    """What `ctl verify` found in one table."""
    expected: int
    present: int
    missing: int
    unexpected: int
    wrong_value: int

    @classmethod
    def of(cls, results, table: str) -> "Differences":
        found = [r for r in results if r.table == table]
        if not found:
            raise VerifyError(f"the verification returned no result for {table}")
        r = found[0]
        return cls(r.expected, r.present, r.missing, r.unexpected, r.wrong_value)

    @property
    def ok(self) -> bool:
        return self.missing == self.unexpected == self.wrong_value == 0


@dataclasses.dataclass(frozen=True)
class DemoReport:
    users: int
    celebrity: tuple[int, int]
    tweets: int
    deleted: int
    follows: int
    unfollows: int
    median_ack_ms: float
    p99_ack_ms: float
    drain_seconds: float
    timeline: Differences
    counts: Differences

    @property
    def ok(self) -> bool:
        return self.timeline.ok and self.counts.ok

    def lines(self) -> list[str]:
        t, c = self.timeline, self.counts
        return [
            f"users                 {self.users} (most followed: user {self.celebrity[0]} with "
            f"{self.celebrity[1]} followers)",
            f"tweets written        {self.tweets}, then {self.deleted} deleted",
            f"follows, unfollows    {self.follows}, {self.unfollows} (between the tweets)",
            f"median write latency  {self.median_ack_ms:.2f} ms (p99 {self.p99_ack_ms:.2f} ms), tweets",
            f"drained in            {self.drain_seconds:.1f} s after the last acknowledgement",
            f"timeline rows         expected {t.expected}, present {t.present}: missing {t.missing}, "
            f"unexpected {t.unexpected}, wrong value {t.wrong_value}",
            f"tweet counts          expected {c.expected}, present {c.present}: missing {c.missing}, "
            f"unexpected {c.unexpected}, wrong value {c.wrong_value}",
        ]


def empty(session) -> None:
    """The Twitter schema with nothing in it: the example's flows dropped if deployed, its tables emptied and the
    tables its flows keep beside them (join index, copy of the follows, members) removed; the deploy makes them anew.
    (TRUNCATE is no write, so a flow left deployed would keep what it derived from the truncated rows.)"""
    run_file(session, SCHEMA)
    deployed = deploy.read_deployed(session)
    for flow in load_flow_file(FLOWS):
        if flow.name in deployed:
            deploy.drop(session, flow.name)
    for table in TABLES:
        session.execute(f"TRUNCATE twitter.{table}")
    for table in (follows.join_table(FLOW), follows.copy_table(FLOW), aggregates.members_table("tweet_counts")):
        session.execute(f"DROP TABLE IF EXISTS twitter.{table}")


def _follow_changes(session, authors: list[int], celebrity: int, n_users: int, n_follows: int, n_unfollows: int,
                    rng: random.Random) -> tuple[list, list]:
    """Follows: one in ten by a new user of the celebrity, the rest of the authors by users of the graph. Unfollows:
    one in ten of the celebrity, the rest of authors, each of a follower the graph gave them."""
    added = [(celebrity, n_users + 1 + i) if i % 10 == 0 else (rng.choice(authors), rng.randint(1, n_users))
             for i in range(n_follows)]
    removed: set[tuple[int, int]] = set()
    query = session.prepare('SELECT "follower_id" FROM "twitter"."followers" WHERE "user_id" = ? LIMIT ?')
    celebrity_followers = [r.follower_id for r in session.execute(query, (celebrity, n_unfollows))]
    removed.update((celebrity, f) for f in celebrity_followers[:max(1, n_unfollows // 10)])
    for author in rng.sample(sorted(set(authors)), len(set(authors))):
        if len(removed) >= n_unfollows:
            break
        removed.update((author, r.follower_id) for r in session.execute(query, (author, 1)))
    return added, sorted(removed)


def run(settings: config.Settings, nodes: int = 2, users: int = 20_000, tweets: int = 1_000, new_follows: int = 300,
        unfollows: int = 100, deletes: int = 50, min_celebrity: int = 10_000, seed: int = 42,
        master: str = "local[2]", progress: Progress = lambda _: None) -> DemoReport:
    from async_triggers.spark_jobs import backfill, load_twitter, verify

    info = cluster_mod.up(settings, nodes=nodes, name=settings.cluster_name, progress=progress)
    settings = settings.with_hosts(info.contact_points)
    with connect(settings) as session:
        progress("creating the Twitter schema (examples/twitter/schema.cql), its tables empty")
        empty(session)

    progress(f"loading a power-law follower graph of {users} users with Spark")
    code = load_twitter.main(["--users", str(users), "--min-celebrity", str(min_celebrity), "--seed", str(seed),
                              "--contact-points", ",".join(settings.contact_points), "--master", master])
    if code != 0:
        raise AsyncTriggersError(f"loading the follower graph failed (exit {code})")
    graph = dict(n_users=max(users, min_celebrity + 1), seed=seed, min_celebrity=min_celebrity)
    celebrity = load_twitter.celebrities(1, **graph)[0]

    with connect(settings) as session:
        progress("deploying the flows (examples/twitter/flows.py) over the follows already there")
        deploy.deploy(session, load_flow_file(FLOWS), progress=progress)
    progress(f"backfilling {FLOW} with Spark: the follows copied, the flow resumed")
    backfill.run_backfill(FLOW, connection=settings.connection, master=master, restart=True, progress=progress)

    rng = random.Random(seed)
    # The celebrity's tweets are the heavy fan-outs; the other authors are drawn uniformly, as in the report.
    authors = [celebrity[0] if i % 100 == 0 else rng.randint(1, graph["n_users"]) for i in range(tweets)]
    with connect(settings) as session:
        added, removed = _follow_changes(session, authors, celebrity[0], graph["n_users"], new_follows, unfollows,
                                         rng)
        progress(f"writing {tweets} tweets one at a time (the celebrity writes every 100th), {len(added)} follows "
                 f"and {len(removed)} unfollows between them, in {ROUNDS} rounds")
        insert, written = session.prepare(INSERT_TWEET), []
        for i in range(ROUNDS):
            part = slice(i * tweets // ROUNDS, (i + 1) * tweets // ROUNDS)
            written.append(write_tweets(session, authors[part], rng, insert=insert))
            change_follows(session, added[i::ROUNDS], removed[i::ROUNDS], rng)
        stats = WriteStats(count=sum(w.count for w in written),
                           latencies_ms=tuple(ms for w in written for ms in w.latencies_ms),
                           tweet_ids=tuple(t for w in written for t in w.tweet_ids))
        gone = rng.sample(stats.tweet_ids, min(deletes, stats.count))
        progress(f"deleting {len(gone)} of them")
        delete = session.prepare('DELETE FROM "twitter"."tweets" WHERE "tweet_id" = ?')
        for tweet in gone:
            session.execute(delete, (tweet,))
        acked = time.monotonic()
        since = dt.datetime.utcnow()
        progress("waiting for the queues to drain on every node")
        deployed = deploy.read_deployed(session)
        status.wait_drained(session, [FLOW, COUNTS, *follows.companions_of(deployed, [FLOW])], since,
                            timeout=1800, poll=1.0)
        drained = time.monotonic() - acked

    progress("verifying every timeline row and every tweet count with Spark")
    timeline = verify.run_verify(deployed[FLOW], master=master, connection=settings.connection)
    counts = verify.run_verify(deployed[COUNTS], master=master, connection=settings.connection)
    return DemoReport(users=graph["n_users"], celebrity=celebrity, tweets=stats.count, deleted=len(gone),
                      follows=len(added), unfollows=len(removed), median_ack_ms=stats.median_ms,
                      p99_ack_ms=stats.percentile_ms(99), drain_seconds=drained,
                      timeline=Differences.of(timeline, "twitter.timeline"),
                      counts=Differences.of(counts, "twitter.tweet_counts"))
