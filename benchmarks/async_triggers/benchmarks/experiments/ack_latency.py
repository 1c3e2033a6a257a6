"""The price of capture on a write's acknowledgement, measured in pairs: four identical tweet tables on one cluster
(RF 3), two with the Twitter timeline flow (with replica backup maps, and without them), two with none. Each round
writes one tweet by the same author to every table, in a random order, then waits a random pause; so what the shared
machine does meanwhile (a flush, a scan, a compaction, another process) falls on every variant of the round alike. A
variant's price is the ratio of its median ack to a plain table's, with a 95 % interval from resampling whole
rounds; the second plain table against the first is the method's own control (it must read 1.00).

Authors: an ordinary user (3 followers, the flow running) and a celebrity (10,000 followers). The celebrity's rounds
run with the flows paused: a paused flow captures every write and writes its backup entries exactly as a running
one (its tasks wait in the backup maps), so the write path is measured whole, without 10 million timeline rows; a
shorter celebrity run with the flows running gives the price while the fan-out works beside the writes. (A flow
without backup entries cannot pause: its table sits out the paused rounds.) At ONE and
at QUORUM. The plugin's background work during each run is counted beside it: its scans of the backup maps and the
tasks it took over (from flow_status), the memtable flushes of the tables (nodetool tablestats), and the writes that
timed out (each kept as a sample of what its client waited: a timeout is an answer the client got).

With ``--profile DIR``, a last block writes ``--profile-writes`` tweets of the ordinary user to the flow's table
alone (QUORUM, one at a time, the flow running) under a JDK Flight Recorder recording on every node, and prints what
share of the write path's CPU samples is the plugin's and where, and what its capture does after the write
(benchmarks/async_triggers/benchmarks/harness/jfr_profile.py); its latencies are not part of the measurement above.

    python -m async_triggers.benchmarks.experiments.ack_latency [--rounds 1000] [--running-celebrity-rounds 100]
        [--nodes 3] [--gap-ms 100] [--out benchmarks/results/ack] [--profile DIR [--profile-writes 3000]]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cassandra import ConsistencyLevel, OperationTimedOut, WriteTimeout
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.util import uuid_from_time

from async_triggers import cluster as cluster_mod, deploy, pause, status
from async_triggers.benchmarks.harness import jfr_profile, paired
from async_triggers.benchmarks.harness.processes import node_pids
from async_triggers.benchmarks.harness.twitter_example import cluster_settings, report_flow, report_table
from async_triggers.cql import connect
from async_triggers.flows import Backup, Flow

KS = "ackbench"
CELEBRITY, ORDINARY = 1, 2
VARIANTS = ("flow", "flow_no_backup", "plain", "plain_control")
FLOWS = {"flow": "ack_flow", "flow_no_backup": "ack_flow_no_backup"}
TARGET = 1.1          # the ack with the flow <= 1.1x the plain write's, at the interval's upper end
CONTROL_SPREAD = 0.2   # a control interval wider than this (or missing 1.0) decides nothing
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}};
{report_table("followers", KS)};
""" + "".join(f"{report_table('tweets', KS, '_' + v)};\n{report_table('timeline', KS, '_' + v)};\n" for v in VARIANTS)


def flows() -> list[Flow]:
    """The report's timeline flow on each flow variant's own tables (without backup entries for the second)."""
    return [report_flow(name, KS, f"_{variant}", backup=Backup(enabled=variant == "flow"))
            for variant, name in FLOWS.items()]


def flushes(settings, name: str, nodes: int) -> int:
    """Memtable switches (flushes) of the keyspace's tables and their backup maps, summed over the nodes."""
    total = 0
    for n in range(1, nodes + 1):
        argv, env = cluster_mod.nodetool_command(settings, f"node{n}", ["tablestats", KS], name)
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120).stdout
        total += sum(int(m) for m in re.findall(r"Memtable switch count: (\d+)", out))
    return total


def plugin_work(session) -> dict[str, int]:
    """Scans started (distinct last_scan times seen) and tasks taken over (recovered), summed over nodes and flows."""
    rows = list(session.execute("SELECT flow, node, recovered, last_scan FROM async_triggers.flow_status"))
    return {"recovered": sum(r.recovered or 0 for r in rows if r.flow in FLOWS.values()),
            "scans": len({(r.node, r.last_scan) for r in rows if r.last_scan})}


