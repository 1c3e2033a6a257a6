"""Size of the replica backup map under steady load: is it bounded, and does it stay clear of tombstone warnings?

Writes tweets at a fixed rate (Twitter flow, users with 20 followers each) for ``--minutes``, and every minute
prints, per node, the backup map's live entries (nodetool tablestats of twitter.async_backup_tweets: partitions
estimated, live space, sstables) and the flow's pending tasks. At the end it counts the tombstone warnings in
every node's log (``tombstone_warn_threshold``) and prints the verdict.

    python -m async_triggers.benchmarks.experiments.backup_size [--minutes 10] [--rate 50] [--nodes 3]
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

from cassandra.concurrent import execute_concurrent_with_args

from async_triggers import cluster as cluster_mod, deploy, status
from async_triggers.benchmarks.harness.twitter_example import cluster_settings, empty_twitter, example_timeline
from async_triggers.cql import connect
from async_triggers.examples.twitter.workload import INSERT_TWEET, tweet_body

FLOW = "twitter_timeline"
TABLE = "twitter.async_backup_tweets"
USERS, FOLLOWERS_EACH = 2_000, 20


def tablestats(settings, name: str, node: str) -> dict:
    out = cluster_mod.nodetool(settings, node, ["tablestats", TABLE], name=name)
    pick = lambda label: (re.search(rf"{label}: (\S+)", out) or [None, "?"])[1]
    return {"partitions": pick("Number of partitions \\(estimate\\)"), "live_bytes": pick("Space used \\(live\\)"),
            "sstables": pick("SSTable count"), "memtable_cells": pick("Memtable cell count")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--rate", type=int, default=50, help="tweets per second")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--name", default="bench")
    args = p.parse_args(argv)
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)

    settings = cluster_settings(args.name, args.nodes, log)
    nodes = [n.name for n in cluster_mod.node_status(settings, args.name)]
    rng = random.Random(1)
    with connect(settings) as session:
        empty_twitter(session)
        insert = session.prepare("INSERT INTO twitter.followers (user_id, follower_id) VALUES (?, ?)")
        pairs = [(u, rng.randrange(USERS)) for u in range(USERS) for _ in range(FOLLOWERS_EACH)]
        execute_concurrent_with_args(session, insert, pairs, concurrency=64, raise_on_first_error=True)
        deploy.deploy(session, example_timeline())
        tweet = session.prepare(INSERT_TWEET)
        log(f"{args.rate} tweets/s for {args.minutes} min; backup map {TABLE}")
        started = time.monotonic()
        end = started + args.minutes * 60
        next_report, written, second = started + 60, 0, started
        from cassandra.util import uuid_from_time
        while time.monotonic() < end:
            now = time.time()
            values = [(uuid_from_time(now), rng.randrange(USERS), tweet_body(rng), int(now * 1000))
                      for _ in range(args.rate)]
            execute_concurrent_with_args(session, tweet, values, concurrency=16, raise_on_first_error=True)
            written += len(values)
            second += 1
            time.sleep(max(0.0, second - time.monotonic()))
            if time.monotonic() >= next_report:
                next_report += 60
                rows = status.read(session, [FLOW])
                pending = sum(r.pending for r in rows)
                stats = {n: tablestats(settings, args.name, n) for n in nodes}
                print(f"t={time.monotonic() - started:5.0f}s written={written} pending={pending} "
                      + " ".join(f"{n}:{s['partitions']}p/{s['live_bytes']}B/{s['sstables']}sst/{s['memtable_cells']}cells"
                                 for n, s in stats.items()), flush=True)
        status.wait_drained(session, [FLOW], __import__("datetime").datetime.utcnow(), timeout=600)
        for n in nodes:
            cluster_mod.nodetool(settings, n, ["flush", "twitter"], name=args.name)
        stats = {n: tablestats(settings, args.name, n) for n in nodes}
        print("after draining and a flush: " + " ".join(f"{n}:{s['partitions']}p/{s['live_bytes']}B/{s['sstables']}sst"
                                                         for n, s in stats.items()))
        # the warnings first: the count below is a CQL range read, which itself counts the completed entries'
        # tombstones (the plugin's own scans read memtables and sstables directly and never do)
        warnings = 0
        for node in cluster_mod.node_status(settings, args.name):
            log_file = Path(node.path) / "logs" / "system.log"
            if log_file.is_file():
                warnings += sum(1 for line in log_file.read_text(errors="replace").splitlines()
                                if "tombstone" in line.lower() and ("WARN" in line or "ERROR" in line))
        live = session.execute(f"SELECT count(*) FROM {TABLE}", timeout=120).one()[0]
    print(f"{written} tweets in {args.minutes} min at {args.rate}/s; live backup entries left: {live}; "
          f"tombstone warnings in the logs: {warnings}")
    return 0 if live == 0 and warnings == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
