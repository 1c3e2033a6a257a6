"""Ack latency of a tweet by a celebrity (10,000 followers) and by an ordinary user (3 followers): the Twitter flow
deployed with replica backup maps (the default), deployed without them (``Backup(enabled=False)``), and dropped.

The write is acknowledged once its replicas stored it; each replica records the tasks' backup entries as it
applies the write (a local commit log record and memtable row, no message), and the fan-out runs afterwards inside
the nodes: the price measured here is that capture. Each variant's first block starts with a warm-up of ``--warmup``
concurrent tweets by users with no followers (the JIT compiles the write path, capture included, as it has on any
node that serves traffic; unwarmed, the capture code runs interpreted and the first variant pays for the JVM, not
the design). Every measured write is paced alike in every variant: it waits until the previous fan-out finished (a
flow's), then ``--gap`` seconds more, so each meets the same idle cluster after the same idle time (a variant that
wrote back to back would keep its request threads hot and win for that reason alone); its statement is prepared
once. The three variants alternate in blocks (A B C A B C) so drift on this shared machine hits all of them.

    python -m async_triggers.benchmarks.experiments.ack_latency [--samples 60] [--followers 10000] [--nodes 3] [--warmup 20000] [--gap 1.0]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import random
import statistics
import sys
import time

from cassandra.concurrent import execute_concurrent_with_args
from cassandra.util import uuid_from_time

from async_triggers import deploy, status
from async_triggers.benchmarks.harness.twitter_example import cluster_settings, empty_twitter, report_flows
from async_triggers.cql import connect
from async_triggers.flows import Backup
from async_triggers.examples.twitter.workload import INSERT_TWEET, write_tweets

CELEBRITY = 1
ORDINARY = 2          # an ordinary user: three followers
WARMUP_AUTHORS = 1_000_000  # first of 1,000 users with no followers who write the warm-up tweets
FLOW = "twitter_timeline"
TARGET = 1.1          # the target: ack with the flow and its backups <= 1.1x the same write with no flow


def wait_for_row(session, user: int, tweet, timeout: float = 300) -> float:
    """Seconds until the tweet shows in ``user``'s timeline (polled every 5 ms)."""
    q = session.prepare("SELECT tweet_id FROM twitter.timeline WHERE user_id = ? AND tweet_id = ?")
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if session.execute(q, (user, tweet)).one():
            return time.monotonic() - started
        time.sleep(0.005)
    raise TimeoutError(f"tweet {tweet} did not reach user {user} within {timeout} s")


def warm_up(session, count: int) -> None:
    """``count`` tweets by users with no followers, 32 in flight: the flow writes each author's own row only."""
    insert = session.prepare(INSERT_TWEET)
    now = time.time()
    rows = [(uuid_from_time(now), WARMUP_AUTHORS + i % 1000, "warm-up", int(now * 1000))
            for i in range(count)]
    started = time.monotonic()
    execute_concurrent_with_args(session, insert, rows, concurrency=32, raise_on_first_error=True)
    print(f"-- warm-up: {count} tweets in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=60, help="writes per variant")
    p.add_argument("--followers", type=int, default=10_000)
    p.add_argument("--name", default="bench")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--warmup", type=int, default=20_000, help="concurrent tweets before each variant's first block")
    p.add_argument("--gap", type=float, default=1.0, help="idle seconds before every measured write, every variant")
    args = p.parse_args(argv)
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)

    settings = cluster_settings(args.name, args.nodes, log)
    flows = report_flows()
    variants = {"backup": flows, "no-backup": [dataclasses.replace(f, backup=Backup(enabled=False)) for f in flows]}
    followers = list(range(2, args.followers + 2))
    rng = random.Random(1)
    with connect(settings) as session:
        empty_twitter(session)
        insert = session.prepare("INSERT INTO twitter.followers (user_id, follower_id) VALUES (?, ?)")
        edges = [(CELEBRITY, f) for f in followers] + [(ORDINARY, f) for f in followers[:3]]
        timed = session.prepare(INSERT_TWEET)   # once: a PREPARE round trip before each write would be noise
        execute_concurrent_with_args(session, insert, edges, concurrency=64, raise_on_first_error=True)
        log(f"user {CELEBRITY} has {len(followers)} followers, user {ORDINARY} has 3")
        latencies = {"backup": [], "no-backup": [], "dropped": []}
        ordinary = {"backup": [], "no-backup": [], "dropped": []}
        fanout_s = []
        block = max(1, args.samples // 2)
        warmed = set()
        for variant in ("backup", "no-backup", "dropped") * 2:
            if variant in variants:
                deploy.deploy(session, variants[variant])
                time.sleep(2 * 2.5)  # every node polls the flows every 2 s: let them all apply this version
            elif FLOW in deploy.read_deployed(session):
                deploy.drop(session, FLOW)
            write_tweets(session, [CELEBRITY], rng)  # warm-up: the trigger class loads on the first write
            if variant not in warmed and args.warmup:
                warm_up(session, args.warmup)
                warmed.add(variant)
            if variant in variants:
                status.wait_drained(session, [FLOW], dt.datetime.utcnow(), timeout=600)
            log(f"{block} writes, flow {variant if variant in variants else 'dropped'}")
            for _ in range(block):
                time.sleep(args.gap)
                stats = write_tweets(session, [CELEBRITY], rng, insert=timed)
                latencies[variant].extend(stats.latencies_ms)
                if variant in variants:
                    # fan-out pages in follower order: the last follower's row is written last
                    fanout_s.append(wait_for_row(session, followers[-1], stats.tweet_ids[0]))
                    status.wait_drained(session, [FLOW], dt.datetime.utcnow(), timeout=300)
                time.sleep(args.gap)
                stats = write_tweets(session, [ORDINARY], rng, insert=timed)
                ordinary[variant].extend(stats.latencies_ms)
                if variant in variants:
                    wait_for_row(session, followers[2], stats.tweet_ids[0])
        if FLOW in deploy.read_deployed(session):
            deploy.drop(session, FLOW)

    print(f"{len(latencies['backup'])} writes per variant and user, one run, {args.nodes} nodes, RF 2, "
          f"after a warm-up of {args.warmup} tweets per variant, each write after {args.gap:g} s idle")
    for who, samples in ((f"a user with {len(followers)} followers", latencies), ("a user with 3 followers", ordinary)):
        med = {v: statistics.median(l) for v, l in samples.items()}
        ratio = med["backup"] / med["dropped"]
        print(f"tweets by {who}:")
        print(f"  median ack latency, flow with backup maps:    {med['backup']:8.2f} ms")
        print(f"  median ack latency, flow without backup maps: {med['no-backup']:8.2f} ms")
        print(f"  median ack latency, flow dropped:             {med['dropped']:8.2f} ms")
        print(f"  ratio (with backup / dropped):                {ratio:8.2f}  (target <= {TARGET}: "
              f"{'met' if ratio <= TARGET else 'missed'})")
    print(f"median fan-out completion after ack: {statistics.median(fanout_s) * 1000:8.0f} ms "
          f"({len(followers)} timeline rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