def run_rounds(session, author: int, consistency, rounds: int, gap_ms: float, rng: random.Random,
               progress, variants=VARIANTS) -> tuple[dict[str, list[float]], dict[str, int]]:
    """``rounds`` rounds, each one tweet by ``author`` to every variant's table in a random order; the ack times in
    ms by variant, and the scans the plugin started meanwhile (sampled between rounds) with the writes that timed out
    (each a sample of the time until its timeout came back: what its client waited)."""
    inserts = {}
    for v in variants:
        inserts[v] = session.prepare(f"INSERT INTO {KS}.tweets_{v} (tweet_id, author_id, body, created_at) "
                                     "VALUES (?, ?, ?, ?)")
        inserts[v].consistency_level = consistency
    samples: dict[str, list[float]] = {v: [] for v in variants}
    timeouts = {v: 0 for v in variants}
    scans: set = set()
    for i in range(rounds):
        for v in paired.order(variants, rng):
            now = time.time()
            values = (uuid_from_time(now), author, f"round {i}", int(now * 1000))
            started = time.perf_counter()
            try:
                session.execute(inserts[v], values)
            except (WriteTimeout, OperationTimedOut):
                timeouts[v] += 1
            samples[v].append((time.perf_counter() - started) * 1000)
        if i % 50 == 0:
            scans |= {(r.node, r.last_scan) for r in session.execute(
                "SELECT node, last_scan FROM async_triggers.flow_status") if r.last_scan}
            if i:
                progress(f"  {i}/{rounds} rounds")
        time.sleep(rng.uniform(0.5, 1.5) * gap_ms / 1000)
    return samples, {"scans_seen": len(scans), "timed_out": {v: n for v, n in timeouts.items() if n}}


def block_verdict(flow: paired.Ratio, control: paired.Ratio) -> str:
    """Met or missed by the flow's upper end; undecided when the method's own control (plain against plain) is off:
    its interval misses 1.0 or is wider than ``CONTROL_SPREAD`` (the celebrity's fan-out running beside the writes
    moves every table's ack by more than the flow's price)."""
    if not control.low <= 1.0 <= control.high or control.high - control.low > CONTROL_SPREAD:
        return f"undecided: the control reads {control.text()}"
    return "met" if flow.high <= TARGET else "missed"


def report(label: str, samples: dict[str, list[float]], work: dict) -> dict:
    ratios = {v: paired.ratio(samples, v, "plain") for v in ("flow", "flow_no_backup", "plain_control") if v in samples}
    verdict = block_verdict(ratios["flow"], ratios["plain_control"])
    print(f"{label}: {len(samples['plain'])} rounds")
    for v in samples:
        blocks = ", ".join(f"{m:.2f}" for m in paired.block_medians(samples[v], 10))
        print(f"  {v:<15} median {statistics.median(samples[v]):6.2f} ms   per block of a tenth: {blocks}")
    print(f"  with the flow / plain:            {ratios['flow'].text()}  (target <= {TARGET} at the upper end: {verdict})")
    if "flow_no_backup" in ratios:
        print(f"  flow without backup maps / plain: {ratios['flow_no_backup'].text()}")
    print(f"  control (plain / plain):          {ratios['plain_control'].text()}")
    print(f"  beside it: {work}")
    return {"label": label, "rounds": len(samples["plain"]),
            "samples_ms": {v: [round(x, 3) for x in xs] for v, xs in samples.items()}, "work": work, "verdict": verdict,
            "ratios": {v: dataclasses.asdict(r) for v, r in ratios.items()}}


def profile(session, settings, name: str, writes: int, out_dir: Path, progress) -> dict:
    """``writes`` tweets of the ordinary user to the flow's table alone, at QUORUM, under JFR on every node."""
    insert = session.prepare(f"INSERT INTO {KS}.tweets_flow (tweet_id, author_id, body, created_at) VALUES (?, ?, ?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    pids = node_pids(settings, name)
    progress(f"profile: {writes} writes to the flow's table under JFR on {len(pids)} nodes")
    from cassandra import OperationTimedOut, WriteTimeout
    timeouts = 0
    with jfr_profile.Recording(pids, out_dir) as recording:
        for i in range(writes):
            now = time.time()
            try:
                session.execute(insert, (uuid_from_time(now), ORDINARY, f"profiled {i}", int(now * 1000)))
            except (WriteTimeout, OperationTimedOut):   # a node busy starting its recording: the write goes on
                timeouts += 1
    if timeouts:
        progress(f"profile: {timeouts} of {writes} writes timed out")
    found = jfr_profile.breakdown(recording.files)
    print(f"profile of {writes} writes with the flow (QUORUM, the ordinary user), every node:")
    print(found.text())
    return found.as_dict()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=1000, help="rounds per author and consistency level")
    p.add_argument("--running-celebrity-rounds", type=int, default=100,
                   help="rounds of the celebrity with the flows running (their fan-out beside the writes)")
    p.add_argument("--followers", type=int, default=10_000)
    p.add_argument("--name", default="bench")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--gap-ms", type=float, default=100.0, help="mean pause between rounds (drawn from 0.5x-1.5x)")
    p.add_argument("--warmup", type=int, default=20_000, help="concurrent writes to every table before measuring")
    p.add_argument("--out", type=Path, default=None, help="write every sample and figure there as <time>-ack-latency-<nodes>n.json")
    p.add_argument("--profile", type=Path, default=None, help="record JFR on every node in a last block; files there")
    p.add_argument("--profile-writes", type=int, default=3000)
    p.add_argument("--keep-cluster", action="store_true", help="leave the cluster up (by default it goes at the end)")
    args = p.parse_args(argv)
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)
    rng = random.Random(1)
    settings = cluster_settings(args.name, args.nodes, log)
    try:
        return measure(args, settings, rng, log)
    finally:
        if not args.keep_cluster:   # the next cluster (a test suite's, another experiment's) needs 127.0.0.x
            cluster_mod.down(settings, name=args.name, progress=log)


