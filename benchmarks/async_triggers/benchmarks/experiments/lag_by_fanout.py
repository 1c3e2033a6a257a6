"""The time to the last follower by fan-out size, under load (``make bench-lag``): the integrated approach at 80 %
of its own saturating rate on the report's graph, while probe authors of 1, 10, 100, 1,000 and 10,000 followers
tweet in turn through the same sender (benchmarks/async_triggers/benchmarks/harness/fanout_probe.py says how the
last follower's row is found). The celebrity's probe runs every ``--celebrity-every``-th time, since each writes
10,000 rows; the probes' rows per second are printed beside the load's. The run is verified like the others.

The rate: ``--rate``, else 0.8 x the median of the committed saturation searches of the integrated approach at this
many nodes (benchmarks/results), as the report's runs at each approach's own rate take it.

    python -m async_triggers.benchmarks.experiments.lag_by_fanout [--seconds 120] [--sizes 1,10,100,1000,10000]
        [--celebrity-every 10] [--rate R] [--out benchmarks/results/lag]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from async_triggers.benchmarks import results
from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.experiments.saturating import recorded_rate
from async_triggers.benchmarks.harness.config import DEFAULT_OUT, BenchConfig
from async_triggers.benchmarks.harness import resources
from async_triggers.benchmarks.harness.fanout_probe import FanoutLagProbe
from async_triggers.benchmarks.harness.processes import node_pids
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed

EXPERIMENT = "lag_fanout"
APP = "integrated"
SHARE = 0.8
TARGET_MS = 2000.0      # the celebrity's time to its last follower, p99, at 80 % of the approach's own rate
# the backlog left when the load ended drained within this: the flow kept up with the rate while it lasted (a short
# search step bounds a rate the flow may not sustain for minutes, as flushes and compactions come)
DRAIN_KEPT_UP_S = 10.0


def committed_rate(nodes: int, out: Path = DEFAULT_OUT) -> float:
    """The median saturating rate of the committed searches of the integrated approach at ``nodes`` nodes, by the
    rule the runs at each approach's own rate follow (``saturating.recorded_rate``)."""
    rate = recorded_rate(results.load_runs(out), APP, nodes)
    if rate is None:
        raise BenchError(f"no saturating run of the integrated approach at {nodes} nodes in {out}: give --rate")
    return rate


