"""What a follow, an unfollow and an aggregate update cost with the Twitter example (examples/twitter/flows.py): its
timeline fan-out follows the follows, and its second flow keeps each user's tweet count.

- A follow of an author with N tweets: the time from the follow's acknowledgement until all N tweets are in the new
  follower's timeline (read at ALL every 5 ms), and the time until an unfollow has taken them all out again. The
  follow's task writes N timeline rows: one read of the join index partition of the author (N rows) and N writes.
- A tweet by an author with K tweets already: the time from its acknowledgement until the author's count says K + 1.
  The aggregate recomputes the author's group from its members partition (K + 1 rows), so this grows with K.

Each figure is the median of ``--repeat`` follows, unfollows or tweets, one at a time on an idle cluster (the queues
drained before each).

    python -m async_triggers.benchmarks.experiments.join_cost [--sizes 1,10,100,1000] [--repeat 5] [--nodes 3]
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time

from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement
from cassandra.util import uuid_from_time

from async_triggers import deploy, status
from async_triggers.benchmarks.harness.twitter_example import TWITTER_FLOWS, cluster_settings
from async_triggers.cql import connect
from async_triggers.examples.twitter.demo import empty
from async_triggers.examples.twitter.workload import INSERT_TWEET, tweet_body, write_tweets
from async_triggers.flow_file import load_flow_file

FLOWS = ["twitter_timeline", "twitter_timeline_follows", "twitter_tweet_counts"]
FOLLOWER_BASE = 1_000_000   # the followers of the measurement: users with no tweets and no other follow


def _all(session, cql: str, args=()) -> list:
    return list(session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.ALL), args))


def _until(check, timeout: float = 300) -> float:
    """Seconds until ``check()`` holds, polled every 5 ms."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"not reached within {timeout} s")
        time.sleep(0.005)
    return time.monotonic() - started


def _drained(session) -> None:
    status.wait_drained(session, FLOWS, dt.datetime.utcnow(), timeout=900, poll=0.5)


def _seed_tweets(session, author: int, n: int, rng: random.Random) -> None:
    insert = session.prepare(INSERT_TWEET)
    now = time.time()
    rows = [(uuid_from_time(now + i * 1e-6), author, tweet_body(rng, 40), int(now * 1000)) for i in range(n)]
    execute_concurrent_with_args(session, insert, rows, concurrency=32, raise_on_first_error=True)


def measure(session, sizes: list[int], repeat: int, rng: random.Random) -> list[tuple[int, float, float, float]]:
    """Per size N: (N, median follow s, median unfollow s, median count update s)."""
    follow = session.prepare("INSERT INTO twitter.followers (user_id, follower_id) VALUES (?, ?)")
    unfollow = session.prepare("DELETE FROM twitter.followers WHERE user_id = ? AND follower_id = ?")
    follow.consistency_level = unfollow.consistency_level = ConsistencyLevel.QUORUM
    timeline = "SELECT count(*) FROM twitter.timeline WHERE user_id = %s"
    count = "SELECT tweets FROM twitter.tweet_counts WHERE user_id = %s"
    out = []
    for size in sizes:
        author = size   # one author per size, with exactly that many tweets
        _seed_tweets(session, author, size, rng)
        _drained(session)
        follows, unfollows, updates = [], [], []
        for i in range(repeat):
            reader = FOLLOWER_BASE + size * 100 + i
            session.execute(follow, (author, reader))
            follows.append(_until(lambda: _all(session, timeline, (reader,))[0][0] == size))
            _drained(session)
            session.execute(unfollow, (author, reader))
            unfollows.append(_until(lambda: _all(session, timeline, (reader,))[0][0] == 0))
            _drained(session)
        for i in range(repeat):
            before = _all(session, count, (author,))[0].tweets
            write_tweets(session, [author], rng)
            updates.append(_until(lambda: _all(session, count, (author,))[0].tweets == before + 1))
            _drained(session)
        out.append((size, statistics.median(follows), statistics.median(unfollows), statistics.median(updates)))
        print(f"-- author with {size} tweets measured", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1,10,100,1000", help="tweets of the followed author, comma-separated")
    p.add_argument("--repeat", type=int, default=5, help="follows, unfollows and tweets per size")
    p.add_argument("--name", default="bench")
    p.add_argument("--nodes", type=int, default=3)
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)   # noqa: E731

    settings = cluster_settings(args.name, args.nodes, log)
    with connect(settings) as session:
        empty(session)
        deploy.deploy(session, load_flow_file(TWITTER_FLOWS))
        time.sleep(2 * 2.5)   # every node polls the flows every 2 s: let them all run this version
        rows = measure(session, sizes, args.repeat, random.Random(1))
    print(f"the Twitter example on {args.nodes} nodes (RF 2), medians of {args.repeat}, one at a time, idle cluster")
    print(f"{'author tweets':>14} {'follow: all in':>16} {'unfollow: all out':>18} {'tweet: count updated':>21}")
    for size, f, u, c in rows:
        print(f"{size:>14} {f * 1000:>13.0f} ms {u * 1000:>15.0f} ms {c * 1000:>18.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
