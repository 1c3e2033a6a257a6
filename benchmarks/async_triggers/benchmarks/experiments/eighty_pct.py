"""80 % (§6.2, Table 2, Figure 8b): 0.8 x the lowest saturating rate of the approaches, offered to each of them,
so their response times compare under one load (the plain write, with ``--apps ...,plain``, at that rate too). The
scale experiment runs it at each cluster size with that size's rates. Each approach at 80 % of its own rate is
experiment ``80pct_own`` (eighty_pct_own.py)."""
from __future__ import annotations

from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.config import PLAIN
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed


def run(bed: Testbed, nodes: int | None = None, rates: dict[str, float] | None = None) -> list[dict]:
    """At ``nodes`` (default db_nodes), 0.8 x the lowest of ``rates`` (default: the saturating rates at
    db_nodes)."""
    from async_triggers.spark_jobs.loadgen import Phase
    rates = rates if rates is not None else saturating_rates(bed)
    rate = 0.8 * min(r for app, r in rates.items() if app != PLAIN)
    bed.use_cluster(nodes or bed.cfg.db_nodes)
    return [run_app(bed, "80pct", app, [Phase(bed.cfg.steady_s, rate)], config={"base_rate": rate / 0.8})[0]
            for app in bed.cfg.apps]
