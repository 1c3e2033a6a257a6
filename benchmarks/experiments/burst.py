"""The burst (§6.3, Figure 6): each approach at 50 %, 200 %, then 50 % of its own saturating rate; a request
``drop_after_s`` late is shed (the synchronous application's losses)."""
from __future__ import annotations

from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed


def run(bed: Testbed) -> list[dict]:
    from async_triggers.spark_jobs.loadgen import Phase
    rates = saturating_rates(bed)
    bed.use_cluster(bed.cfg.db_nodes)
    low, high, again = bed.cfg.burst_s
    return [run_app(bed, "burst", app, [Phase(low, 0.5 * rates[app]), Phase(high, 2.0 * rates[app]),
                                        Phase(again, 0.5 * rates[app])],
                    drop_after_s=bed.cfg.drop_after_s, config={"base_rate": rates[app]})[0]
            for app in bed.cfg.apps]
