"""Ack latency of a celebrity's tweet: Twitter flow deployed with replica backup maps (the default), deployed
without them (``Backup(enabled=False)``), and dropped.

The write is acknowledged once it is stored and its task is queued; the 10,000-row fan-out runs afterwards
inside the nodes. With backup maps the trigger returns the tasks' backup entries with the write, which makes
Cassandra send it through the batchlog (a logged batch): that is the price measured here. Each sample waits until
the previous fan-out finished, so every write meets the same idle cluster; the three variants alternate in blocks
(A B C A B C) so drift on this shared machine hits all of them.

    python benchmarks/ack_latency.py [--samples 40] [--followers 10000] [--nodes 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402

from pycontrol import cluster as cluster_mod, config, deploy, status  # noqa: E402
from pycontrol.cql import connect  # noqa: E402
from pycontrol.cql_script import run_file  # noqa: E402
from pycontrol.flows import Backup, load_flow_file  # noqa: E402
from pycontrol.workload import write_tweets  # noqa: E402

CELEBRITY = 1
FLOW = "twitter_timeline"


def wait_for_row(session, user: int, tweet, timeout: float = 300) -> float:
    """Seconds until the tweet shows in ``user``'s timeline (polled every 5 ms)."""
    q = session.prepare("SELECT tweet_id FROM twitter.timeline WHERE user_id = ? AND tweet_id = ?")
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if session.execute(q, (user, tweet)).one():
            return time.monotonic() - started
        time.sleep(0.005)
    raise TimeoutError(f"tweet {tweet} did not reach user {user} within {timeout} s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=40, help="writes per variant")
    p.add_argument("--followers", type=int, default=10_000)
    p.add_argument("--name", default="bench")
    p.add_argument("--nodes", type=int, default=3)
    args = p.parse_args(argv)
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)

    settings = config.load(cluster_name=args.name)
    info = cluster_mod.up(settings, nodes=args.nodes, name=args.name, progress=log)
    settings = dataclasses.replace(settings, contact_points=tuple(info.contact_points))
    flows = load_flow_file(config.REPO_ROOT / "examples" / "twitter.py")
    variants = {"backup": flows, "no-backup": [dataclasses.replace(f, backup=Backup(enabled=False)) for f in flows]}
    followers = list(range(2, args.followers + 2))
    rng = random.Random(1)
    with connect(settings) as session:
        run_file(session, config.REPO_ROOT / "examples" / "twitter.cql")
        for t in ("tweets", "timeline", "followers"):
            session.execute(f"TRUNCATE twitter.{t}")
        insert = session.prepare("INSERT INTO twitter.followers (user_id, follower_id) VALUES (?, ?)")
        execute_concurrent_with_args(session, insert, [(CELEBRITY, f) for f in followers], concurrency=64,
                                     raise_on_first_error=True)
        log(f"user {CELEBRITY} has {len(followers)} followers")
        latencies = {"backup": [], "no-backup": [], "dropped": []}
        fanout_s = []
        block = max(1, args.samples // 2)
        for variant in ("backup", "no-backup", "dropped") * 2:
            if variant in variants:
                deploy.deploy(session, variants[variant])
                time.sleep(2 * 2.5)  # every node polls the flows every 2 s: let them all apply this version
            elif FLOW in deploy.read_deployed(session):
                deploy.drop(session, FLOW)
            write_tweets(session, [CELEBRITY], rng)  # warm-up: the trigger class loads on the first write
            if variant in variants:
                status.wait_drained(session, [FLOW], dt.datetime.utcnow(), timeout=300)
            log(f"{block} writes, flow {variant if variant in variants else 'dropped'}")
            for _ in range(block):
                stats = write_tweets(session, [CELEBRITY], rng)
                latencies[variant].extend(stats.latencies_ms)
                if variant in variants:
                    # fan-out pages in follower order: the last follower's row is written last
                    fanout_s.append(wait_for_row(session, followers[-1], stats.tweet_ids[0]))
                    status.wait_drained(session, [FLOW], dt.datetime.utcnow(), timeout=300)
        if FLOW in deploy.read_deployed(session):
            deploy.drop(session, FLOW)

    med = {v: statistics.median(l) for v, l in latencies.items()}
    print(f"writes by a user with {len(followers)} followers, {len(latencies['backup'])} per variant, one run, "
          f"{args.nodes} nodes, RF 2")
    print(f"median ack latency, flow with backup maps:    {med['backup']:8.2f} ms")
    print(f"median ack latency, flow without backup maps: {med['no-backup']:8.2f} ms")
    print(f"median ack latency, flow dropped:             {med['dropped']:8.2f} ms")
    print(f"backup map cost (with / without backup):      {med['backup'] / med['no-backup']:8.2f}")
    print(f"ratio (with backup / dropped):                {med['backup'] / med['dropped']:8.2f}  (target < 1.5)")
    print(f"median fan-out completion after ack: {statistics.median(fanout_s) * 1000:8.0f} ms "
          f"({len(followers)} timeline rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
