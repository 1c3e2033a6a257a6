"""80 % of each approach's OWN saturating rate (ours; the report's §6.2 offers all of them one rate, 0.8 x the
lowest, experiment ``80pct``): each approach at 0.8 x the median of its own saturation searches, so its response
times and propagation lag are those near its own limit, not the slowest approach's. Beside the integrated
approach, the plain write (tweets only, no flow) at the integrated approach's rate: the same requests without the
flow, what its acknowledgement is compared with. Runs say ``config.base`` "own", ``config.base_rate`` (the
saturating rate the 80 % is of) and ``config.rate_of`` (whose rate it is)."""
from __future__ import annotations

from typing import Sequence

from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.config import PLAIN
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed

EXPERIMENT = "80pct_own"
SHARE = 0.8
COMPARED_WITH_PLAIN = "integrated"


def own_rates(rates: dict[str, float], apps: Sequence[str], plain: bool) -> list[tuple[str, str, float]]:
    """(application, whose saturating rate, that rate) in run order: each approach of ``apps`` its own; with
    ``plain``, the plain write at the integrated approach's (when that approach runs)."""
    out = [(app, app, rates[app]) for app in apps if app != PLAIN]
    if plain and COMPARED_WITH_PLAIN in apps:
        out.append((PLAIN, COMPARED_WITH_PLAIN, rates[COMPARED_WITH_PLAIN]))
    return out


def run(bed: Testbed) -> list[dict]:
    from async_triggers.spark_jobs.loadgen import Phase
    cfg = bed.cfg
    plan = own_rates(saturating_rates(bed), cfg.apps, cfg.plain_baseline or PLAIN in cfg.apps)
    bed.use_cluster(cfg.db_nodes)
    return [run_app(bed, EXPERIMENT, app, [Phase(cfg.steady_s, SHARE * base)],
                    config={"base": "own", "base_rate": base, "rate_of": of})[0]
            for app, of, base in plan]
