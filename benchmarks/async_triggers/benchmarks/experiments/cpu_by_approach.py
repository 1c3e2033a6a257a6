"""Where the nodes' CPU goes per tweet, approach by approach: the report's graph on a 2-node cluster, each approach
(the synchronous application, the integrated flow) warmed up at ``--rate``, then run at it for ``--seconds`` while
JDK Flight Recorder samples every node every millisecond (``harness/jfr_profile.py``). Each execution sample is put
in the first category one of its frames belongs to (the plugin's before Cassandra's: a worker's derived write runs
through Cassandra's coordinator, and is the plugin's), and counted per 1,000 tweets written.

JFR samples threads running Java code, not time blocked; a run the approach did not keep up with still counts its
samples until its backlog drained (the recording ends with the run), so read the rate each run kept beside it.
A run whose nodes used nearly every core of the machine while it lasted says so: its CPU per tweet is then the
machine's capacity over the tweets, the same for any build, not the work a tweet takes (7 Dec 2026: four runs of
two builds at 400 msg/s, 260-272 CPU-s each on two cores, could not tell the builds apart).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

from async_triggers.benchmarks.harness import jfr_profile, resources

CATEGORIES = (   # (name, frame prefixes): a sample goes to the first whose prefix one of its frames has
    ("the plugin's fan-out and rows", ("org.asynctriggers.execute.FanoutPages", "org.asynctriggers.execute.DerivedRow")),
    ("the plugin's read of its source row", ("org.asynctriggers.execute.SourceReads",)),
    ("the plugin's completions", ("org.asynctriggers.backup.EntryCompletion",
                                  "org.asynctriggers.backup.BackupTable.complete")),
    ("the plugin's capture", jfr_profile.CAPTURE),
    ("the plugin, other", (jfr_profile.PLUGIN,)),
    ("reads", ("org.apache.cassandra.db.SinglePartitionReadCommand", "org.apache.cassandra.db.ReadCommand")),
    ("a write's apply", ("org.apache.cassandra.db.Keyspace.apply",)),
    ("coordinators and CQL", ("org.apache.cassandra.service.StorageProxy", "org.apache.cassandra.cql3.")),
    ("messaging and the network", ("org.apache.cassandra.net.", "io.netty.")),
    ("flushes and compactions", ("org.apache.cassandra.db.compaction.", "org.apache.cassandra.io.sstable.")),
)
OTHER = "other"
SATURATED = 0.9   # the nodes' share of the machine's cores above which a run's CPU per tweet says nothing of the work


def category(frames: Sequence[str]) -> str:
    """The category of one sample's frames."""
    for name, prefixes in CATEGORIES:
        if any(frame.startswith(prefixes) for frame in frames):
            return name
    return OTHER


def per_thousand(samples: Iterable[Sequence[str]], tweets: int) -> tuple[int, dict[str, float]]:
    """The samples' count, and each category's samples per 1,000 of ``tweets``, in CATEGORIES' order."""
    counts, total = collections.Counter(), 0
    for frames in samples:
        total += 1
        counts[category(frames)] += 1
    names = [name for name, _ in CATEGORIES] + [OTHER]
    return total, {name: 1000 * counts[name] / max(1, tweets) for name in names}


def lines(app: str, rate: float, seconds: float, tweets: int, kept: float | None, total: int,
          shares: dict[str, float], cpu_s: float | None = None) -> list[str]:
    cpu = "" if cpu_s is None else f"; the nodes' CPU {cpu_s:.1f} s, {1000 * cpu_s / max(1, tweets):.2f} s per 1,000 tweets"
    out = [f"{app} at {rate:g} msg/s for {seconds:g} s: {tweets} tweets, {kept if kept is not None else '-'} of them "
           f"propagated when the load ended; {total} samples, {1000 * total / max(1, tweets):.1f} per 1,000 tweets{cpu}"]
    out += [f"  {name:38s} {value:7.1f}" for name, value in shares.items()]
    return out


def saturation(cpu_s: float, wall_s: float, cores: int) -> str | None:
    """The caveat for a run whose nodes used at least SATURATED of ``cores`` over ``wall_s``; None below it."""
    share = cpu_s / max(1e-9, wall_s * cores)
    if share < SATURATED:
        return None
    return (f"  the nodes used {share:.0%} of the machine's {cores} cores while the run lasted: this CPU per tweet is "
            "the machine's capacity over the tweets, not the work a tweet takes (compare builds at a rate they leave "
            "cores idle at, or on a fixed workload: work_per_row --sizes 2)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=600.0, help="tweets per second, warm-up and measured run alike")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--warmup-s", type=float, default=15.0)
    p.add_argument("--apps", default="synchronous,integrated")
    p.add_argument("--out", type=Path, default=Path("/tmp/async-triggers-cpu-by-approach"))
    args = p.parse_args(argv)
    from async_triggers.benchmarks.harness.processes import node_pids
    from async_triggers.benchmarks.harness.config import BenchConfig
    from async_triggers.benchmarks.harness.run_app import run_app
    from async_triggers.benchmarks.harness.testbed import Testbed
    from async_triggers.spark_jobs.loadgen import Phase
    apps = tuple(a for a in args.apps.split(",") if a)
    bed = Testbed(BenchConfig(out=args.out, apps=apps, db_nodes=2),
                  progress=lambda m: print(f"-- {m}", file=sys.stderr, flush=True))
    try:
        bed.use_cluster(2)
        for app in apps:
            run_app(bed, "80pct_own", app, [Phase(args.warmup_s, args.rate)], write=False)
            pids = node_pids(bed.settings, bed.cluster_name)
            with jfr_profile.Recording(pids, args.out / app, name=f"cpu-{app}") as recording:
                by_pid = {str(pid): pid for pid in pids}
                cpu_before, started = sum(resources.cpu_seconds(by_pid).values()), time.monotonic()
                run, _ = run_app(bed, "80pct_own", app, [Phase(args.seconds, args.rate)], write=False)
                cpu_s = sum(resources.cpu_seconds(by_pid).values()) - cpu_before
                wall_s = time.monotonic() - started
            tweets = run["requests"]["ok"]
            total, shares = per_thousand((f for path in recording.files for f in jfr_profile.stacks(path)), tweets)
            caveat = saturation(cpu_s, wall_s, os.cpu_count() or 1)
            print("\n".join(lines(app, args.rate, args.seconds, tweets, run["config"]["kept_up"], total, shares, cpu_s)
                             + ([caveat] if caveat else [])), flush=True)
    finally:
        bed.remove_cluster()
        bed.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
