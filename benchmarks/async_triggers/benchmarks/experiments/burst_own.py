"""The burst at each approach's OWN limit (ours; the report's §6.3 offers all of them one load, experiment
``burst``): 50 %, 200 %, then 50 % of the median of the approach's own saturation searches, with the same
shedding rule (a request ``drop_after_s`` late is dropped). What it measures: the requests each approach loses
when pushed to twice what it sustains, and its propagation lag meanwhile. Runs say ``config.base`` "own" and
``config.base_rate``. The approach whose own rate is the common burst's lowest (or highest) base had that very
schedule in the repetition's ``burst``: that run stands for this one (``config.same_run_as``), not run twice."""
from __future__ import annotations

from async_triggers.benchmarks.experiments.burst import burst_phases
from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.config import PLAIN
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed

EXPERIMENT = "burst_own"


def run(bed: Testbed) -> list[dict]:
    rates = saturating_rates(bed)
    bed.use_cluster(bed.cfg.db_nodes)
    return [run_app(bed, EXPERIMENT, app, burst_phases(bed.cfg.burst_s, rates[app]),
                    drop_after_s=bed.cfg.drop_after_s, config={"base_rate": rates[app], "base": "own"},
                    same_schedule=True)[0]
            for app in bed.cfg.apps if app != PLAIN]