def report(summary: dict, rate: float, base: float | None, load_rows_s: float | None,
           drain_s: float | None = None) -> tuple[list[str], str]:
    """The lines printed and the verdict on the celebrity's p99. ``drain_s``: how long the flow's backlog took to
    drain once the load ended (None: not known, or it did not drain); a run whose backlog took longer than
    DRAIN_KEPT_UP_S was not at a rate the flow sustains, and says so: its lags are a growing backlog's."""
    sizes = sorted(summary["by_size"], key=int)
    of = f"0.8 x {base:g} msg/s, the integrated approach's saturating rate" if base else "given with --rate"
    lines = [f"time to the last follower by fan-out size, the integrated approach at {rate:g} msg/s ({of}):"]
    for size in sizes:
        s = summary["by_size"][size]
        if not s["n"]:
            lines.append(f"  {int(size):>6,} followers: no probe completed ({s['timed_out']} timed out)")
            continue
        # below 100 probes the p99 is the maximum: said once
        p99 = f"max {s['max']:.0f} ms" if s["p99_is_max"] else f"p99 {s['p99']:.0f} ms, max {s['max']:.0f} ms"
        busy = (f"; the nodes kept {s['busy_cores']:.2f} of the machine's {summary.get('cores')} cores busy until "
                "then (median)" if s.get("busy_cores") is not None else "")
        lines.append(f"  {int(size):>6,} followers: {s['n']} probes, median {s['median']:.0f} ms, {p99}; "
                     f"the last-written row first read after {s['to_sentinel'].get('median', 0):.0f}"
                     f" ms (median){busy}; timed out {s['timed_out']}")
    lines.append(f"  the probes' tweets made {summary['probe_rows_s']} of the flow's "
                 f"{'?' if load_rows_s is None else f'{load_rows_s:.0f}'} timeline rows/s; reads of the probes "
                 f"that failed (read again): {summary.get('read_errors', 0)}")
    largest = summary["by_size"][sizes[-1]]
    met = largest["n"] > 0 and not largest["timed_out"] and largest["p99"] <= TARGET_MS
    verdict = (f"celebrity ({int(sizes[-1]):,} followers) p99 <= {TARGET_MS / 1000:g} s: {'met' if met else 'missed'}"
               + (f" (from {largest['n']} probes: the p99 is their maximum)" if largest.get("p99_is_max") else ""))
    lines.append("  " + verdict)
    if drain_s is None or drain_s > DRAIN_KEPT_UP_S:
        lines.append(f"  the flow did not keep up with {rate:g} msg/s for the run's length: its backlog "
                     + ("did not drain" if drain_s is None else f"took {drain_s:.0f} s to drain")
                     + " after the load (a rate it sustains leaves a few seconds' worth): the lags above include a "
                       "backlog that grew while the run lasted, not only each tweet's own fan-out")
    return lines, "met" if met else "missed"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=120.0, help="the load's duration")
    p.add_argument("--sizes", default="1,10,100,1000,10000", help="the probe authors' follower counts")
    p.add_argument("--celebrity-every", type=int, default=10, help="the largest size every n-th probe")
    p.add_argument("--interval", type=float, default=1.0, help="seconds from one probe's start to the next")
    p.add_argument("--rate", type=float, default=None, help="the load's rate (default: 80 %% of the committed one)")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--keep-cluster", action="store_true")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT / "lag")
    args = p.parse_args(argv)
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",")})
    except ValueError:
        p.error(f"--sizes takes whole numbers, comma-separated: {args.sizes!r}")
    if not sizes or sizes[0] < 1 or args.celebrity_every < 1 or args.seconds <= 0 or args.interval <= 0:
        p.error("--sizes, --celebrity-every, --seconds and --interval must be positive")
    base = None if args.rate else committed_rate(args.nodes)
    rate = args.rate or SHARE * base
    from async_triggers.spark_jobs.loadgen import Phase
    args.out.mkdir(parents=True, exist_ok=True)
    bed = Testbed(BenchConfig(out=args.out, apps=(APP,), db_nodes=args.nodes, keep_cluster=args.keep_cluster,
                              drain_timeout_s=900.0),
                  progress=lambda m: print(f"-- {m}", file=sys.stderr, flush=True))
    try:
        bed.use_cluster(args.nodes)
        authors = bed.probe_authors(sizes)

        pids = {str(pid): pid for pid in node_pids(bed.settings, bed.cluster_name)}

        def probe(target, submit):
            from async_triggers.benchmarks.apps.cassandra import SESSIONS
            return FanoutLagProbe(SESSIONS.get(target), target.keyspace, submit, authors,
                                  celebrity_every=args.celebrity_every, interval_s=args.interval,
                                  cpu=lambda: sum(resources.cpu_seconds(pids).values()))
        run, _ = run_app(bed, EXPERIMENT, APP, [Phase(args.seconds, rate)], verify=True, probe_factory=probe,
                         config={"base": "own" if base else "given", "base_rate": base, "share": SHARE})
    finally:
        bed.remove_cluster()
        bed.close()
    summary = run["config"]["probe_summary"]
    lines, verdict = report(summary, rate, base, run.get("fanout_rows_s"), run.get("drain_s"))
    v = run.get("verification") or {}
    lines.append(f"  verified: missing {v.get('missing')}, unexpected {v.get('unexpected')}; run {run['run_id']}")
    print("\n".join(lines))
    stem = args.out / f"{dt.datetime.utcnow():%Y%m%dT%H%M%SZ}-lag-by-fanout"
    stem.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps({"settings": {k: v for k, v in vars(args).items() if k != "out"}
                                                     | {"rate": rate, "base_rate": base}, "verdict": verdict,
                                                     "run_id": run["run_id"], **summary}, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
