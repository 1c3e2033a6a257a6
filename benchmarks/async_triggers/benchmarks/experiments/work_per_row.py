"""The work per follower row by cluster size (``make bench-work``): how many CPU seconds the cluster spends per
1,000 timeline rows the report's fan-out flow writes, at 2, 3 and 4 nodes, each node's share, and a projection to 12
nodes from the line through them (harness/work_share.py says why CPU seconds and not throughput).

Each size gets its own cluster (one at a time: they share 127.0.0.x) with the same keyspace at RF 2 (the report's),
the same follower graph (``--authors`` users with ``--followers`` followers each and a celebrity with
``--celebrity``) and the report's timeline flow. A repetition empties the tweets and the timeline, measures each
node's idle CPU rate for ``--idle-s`` seconds, then writes ``--rounds`` rounds of tweets (every author once, the
celebrity twice) at QUORUM, waits until the flow has drained, flushes the keyspace on every node and waits until no
compaction is pending: the window runs from the first write to then, so a row's memtable, flush and compaction are
counted with its fan-out. The rows written are counted in the table (read at ALL) before a repetition counts.

Beside each repetition of the flow, the control (unless ``--no-plain``): the same tweets and timeline rows written
by the client at QUORUM into tables no flow reads, measured the same way on the same cluster, the two in turn. It
is Cassandra's own work per row at that size (what the synchronous application's writes cost): on one machine a
bigger cluster's nodes share the same cores, so the flow's growth is read against the control's.

The flow is a lineage flow (its fan-out matches on ``author_id``, a column an upsert can change): each task takes
its source row's version by a lightweight transaction (docs/design.md, "Lineage"). ``--paxos v1,v2`` measures
every size under each of Cassandra's Paxos implementations (``paxos_variant`` in cassandra.yaml; 5.0's default is
v1), a cluster of its own each, the variants one after the other at each size, and prints their ratio side by side.
One size (``--sizes 2``) gives its work per row alone, repetition by repetition, with no growth or projection: two
builds of the plugin side by side, a run each.

    python -m async_triggers.benchmarks.experiments.work_per_row [--sizes 2,3,4] [--repeat 3] [--rounds 3]
        [--authors 300] [--followers 50] [--celebrity 10000] [--paxos v1] [--no-plain] [--project 12]
        [--out benchmarks/results/work]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import sys
import time
from pathlib import Path

from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement
from cassandra.util import uuid_from_time

from async_triggers import cluster as cluster_mod, deploy, status
from async_triggers.benchmarks.harness import work_share
from async_triggers.benchmarks.harness.resources import cpu_seconds
from async_triggers.benchmarks.harness.twitter_example import cluster_settings, report_flow, report_table
from async_triggers.cql import connect
from async_triggers.flows import Flow, Queue

KS = "workbench"
FLOW = "work_timeline"
RF = 2
TARGET = 1.1          # the work per row at the largest size <= 1.1x the smallest's, in every repetition
PAXOS_VARIANTS = ("v1", "v2")   # Cassandra 5.0's paxos_variant values
DEFAULT_PAXOS = "v1"            # 5.0's default
CELEBRITY = 1
PLAIN = "_plain"      # the control's tables: the flow's names with this suffix
SCHEMA = [
    f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
    f"{{'class': 'NetworkTopologyStrategy', 'replication_factor': {RF}}}",
    report_table("followers", KS),
    report_table("tweets", KS), report_table("timeline", KS),
    # the control: the same tweets and timeline rows written by the client, no flow on them
    report_table("tweets", KS, PLAIN), report_table("timeline", KS, PLAIN),
]


def flow() -> Flow:
    """The report's timeline flow: the author's own timeline row and one per follower."""
    return report_flow(FLOW, KS, queue=Queue(capacity=100_000, workers=4))


def graph(authors: int, followers: int, celebrity: int) -> list[tuple[int, int]]:
    """(user, follower) pairs: the celebrity (user 1) and ``authors`` users from 2 on; followers are users of their own
    range, so no author follows itself and every timeline row of a tweet is a distinct row."""
    base = 1_000_000
    pairs = [(CELEBRITY, base + i) for i in range(celebrity)]
    for a in range(authors):
        pairs += [(2 + a, base + (a * 7919 + j * 104729) % 10_000_000) for j in range(followers)]
    return sorted(set(pairs))


def thread_cpu(pids: dict[str, int]) -> dict[tuple[int, str], float]:
    """CPU seconds of every thread of the nodes, by (thread id, its OS name), from /proc."""
    import os
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids.values():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:   # the thread ended meanwhile
                continue
            out[(int(tid), name)] = (int(fields[11]) + int(fields[12])) / tick   # utime, stime
    return out


def settle(settings, name: str, nodes: list[str], timeout: float = 600) -> None:
    """Flush the keyspace on every node, then wait until none has a compaction pending."""
    for node in nodes:
        cluster_mod.nodetool(settings, node, ["flush", KS], name)
    deadline = time.monotonic() + timeout
    for node in nodes:
        while not compactions_idle(cluster_mod.nodetool(settings, node, ["compactionstats"], name)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{node}: compactions still pending after {timeout:.0f} s")
            time.sleep(1)


def compactions_idle(stats: str) -> bool:
    """``nodetool compactionstats`` says no compaction is pending and none runs (5.0 prints a table: "pending tasks"
    and its count, then a row per running compaction under a header naming "compaction type")."""
    pending = re.search(r"pending tasks\s*:?\s*(\d+)", stats)
    if pending is None:
        raise ValueError(f"nodetool compactionstats printed no pending tasks count: {stats[:200]!r}")
    return int(pending.group(1)) == 0 and "compaction type" not in stats


def count_rows(session, suffix: str = "") -> int:
    """Timeline rows, read at ALL a page at a time."""
    stmt = SimpleStatement(f"SELECT user_id FROM {KS}.timeline{suffix}", consistency_level=ConsistencyLevel.ALL,
                           fetch_size=5000)
    return sum(1 for _ in session.execute(stmt, timeout=120))


def timeline_rows(pairs: list[tuple[int, int]], tweets: list[tuple]) -> list[tuple]:
    """The rows the flow derives from ``tweets`` (tweet_id, author_id, body, created_at): the author's own and one per
    follower, as (user_id, tweet_id, author_id, body, created_at)."""
    followers: dict[int, list[int]] = {}
    for user, follower in pairs:
        followers.setdefault(user, []).append(follower)
    return [(user, tweet_id, author, body, created) for tweet_id, author, body, created in tweets
            for user in [author, *followers.get(author, [])]]


def repetition(session, settings, name: str, pids: dict[str, int], pairs: list[tuple[int, int]], rounds: int,
               idle_s: float, log, plain: bool = False) -> work_share.Repetition:
    """One measured window. ``plain``: the control, the same tweets and timeline rows written by the client into
    tables no flow reads (Cassandra's own work per row at this size: the synchronous application's writes)."""
    suffix = PLAIN if plain else ""
    for table in ("tweets", "timeline"):
        session.execute(SimpleStatement(f"TRUNCATE {KS}.{table}{suffix}", consistency_level=ConsistencyLevel.ALL),
                        timeout=120)
    settle(settings, name, list(pids))
    fans: dict[int, int] = {}
    for user, _ in pairs:
        fans[user] = fans.get(user, 0) + 1
    authors = [a for a in sorted(fans) if a != CELEBRITY]
    writers = [a for _ in range(rounds) for a in authors + [CELEBRITY, CELEBRITY]]
    rows = sum(1 + fans[a] for a in writers)
    before = cpu_seconds(pids)
    time.sleep(idle_s)
    idle = {n: (c - before[n]) / idle_s for n, c in cpu_seconds(pids).items()}
    insert = session.prepare(f"INSERT INTO {KS}.tweets{suffix} (tweet_id, author_id, body, created_at) "
                             "VALUES (?, ?, ?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    now = time.time()
    values = [(uuid_from_time(now + i * 1e-6), a, "w" * 140, int(now * 1000)) for i, a in enumerate(writers)]
    derived = timeline_rows(pairs, values) if plain else []
    start_cpu, start_threads, started = cpu_seconds(pids), thread_cpu(pids), time.monotonic()
    execute_concurrent_with_args(session, insert, values, concurrency=32, raise_on_first_error=True)
    if plain:
        row = session.prepare(f"INSERT INTO {KS}.timeline{suffix} (user_id, tweet_id, author_id, body, created_at) "
                              "VALUES (?, ?, ?, ?, ?)")
        row.consistency_level = ConsistencyLevel.QUORUM
        execute_concurrent_with_args(session, row, derived, concurrency=64, raise_on_first_error=True)
    else:
        status.wait_drained(session, [FLOW], dt.datetime.utcnow(), timeout=1800, poll=0.5)
    drain_s = time.monotonic() - started
    settle(settings, name, list(pids))
    end_cpu, end_threads, window = cpu_seconds(pids), thread_cpu(pids), time.monotonic() - started
    found = count_rows(session, suffix)
    if found != rows:
        raise AssertionError(f"{found} timeline{suffix} rows after the writes, {rows} expected: a repetition counts "
                             "only the rows it wrote")
    rep = work_share.Repetition(len(pids), rows, window, drain_s, tuple(
        work_share.NodeWork(n, end_cpu[n] - start_cpu[n], idle[n], window) for n in sorted(pids)),
        work_share.by_group(start_threads, end_threads))
    log(f"{len(pids)} nodes{', plain writes' if plain else ''}: {rows} rows, done in {drain_s:.1f} s, window "
        f"{window:.1f} s, {rep.per_1k_rows:.3f} CPU-s per 1,000 rows")
    return rep


Measured = tuple[list[work_share.Repetition], list[work_share.Repetition]]   # the flow's, the control's (or none)


def measure_size(nodes: int, args, pairs, log, paxos: str = DEFAULT_PAXOS) -> Measured:
    """The flow's repetitions and, with ``args.plain``, the control's: one of each in turn, their order swapped
    every other time, after a warm-up of each."""
    name = f"work{nodes}n" if paxos == DEFAULT_PAXOS else f"work{nodes}n{paxos}"
    log(f"{nodes} nodes, paxos_variant {paxos}")
    settings = cluster_settings(name, nodes, log, config_options={"paxos_variant": paxos})
    try:
        info = cluster_mod.cluster_info(settings, name)
        pids = {n.name: n.pid for n in info.nodes if n.up and n.pid}
        if len(pids) != nodes:
            raise RuntimeError(f"cluster {name}: {len(pids)} of {nodes} nodes up")
        with connect(settings) as session:
            for cql in SCHEMA:
                session.execute(cql, timeout=120)
            insert = session.prepare(f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (?, ?)")
            execute_concurrent_with_args(session, insert, pairs, concurrency=64, raise_on_first_error=True)
            deploy.deploy(session, [flow()])
            time.sleep(5)   # every node polls the flows every 2 s: let each run this version
            log(f"{nodes} nodes: warm-up repetition (not counted)")
            kinds = [False, True] if args.plain else [False]
            for plain in kinds:
                repetition(session, settings, name, pids, pairs, 1, args.idle_s, log, plain)
            runs: dict[bool, list[work_share.Repetition]] = {False: [], True: []}
            for i in range(args.repeat):
                for plain in (kinds if i % 2 == 0 else kinds[::-1]):
                    runs[plain].append(repetition(session, settings, name, pids, pairs, args.rounds, args.idle_s,
                                                  log, plain))
            return runs[False], runs[True]
    finally:
        if not args.keep_clusters:
            cluster_mod.down(settings, name=name, progress=log)


def report(by_size: dict[int, list[work_share.Repetition]], project_to: int,
           paxos: str = DEFAULT_PAXOS) -> tuple[list[str], dict]:
    lines, sizes = [], sorted(by_size)
    lines.append(f"the report's timeline flow, RF {RF}, paxos_variant {paxos}, CPU seconds per 1,000 timeline rows "
                 "(idle CPU subtracted), every repetition:")
    for n in sizes:
        reps = by_size[n]
        lines.append(f"  {n} nodes: cluster " + ", ".join(f"{r.per_1k_rows:.3f}" for r in reps)
                     + f"   (rows {reps[0].rows:,}; drained in " + ", ".join(f"{r.drain_s:.0f}" for r in reps) + " s)")
        for node in sorted(reps[0].node_per_1k_rows()):
            lines.append(f"    {node}: " + ", ".join(f"{r.node_per_1k_rows()[node]:.3f}" for r in reps))
        if reps[-1].threads:
            lines.append("    by thread group, every node, the last repetition (idle included): " + ", ".join(
                f"{group} {per:.3f}" for group, per in reps[-1].top_threads()))
    figures = {"sizes": {n: [r.as_dict() for r in reps] for n, reps in by_size.items()}}
    if len(sizes) < 2:   # one size: its work per row alone (builds or settings side by side), no growth to judge
        return lines, figures
    ratios = work_share.growth(by_size, sizes[0], sizes[-1])
    verdict = "met" if max(ratios) <= TARGET else "missed"
    lines.append(f"  {sizes[-1]} nodes / {sizes[0]} nodes, repetition by repetition: "
                 + ", ".join(f"{x:.3f}x" for x in ratios) + f"   (target <= {TARGET}x in every one: {verdict})")
    projected = work_share.project(by_size, project_to)
    lines.append(f"  projected from the line through every repetition, {projected.text()}")
    return lines, {**figures, "growth": ratios, "target": TARGET, "verdict": verdict,
                   "projection": {"nodes": projected.nodes, "cpu_s_per_1k_rows": projected.per_1k_rows,
                                  "rows_per_s_per_core": projected.rows_per_s_per_core}}


def control(flows: dict[int, list[work_share.Repetition]], plains: dict[int, list[work_share.Repetition]]
            ) -> tuple[list[str], dict]:
    """The control beside the flow: Cassandra's own work per row at each size, its growth, and the flow's work per
    row as a multiple of it (repetition i of the flow against repetition i of the control, measured next to it)."""
    sizes = sorted(flows)
    lines = ["the control, the same tweets and timeline rows written by the client (no flow), CPU-s per 1,000 rows:"]
    ratios = {n: [f.per_1k_rows / p.per_1k_rows for f, p in zip(flows[n], plains[n])] for n in sizes}
    for n in sizes:
        lines.append(f"  {n} nodes: cluster " + ", ".join(f"{r.per_1k_rows:.3f}" for r in plains[n])
                     + "   the flow / the control: " + ", ".join(f"{x:.2f}x" for x in ratios[n]))
    if len(sizes) < 2:
        return lines, {"control": {n: [r.as_dict() for r in reps] for n, reps in plains.items()},
                       "flow_over_control": ratios}
    plain_growth = work_share.growth(plains, sizes[0], sizes[-1])
    excess = [b / a for a, b in zip(ratios[sizes[0]], ratios[sizes[-1]])]
    lines.append(f"  the control, {sizes[-1]} nodes / {sizes[0]} nodes: " + ", ".join(f"{x:.3f}x" for x in plain_growth)
                 + f"; the flow's multiple of it, {sizes[-1]} nodes / {sizes[0]} nodes: "
                 + ", ".join(f"{x:.3f}x" for x in excess))
    return lines, {"control": {n: [r.as_dict() for r in reps] for n, reps in plains.items()},
                   "control_growth": plain_growth, "flow_over_control": ratios, "flow_over_control_growth": excess}


def compare(by_variant: dict[str, dict[int, list[work_share.Repetition]]], variants: list[str]) -> list[str]:
    """Each variant's cluster CPU-s per 1,000 rows against the first's, size by size (their medians)."""
    first = variants[0]
    lines = ["paxos_variant side by side, the median of the repetitions' cluster CPU-s per 1,000 rows:"]
    for n in sorted(by_variant[first]):
        base = statistics.median([r.per_1k_rows for r in by_variant[first][n]])
        lines.append(f"  {n} nodes: {first} {base:.3f}" + "".join(
            f", {v} {m:.3f} ({m / base:.2f}x)" for v in variants[1:]
            for m in [statistics.median([r.per_1k_rows for r in by_variant[v][n]])]))
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="2,3,4", help="cluster sizes, comma-separated (each at least the RF, 2); one "
                                                    "size gives its work per row alone, without growth or projection")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3, help="rounds of tweets per repetition (every author once, the "
                                                          "celebrity twice)")
    p.add_argument("--authors", type=int, default=300)
    p.add_argument("--followers", type=int, default=50, help="followers of each author")
    p.add_argument("--celebrity", type=int, default=10_000, help="followers of the celebrity")
    p.add_argument("--idle-s", type=float, default=15.0, help="seconds of each node's idle CPU rate measured first")
    p.add_argument("--no-plain", dest="plain", action="store_false",
                   help="skip the control (the same rows written by the client, no flow)")
    p.add_argument("--paxos", default=DEFAULT_PAXOS,
                   help=f"Cassandra's Paxos implementations to measure, comma-separated ({', '.join(PAXOS_VARIANTS)})")
    p.add_argument("--project", type=int, default=12, help="the size to project to")
    p.add_argument("--keep-clusters", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="write the figures there as <time>-work-per-row.{json,txt}")
    args = p.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    if not sizes or sizes[0] < RF:
        p.error(f"--sizes needs sizes of {RF} nodes or more (the keyspace's RF): {args.sizes!r}")
    if min(args.repeat, args.rounds, args.authors, args.followers) < 1 or args.idle_s <= 0:
        p.error("--repeat, --rounds, --authors, --followers and --idle-s must be positive")
    variants = [v.strip() for v in args.paxos.split(",") if v.strip()]
    unknown = [v for v in variants if v not in PAXOS_VARIANTS]
    if not variants or unknown or len(set(variants)) != len(variants):
        p.error(f"--paxos takes each of {', '.join(PAXOS_VARIANTS)} at most once, comma-separated: {args.paxos!r}")
    log = lambda m: print(f"-- {m}", file=sys.stderr, flush=True)   # noqa: E731
    pairs = graph(args.authors, args.followers, args.celebrity)
    by_variant: dict[str, dict[int, list[work_share.Repetition]]] = {v: {} for v in variants}
    plain_by_variant: dict[str, dict[int, list[work_share.Repetition]]] = {v: {} for v in variants}
    for n in sizes:   # the variants one after the other at each size: a drift of the machine's load hits both
        for v in variants:
            by_variant[v][n], plain_by_variant[v][n] = measure_size(n, args, pairs, log, v)
    lines, figures = [], {}
    for v in variants:
        more, figures[v] = report(by_variant[v], args.project, v)
        lines += more
        if args.plain:
            more, found = control(by_variant[v], plain_by_variant[v])
            lines += more
            figures[v].update(found)
    if len(variants) > 1:
        lines += compare(by_variant, variants)
    figures = figures[variants[0]] if len(variants) == 1 else {"paxos_variants": figures}
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / f"{dt.datetime.utcnow():%Y%m%dT%H%M%SZ}-work-per-row"
        settings = {k: v for k, v in vars(args).items() if k != "out"}
        stem.with_suffix(".json").write_text(json.dumps({"settings": settings, **figures}, indent=1) + "\n")
        stem.with_suffix(".txt").write_text("\n".join(lines) + "\n")
        log(f"written {stem}.json and .txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
