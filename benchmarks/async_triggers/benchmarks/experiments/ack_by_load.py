"""The acknowledgement against the load: the integrated approach's tweet write and the plain write (the same requests
through the same sender, no flow) at shares of the flow's own saturating rate, on a 2-node cluster with the report's
graph. Each share runs the integrated approach, then the plain write, ``--seconds`` each; the shares are repeated
``--repeat`` times, in rising order then falling, so that a cluster's warming up does not favour one end. Printed per
run: the rate, the median and p99 acknowledgement of each, their ratio of medians, and how much of the load the flow
had propagated when the load ended.

``--conditions normal,nice,client-first`` runs the integrated approach once per condition at each share, side by side
(and the plain write once per client priority): ``nice`` (or ``idle``) moves the plugin's threads on every node (named
``async-trigger-…``) to nice 19 (or ``SCHED_IDLE``) from outside the nodes while it runs, through ``/proc`` and the
kernel's own calls: whether the flow giving up the CPU to the node's requests shortens their acknowledgement.
``client-first`` runs this process and its Spark load generator at nice -10 (root only) while the nodes keep 0: the
acknowledgement as a client on its own cores would see it, without the time the client's own threads wait for a CPU
the nodes hold (a ``+`` joins a flow level to it: ``client-first+nice``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

THREAD_PREFIX = "async-trigger"
FLOW_THREADS = ("normal", "nice", "idle")
CLIENT_FIRST = "client-first"
CLIENT_FIRST_NICE = -10


def condition(name: str) -> tuple[str, int]:
    """(the plugin's threads' level, the client's nice) of a condition's name; ValueError names a wrong one."""
    parts = name.split("+")
    client = CLIENT_FIRST_NICE if CLIENT_FIRST in parts else 0
    levels = [p for p in parts if p != CLIENT_FIRST]
    if len(levels) > 1 or any(p not in FLOW_THREADS for p in levels) or len(parts) != len(set(parts)):
        raise ValueError(f"condition {name!r}: expected one of {', '.join(FLOW_THREADS)}, {CLIENT_FIRST}, or "
                         f"{CLIENT_FIRST}+<one of them>")
    return (levels[0] if levels else "normal"), client


def schedule(shares: Sequence[float], repeat: int) -> list[float]:
    """The shares in run order: rising in the odd repetitions, falling in the even ones."""
    out: list[float] = []
    for r in range(repeat):
        out += sorted(shares, reverse=r % 2 == 1)
    return out


def ratio_line(share: float, rate: float, integrated: dict, plain: dict, level: str = "normal") -> str:
    """One share's line: each approach's median and p99 (ms), the ratio of medians, the flow's propagated share;
    ``level``: the plugin's threads' while the flow ran (named unless normal)."""
    i, p = integrated["response_ms"], plain["response_ms"]
    kept = integrated["config"].get("kept_up")
    label = "with the flow" if level == "normal" else f"flow, {level}"
    return (f"{share:4.0%} {rate:7.0f} msg/s   {label} {i['median']:7.2f} / {i['p99']:8.1f} ms   "
            f"plain {p['median']:5.2f} / {p['p99']:6.1f} ms   {i['median'] / p['median']:6.2f}x   "
            f"propagated when the load ended {'-' if kept is None else f'{kept:.0%}'}"
            + "".join(f"; {name} INVALID: {run['invalid_reason']}" for name, run in (("with the flow", integrated),
                                                                                  ("plain", plain)) if not run["valid"]))


def summary(rows: Sequence[tuple]) -> list[str]:
    """Per share (and level, when a row has one), the ratios of medians of its repetitions (``rows``: (share, ratio)
    or (share, level, ratio)), their median and each."""
    by_key: dict[tuple, list[float]] = {}
    for row in rows:
        by_key.setdefault(tuple(row[:-1]), []).append(row[-1])
    return [f"{key[0]:4.0%}{'' if len(key) < 2 else ', ' + key[1]}: {statistics.median(r):.2f}x ("
            + ", ".join(f"{x:.2f}" for x in r) + ")" for key, r in sorted(by_key.items())]


def _plugin_threads() -> list[int]:
    """The thread ids of the plugin's threads in every Cassandra JVM on this machine."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"org.apache.cassandra.service.CassandraDaemon" not in f.read():
                    continue
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().startswith(THREAD_PREFIX):
                        out.append(int(tid))
            except OSError:
                continue
    return out


def set_flow_threads(level: str) -> int:
    """Moves the plugin's threads to ``level`` (normal: nice 0, SCHED_OTHER); returns how many it moved."""
    moved = 0
    for tid in _plugin_threads():
        try:
            if level == "idle":
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            else:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, tid, 19 if level == "nice" else 0)
            moved += 1
        except OSError:   # the thread ended, or another user's process
            continue
    return moved


