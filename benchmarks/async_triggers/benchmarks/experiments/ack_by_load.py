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
            + "".join(f"; {name} INVALID: {run['invalid_reason']}" for name, run in ((label, integrated),
                                                                                  ("plain", plain)) if not run["valid"]))


def summary(rows: Sequence[tuple]) -> list[str]:
    """Per share (and level, when a row has one), the ratios of medians of its repetitions (``rows``: (share, ratio)
    or (share, level, ratio)), their median and each."""
    by_key: dict[tuple, list[float]] = {}
    for row in rows:
        by_key.setdefault(tuple(row[:-1]), []).append(row[-1])
    return [f"{key[0]:4.0%}{'' if len(key) < 2 else ', ' + key[1]}: {statistics.median(r):.2f}x ("
            + ", ".join(f"{x:.2f}" for x in r) + ")" for key, r in sorted(by_key.items())]


def plugin_threads(pids: Sequence[int]) -> list[int]:
    """The thread ids of the plugin's threads (named ``async-trigger-…``) in the JVMs ``pids``."""
    out = []
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:   # the node stopped
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().startswith(THREAD_PREFIX):
                        out.append(int(tid))
            except OSError:   # the thread ended
                continue
    return out


def set_flow_threads(pids: Sequence[int], level: str) -> int:
    """Moves the plugin's threads in the JVMs ``pids`` to ``level`` (normal: nice 0, SCHED_OTHER); returns how many
    it moved."""
    moved = 0
    for tid in plugin_threads(pids):
        try:
            if level == "idle":
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            else:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, tid, 19 if level == "nice" else 0)
            moved += 1
        except ProcessLookupError:   # the thread ended
            continue
    return moved


def client_threads() -> list[int]:
    """The thread ids of this process and of its Spark children (the JVM, its Python workers); never a node's, which
    a cluster this process started has among its children too."""
    from async_triggers.benchmarks.harness.resources import cmdline_contains, descendants
    spark, node = cmdline_contains("pyspark"), cmdline_contains("CassandraDaemon")
    out = []
    for pid in [os.getpid()] + descendants(os.getpid(), lambda p: spark(p) and not node(p)):
        try:
            out += [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError:   # the process ended
            continue
    return out


def set_client_nice(nice: int) -> None:
    """The client's threads (:func:`client_threads`) at ``nice``."""
    for tid in client_threads():
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except ProcessLookupError:   # the thread ended
            continue


class FlowThreads:
    """Keeps the plugin's threads of the JVMs ``pids()`` at a level while it is not normal (the flow's workers start
    and stop with its load): a background thread moves new ones every half second; :meth:`close` stops it and moves
    them all back to normal. Nothing is touched while every level set is normal."""

    def __init__(self, pids):
        self.pids, self.level, self.touched, self.current = pids, "normal", False, []
        self.lock, self.stopped = threading.Lock(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def set(self, level: str) -> None:
        """On the caller's thread: the nodes' pids are looked up here only (ccm's calls swap ``sys.stdout`` while they
        run, so a second thread calling them can leave the process's prints in a buffer)."""
        if level != "normal" or self.touched:
            pids = self.pids()
        with self.lock:
            self.level = level
            if level != "normal" or self.touched:
                self.touched, self.current = True, pids
                set_flow_threads(pids, level)

    def _run(self) -> None:
        while not self.stopped.wait(0.5):
            with self.lock:
                if self.level != "normal":
                    set_flow_threads(self.current, self.level)

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.set("normal")


def run_order(levels: Sequence[str], nices: Sequence[int], repetition: int) -> tuple[list[str], list[int]]:
    """The conditions' and the plain writes' order at a share in its ``repetition`` (1, 2, ...): as given in the odd
    ones, reversed in the even ones."""
    if repetition % 2:
        return list(levels), sorted(nices)
    return list(levels)[::-1], sorted(nices, reverse=True)


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
    levels = list(dict.fromkeys(v for v in args.conditions.split(",") if v))
    try:
        conditions = {name: condition(name) for name in levels}
    except ValueError as e:
        p.error(f"--conditions: {e}")
    if not levels:
        p.error("--conditions: none given")
    if any(c != ("normal", 0) for c in conditions.values()) and os.geteuid() != 0:
        p.error("--conditions other than normal move threads to another priority and back, which needs root")
    from async_triggers.benchmarks.harness.processes import node_pids
    bed = Testbed(BenchConfig(out=args.out, apps=("integrated", PLAIN), db_nodes=2, reuse_cluster=args.cluster),
                  progress=lambda m: print(f"-- {m}", file=sys.stderr, flush=True))
    threads = FlowThreads(lambda: node_pids(bed.settings, bed.cluster_name))
    client_nice = os.getpriority(os.PRIO_PROCESS, 0)
    nices = sorted({c[1] for c in conditions.values()})
    rows, seen = [], {}
    print(f"own rate {args.own_rate:g} msg/s, {args.seconds:g} s per run, conditions {', '.join(levels)}; share, "
          f"rate, with the flow median / p99, plain median / p99, ratio of medians", flush=True)
    try:
        try:
            bed.use_cluster(2)
            order = schedule(shares, args.repeat)
            run_app(bed, "80pct_own", "integrated", [Phase(args.warmup_s, order[0] * args.own_rate)], write=False)
            for share in order:
                rate = share * args.own_rate
                seen[share] = seen.get(share, 0) + 1
                flow_order, plain_order = run_order(levels, nices, seen[share])   # each order in turn
                flows, plains = {}, {}
                for level in flow_order:
                    threads.set(conditions[level][0])
                    if nices != [0]:
                        set_client_nice(client_nice + conditions[level][1])
                    flows[level], _ = run_app(bed, "80pct_own", "integrated", [Phase(args.seconds, rate)], write=False)
                threads.set("normal")
                for nice in plain_order:
                    if nices != [0]:
                        set_client_nice(client_nice + nice)
                    plains[nice], _ = run_app(bed, "80pct_own", PLAIN, [Phase(args.seconds, rate)], write=False)
                for level in levels:
                    integrated, plain = flows[level], plains[conditions[level][1]]
                    ratio = integrated["response_ms"]["median"] / plain["response_ms"]["median"]
                    rows.append((share, ratio) if len(levels) == 1 else (share, level, ratio))
                    print(ratio_line(share, rate, integrated, plain, level), flush=True)
            print("ratio of medians per share (its repetitions):", *summary(rows), sep="\n  ", flush=True)
        finally:
            threads.close()
            if nices != [0]:
                set_client_nice(client_nice)
    finally:
        if not args.cluster:
            bed.remove_cluster()
        bed.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