def measure(args, settings, rng: random.Random, log) -> int:
    """Every block of rounds on the cluster ``settings`` connects to, then the profile; the figures' file."""
    results = []
    with connect(settings) as session:
        for statement in [s for s in SCHEMA.split(";") if s.strip()]:
            session.execute(statement)
        for v in VARIANTS:
            session.execute(f"TRUNCATE {KS}.tweets_{v}")
            session.execute(f"TRUNCATE {KS}.timeline_{v}")
        follow = session.prepare(f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (?, ?)")
        followers = range(1_000, 1_000 + args.followers)
        execute_concurrent_with_args(session, follow, [(CELEBRITY, f) for f in followers]
                                     + [(ORDINARY, f) for f in followers[:3]], concurrency=64, raise_on_first_error=True)
        deploy.deploy(session, flows(), progress=log)
        pause.set_paused(session, FLOWS["flow"], False, timeout=180, progress=log)   # as an earlier run may have left it
        time.sleep(5)   # every node polls the flows every 2 s
        log(f"warm-up: {args.warmup} writes to every table by users without followers")
        for v in VARIANTS:
            insert = session.prepare(f"INSERT INTO {KS}.tweets_{v} (tweet_id, author_id, body) VALUES (?, ?, 'w')")
            execute_concurrent_with_args(session, insert, [(uuid_from_time(time.time()), 10_000_000 + i % 1000)
                                                           for i in range(args.warmup)], concurrency=32)
        status.wait_drained(session, list(FLOWS.values()), dt.datetime.utcnow(), timeout=900)
        plan = [(ORDINARY, "an ordinary user (3 followers), flows running", False, args.rounds),
                (CELEBRITY, f"a user with {args.followers} followers, the flow paused", True, args.rounds),
                (CELEBRITY, f"a user with {args.followers} followers, flows running", False,
                 args.running_celebrity_rounds)]
        for level in (ConsistencyLevel.ONE, ConsistencyLevel.QUORUM):
            for author, who, paused, rounds in plan:
                if not rounds:
                    continue
                # a flow without backup entries cannot pause (its waiting tasks would live in memory only): its
                # table sits out the paused rounds, whose capture it would price as the running rounds do
                pause.set_paused(session, FLOWS["flow"], paused, progress=lambda m: None)
                variants = tuple(v for v in VARIANTS if not (paused and v == "flow_no_backup"))
                label = f"{who}, {ConsistencyLevel.value_to_name[level]}"
                log(label)
                before_flush, before = flushes(settings, args.name, args.nodes), plugin_work(session)
                samples, seen = run_rounds(session, author, level, rounds, args.gap_ms, rng, log, variants)
                after = plugin_work(session)
                work = {"flushes": flushes(settings, args.name, args.nodes) - before_flush,
                        "tasks_taken_over": after["recovered"] - before["recovered"], **seen}
                results.append(report(label, samples, work))
                if paused:   # the celebrity's waiting tasks (10,000 rows each) go with their backup maps
                    for name in FLOWS.values():
                        deploy.drop(session, name)
                    deploy.deploy(session, flows())
                    time.sleep(5)
                else:        # the next rounds start on a drained cluster
                    status.wait_drained(session, list(FLOWS.values()), dt.datetime.utcnow(), timeout=1800)
        pause.set_paused(session, FLOWS["flow"], False, progress=lambda m: None)
        path = None
        if args.out:   # before the profile: a failure there keeps the measurement
            args.out.mkdir(parents=True, exist_ok=True)
            stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            path = args.out / f"{stamp}-ack-latency-{args.nodes}n.json"
            path.write_text(json.dumps({"nodes": args.nodes, "rf": 3, "results": results}) + "\n")
            log(f"every sample and figure: {path}")
        if args.profile:
            found = profile(session, settings, args.name, args.profile_writes, args.profile, log)
            if path is not None:
                path.write_text(json.dumps({"nodes": args.nodes, "rf": 3, "results": results, "profile": found}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
