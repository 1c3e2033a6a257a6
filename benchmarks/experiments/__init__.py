"""The report's experiments (seed 000, §6) on a local cluster, one module each, and the small benchmarks that print
their figures (``ack_latency``, ``backup_size``).

    ctl bench run capacity|bulk|saturating|80pct|burst|fault|scale [--smoke] [--out DIR]
    ctl bench all [--smoke]                 every experiment, then the report
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from async_triggers.benchmarks import results
from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.experiments import bulk_writer, burst, capacity, eighty_pct, fault, saturating, scale
from async_triggers.benchmarks.harness.config import BenchConfig
from async_triggers.benchmarks.harness.testbed import Progress, Testbed

# by name, in the order `ctl bench all` runs them
RUNNERS = {"capacity": capacity.run, "bulk": bulk_writer.run, "saturating": saturating.run, "80pct": eighty_pct.run, "burst": burst.run,
           "fault": fault.run, "scale": scale.run}
EXPERIMENTS = tuple(RUNNERS)


def run_experiments(config: BenchConfig, names: Sequence[str], settings=None, progress: Progress = print) -> Path:
    """Run the named experiments in order, each ``config.repeat`` times (the later experiments' rates from the
    median of the saturation searches), then the 16-node projection and the report; returns report.md."""
    unknown = [n for n in names if n not in RUNNERS]
    if unknown:
        raise BenchError(f"unknown experiment(s) {', '.join(unknown)}: choose from {', '.join(EXPERIMENTS)}")
    bed = Testbed(config, settings, progress)
    try:
        for name in names:            # all repetitions of one experiment together: one cluster switch per experiment
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
    return report.build(config.out)
