"""The burst (§6.3, Figure 6): every approach offered the same load, 50 %, 200 %, then 50 % of one base rate, as
the report did: the LOWEST saturating rate of the approaches (Figure 6), and, as a second figure, the HIGHEST
(Figure 6b: the slowest approach is pushed far past its limit). A request ``drop_after_s`` late is shed (the
synchronous application's losses), with the same rule for all. ``config.base`` says which base a run had. The
burst at each approach's own rate is experiment ``burst_own`` (burst_own.py)."""
from __future__ import annotations

from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.config import PLAIN
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed

BASES = ("lowest", "highest")


def base_rates(rates: dict[str, float]) -> dict[str, float]:
    """The burst's base rates from the approaches' saturating rates (the plain write is not an approach)."""
    approaches = [r for app, r in rates.items() if app != PLAIN]
    return {"lowest": min(approaches), "highest": max(approaches)}


def burst_phases(burst_s: tuple[float, float, float], rate: float) -> list:
    """50 %, 200 %, 50 % of ``rate`` for the three durations of ``burst_s``."""
    from async_triggers.spark_jobs.loadgen import Phase
    low, high, again = burst_s
    return [Phase(low, 0.5 * rate), Phase(high, 2.0 * rate), Phase(again, 0.5 * rate)]


def run(bed: Testbed) -> list[dict]:
    bases = base_rates(saturating_rates(bed))
    bed.use_cluster(bed.cfg.db_nodes)
    out = []
    for name in BASES if bed.cfg.burst_highest else BASES[:1]:
        rate = bases[name]
        out += [run_app(bed, "burst", app, burst_phases(bed.cfg.burst_s, rate), drop_after_s=bed.cfg.drop_after_s,
                        config={"base_rate": rate, "base": name})[0]
                for app in bed.cfg.apps if app != PLAIN]
    return out
