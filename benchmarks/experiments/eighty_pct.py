"""80 % (§6.2, Table 2, Figure 8b): 0.8 x the lowest saturating rate of the approaches, offered to each of them,
so their response times compare under one load."""
from __future__ import annotations

from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed


def run(bed: Testbed) -> list[dict]:
    from async_triggers.spark_jobs.loadgen import Phase
    rate = 0.8 * min(saturating_rates(bed).values())
    bed.use_cluster(bed.cfg.db_nodes)
    return [run_app(bed, "80pct", app, [Phase(bed.cfg.steady_s, rate)], config={"base_rate": rate / 0.8})[0]
            for app in bed.cfg.apps]