def set_client_nice(nice: int) -> None:
    """This process's threads and every thread of its Spark children (the JVM, its Python workers) at ``nice``; not
    the nodes, which a cluster this process started may have among its children too."""
    import psutil
    for proc in [psutil.Process()] + psutil.Process().children(recursive=True):
        try:
            if proc.pid != os.getpid() and "pyspark" not in " ".join(proc.cmdline()):
                continue
            tids = [t.id for t in proc.threads()]
        except psutil.Error:
            continue
        for tid in tids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:
                continue


class FlowThreads:
    """Keeps the plugin's threads at ``level`` while it is not normal (the flow's workers start and stop with its load;
    nothing is touched while every run's level is normal)."""

    def __init__(self):
        self.level = "normal"
        self.touched = False
        threading.Thread(target=self._run, daemon=True).start()

    def set(self, level: str) -> None:
        if level != "normal" or self.touched:
            self.touched = True
            set_flow_threads(level)
        self.level = level

    def _run(self) -> None:
        while True:
            if self.level != "normal":
                set_flow_threads(self.level)
            time.sleep(0.5)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--own-rate", type=float, default=1240.0,
                   help="the flow's saturating rate on 2 nodes (default: the median of make bench's committed run)")
    p.add_argument("--shares", default="0.2,0.4,0.6,0.8")
    p.add_argument("--seconds", type=float, default=25.0)
    p.add_argument("--warmup-s", type=float, default=60.0)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--conditions", "--flow-threads", dest="conditions", default="normal",
                   help="comma-separated, each run at every share: normal, nice, idle, client-first, client-first+nice")
    p.add_argument("--cluster", help="an existing cluster instead of a new bench2n (left up)")
    p.add_argument("--out", type=Path, default=Path("/tmp/async-triggers-ack-by-load"))
    args = p.parse_args(argv)
    from async_triggers.benchmarks.harness.config import PLAIN, BenchConfig
    from async_triggers.benchmarks.harness.run_app import run_app
    from async_triggers.benchmarks.harness.testbed import Testbed
    from async_triggers.spark_jobs.loadgen import Phase
    shares = [float(s) for s in args.shares.split(",") if s]
    levels = [v for v in args.conditions.split(",") if v]
    try:
        conditions = {name: condition(name) for name in levels}
    except ValueError as e:
        p.error(f"--conditions: {e}")
    if not levels:
        p.error("--conditions: none given")
    bed = Testbed(BenchConfig(out=args.out, apps=("integrated", PLAIN), db_nodes=2, reuse_cluster=args.cluster),
                  progress=lambda m: print(f"-- {m}", file=sys.stderr, flush=True))
    threads = FlowThreads()
    rows, seen = [], {}
    print(f"own rate {args.own_rate:g} msg/s, {args.seconds:g} s per run, conditions {', '.join(levels)}; share, "
          f"rate, with the flow median / p99, plain median / p99, ratio of medians", flush=True)
    try:
        bed.use_cluster(2)
        run_app(bed, "80pct_own", "integrated", [Phase(args.warmup_s, shares[0] * args.own_rate)], write=False)
        for share in schedule(shares, args.repeat):
            rate = share * args.own_rate
            flows = {}
            seen[share] = seen.get(share, 0) + 1
            for level in levels if seen[share] % 2 else levels[::-1]:   # each order in turn
                threads.set(conditions[level][0])
                set_client_nice(conditions[level][1])
                flows[level], _ = run_app(bed, "80pct_own", "integrated", [Phase(args.seconds, rate)], write=False)
            threads.set("normal")
            plains = {}
            for nice in sorted({c[1] for c in conditions.values()}):
                set_client_nice(nice)
                plains[nice], _ = run_app(bed, "80pct_own", PLAIN, [Phase(args.seconds, rate)], write=False)
            set_client_nice(0)
            for level, integrated in sorted(flows.items(), key=lambda kv: levels.index(kv[0])):
                plain = plains[conditions[level][1]]
                ratio = integrated["response_ms"]["median"] / plain["response_ms"]["median"]
                rows.append((share, ratio) if len(levels) == 1 else (share, level, ratio))
                print(ratio_line(share, rate, integrated, plain, level), flush=True)
        print("ratio of medians per share (its repetitions):", *summary(rows), sep="\n  ", flush=True)
    finally:
        threads.set("normal")
        if any(c[1] for c in conditions.values()):
            set_client_nice(0)
        if not args.cluster:
            bed.remove_cluster()
        bed.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
