"""The report's experiments ("Building Data Flows Using Distributed Key-Value Stores", §6) on a local cluster, one module each, and the small benchmarks that print
their figures (``ack_latency``, ``backup_size``).

    ctl bench run capacity|bulk|saturating|80pct|80pct_own|burst|burst_own|fault|scale [--smoke] [--out DIR]
    ctl bench all [--smoke]                 every experiment, then the report
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from async_triggers.benchmarks import results
from async_triggers.benchmarks.errors import BenchError, ResultsError
from async_triggers.benchmarks.experiments import (bulk_writer, burst, burst_own, capacity, eighty_pct, eighty_pct_own,
                                                   fault, saturating, scale)
from async_triggers.benchmarks.harness.config import BenchConfig
from async_triggers.benchmarks.harness.testbed import Progress, Testbed

# by name, in the order `ctl bench all` runs them (the runs at each approach's own rate beside those at a common one)
MODULES = {"capacity": capacity, "bulk": bulk_writer, "saturating": saturating, "80pct": eighty_pct,
           "80pct_own": eighty_pct_own, "burst": burst, "burst_own": burst_own, "fault": fault, "scale": scale}
RUNNERS = {name: module.run for name, module in MODULES.items()}
EXPERIMENTS = tuple(RUNNERS)


def prepare_out(out: Path, replace: bool = False, allow_mixed_commits: bool = False) -> None:
    """Before hours of running: the results directory must not hold runs of another commit (the report would refuse
    them), unless they are to be mixed; ``replace`` deletes the runs, raw requests, figures and report there."""
    out = Path(out)
    if replace and out.is_dir():
        for pattern in ("*.json", "*.requests.csv", "*.requests.csv.gz", "*.png", "report.md"):
            for path in out.glob(pattern):
                path.unlink()
    if allow_mixed_commits or not out.is_dir() or not any(out.glob("*.json")):
        return
    commit = results.git_commit()
    others = sorted({str(r.get("commit")) for r in results.load_runs(out)} - {str(commit)})
    if others:
        raise ResultsError(f"{out} holds runs of other commits ({', '.join(others)}; this checkout is {commit}): "
                           "--replace deletes them first, --out picks another directory, --allow-mixed-commits "
                           "keeps them in one report")


def run_experiments(config: BenchConfig, names: Sequence[str], settings=None, progress: Progress = print,
                    allow_mixed_commits: bool = False) -> Path:
    """Run the named experiments in order, each ``config.repeat`` times (the later experiments' rates from the
    median of the saturation searches), then the 16-node projection and the report; returns report.md."""
    unknown = [n for n in names if n not in RUNNERS]
    if unknown:
        raise BenchError(f"unknown experiment(s) {', '.join(unknown)}: choose from {', '.join(EXPERIMENTS)}")
    from async_triggers.benchmarks.harness import plan
    prepare_out(config.out, allow_mixed_commits=allow_mixed_commits)
    progress(plan.describe(config, names))
    bed = Testbed(config, settings, progress)
    try:
        for name in names:            # all repetitions of one experiment together: one cluster switch per experiment
            if getattr(MODULES[name], "REPEATS_ITSELF", False):
                RUNNERS[name](bed)
                continue
            for repetition in range(1, config.repeat + 1):
                bed.repetition = repetition
                if config.repeat > 1:
                    progress(f"{name}: repetition {repetition} of {config.repeat}")
                RUNNERS[name](bed)
    finally:
        bed.close()
        bed.remove_cluster()
    from async_triggers.benchmarks import report
    from async_triggers.benchmarks.report import projection
    for projected in projection.report_scale(results.load_runs(config.out)):
        results.write_run(config.out, projected)
    return report.build(config.out, allow_mixed_commits=allow_mixed_commits)
