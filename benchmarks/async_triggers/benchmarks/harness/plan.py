"""How long a benchmark run will take, from its configuration: printed before it starts (``ctl bench plan``, and
the first line of ``ctl bench run|all``), so a full run can be fitted into a working session.

The model is coarse, with constants measured on this machine (2 cores) from the committed full run: every
application run costs its schedule plus ``RUN_OVERHEAD_S`` (Spark's job, the barrier, the drain, the lag probe,
truncating the tables: 80 % runs started 27–35 s apart for 25-s schedules, bursts 53–59 s apart for 50-s ones), a
search step ``STEP_OVERHEAD_S`` (94 steps of 10 s took 35.5 min: the JVM sender's warm-up and the drain rule's wait
on top); an integrated burst its backlog's drain (``INTEGRATED_BURST_DRAIN_S``: 84–138 s apart) and each
repetition's first burst its flows' deploy (``BURST_REPETITION_S``); a cluster switch ``CLUSTER_S`` (110–160 s);
the fault run Spark's verification (``VERIFY_S``: fault runs 122–160 s apart for 90-s schedules) on top; the
capacity measurement every step up to ``capacity_max_rate`` and a warm-up step per sender.

A saturation search is counted with its own rule (:mod:`~async_triggers.benchmarks.harness.rate_search`) run
against a system bounded up to a limit (the approaches' ``APPROACH_LIMIT``, the plain write's ``PLAIN_LIMIT``, as
multiples of ``start_rate``, near the committed run's rates), every miss repeated, each repetition starting just
below the previous one's result, as the experiment does; the steps are the mean over limits spread across one
``rate_factor`` (where a limit falls between two rates of the search changes its steps).

To keep ``make bench`` within 2.5 h with the finer search (about 7 trials a search instead of 4–5) and the runs
at each approach's own limits, the steady runs last 25 s (the report: 60 s), the burst's 50 % phases 10 s around
its 30-s 200 % phase, a search at most ``max_steps`` (10) trials, the scale experiment's searches stop at
``scale_search_ratio`` (one bisection, as every search did before) at 4 nodes only (3 and 4 took about 10 min per size
and repetition, and the whole run 2.9 h), and an own burst whose schedule a common burst already ran is that run.
"""
from __future__ import annotations

import math
import statistics

from async_triggers.benchmarks.harness.config import APPS, PLAIN, BenchConfig
from async_triggers.benchmarks.harness.rate_search import simulate

RUN_OVERHEAD_S = 8.0
STEP_OVERHEAD_S = 12.7
CLUSTER_S = 150.0
VERIFY_S = 45.0
CAPACITY_OVERHEAD_S = 5.0
APPROACH_LIMIT = 2.7     # x start_rate: the committed 2-node approaches 188–885 msg/s
PLAIN_LIMIT = 80.0       # the plain write through the JVM sender: 7,684–18,158 msg/s, its searches up to 25,794
LIMIT_POINTS = 4         # limits spread across one rate_factor, whose steps are averaged
# an integrated burst: its backlog drains after the schedule (the others shed load or drained within the run's
# overhead); the first burst of a repetition deploys its flows again
INTEGRATED_BURST_DRAIN_S = 55.0
BURST_REPETITION_S = 40.0


def search_steps(cfg: BenchConfig, limit: float, ratio: float | None = None, start: float | None = None) -> float:
    """The trials of one application's searches over all repetitions at one size, against a system bounded up to
    ``limit`` x ``start_rate`` (the mean over limits spread across one ``rate_factor``), the first starting at
    ``start`` (default ``start_rate``) and stopping at ``ratio`` (default ``search_ratio``)."""
    if cfg.fixed_rate:
        return float(cfg.repeat)
    ratio = ratio or cfg.search_ratio
    counts = []
    for k in range(LIMIT_POINTS):
        at = cfg.start_rate * limit * cfg.rate_factor ** (k / LIMIT_POINTS)
        start_k, steps = start or cfg.start_rate, 0
        for _ in range(cfg.repeat):
            search = simulate(start_k, at, cfg.rate_factor, ratio, cfg.max_steps)
            steps += len(search.trials)
            if search.bounded_rate:          # as experiments.saturating: just below the previous best rate
                start_k = search.bounded_rate / ratio
        counts.append(steps)
    return statistics.fmean(counts)


def _search_s(cfg: BenchConfig, approaches: int, plain: bool, ratio: float | None = None) -> float:
    """The saturation searches of all repetitions at one size."""
    steps = (approaches * search_steps(cfg, APPROACH_LIMIT, ratio)
             + (search_steps(cfg, PLAIN_LIMIT, ratio, cfg.plain_start_rate) if plain else 0.0))
    # each approach's first search on the cluster warms it up first (search_warmup_s), a run of its own
    warmups = (approaches + plain) * (cfg.search_warmup_s + STEP_OVERHEAD_S) if cfg.search_warmup_s else 0.0
    return steps * (cfg.step_s + STEP_OVERHEAD_S) + warmups


def estimate(cfg: BenchConfig, names=None) -> list[tuple[str, float]]:
    """(experiment, seconds) in the order they run, for ``names`` (default: all)."""
    approaches = len([a for a in cfg.apps if a != PLAIN]) or len(APPS)
    apps = len(cfg.apps)
    plain_searched = cfg.plain_baseline and PLAIN not in cfg.apps
    # the plain write beside the integrated approach at its own 80 % rate
    plain_own = "integrated" in cfg.apps and (cfg.plain_baseline or PLAIN in cfg.apps)
    reuse = bool(cfg.reuse_cluster)
    switch = 0.0 if reuse else CLUSTER_S
    # the steps up to the highest rate, and the warm-up step before them
    capacity_steps = max(1, math.floor(math.log(cfg.capacity_max_rate / cfg.capacity_start_rate, cfg.rate_factor)) + 2)
    steady = cfg.steady_s + RUN_OVERHEAD_S
    burst = sum(cfg.burst_s) + RUN_OVERHEAD_S
    integrated_drain = ("integrated" in cfg.apps) * INTEGRATED_BURST_DRAIN_S
    # the own bursts that are common bursts' runs: only when both run in one process, the common one first
    order = list(names or ("burst", "burst_own"))
    reused = "burst" in order and "burst_own" in order and order.index("burst") < order.index("burst_own")
    reused_bursts = min(approaches, 2 if cfg.burst_highest else 1) if reused else 0
    parts = {
        "capacity": switch + cfg.repeat * (3 if cfg.capacity_blocking else 2) * capacity_steps
                    * (cfg.capacity_step_s + CAPACITY_OVERHEAD_S),
        "bulk": cfg.repeat * (2 * cfg.bulk_s + 60.0),
        "saturating": _search_s(cfg, apps - (PLAIN in cfg.apps), plain_searched or PLAIN in cfg.apps),
        "80pct": cfg.repeat * apps * steady,
        "80pct_own": cfg.repeat * (approaches + plain_own) * steady,
        "burst": cfg.repeat * (2 if cfg.burst_highest else 1) * (approaches * burst + integrated_drain)
                 + cfg.repeat * BURST_REPETITION_S,
        # the approaches whose own rate is the common burst's lowest (and highest) base reuse that run: the external
        # queue and the integrated approach in every committed run (so neither its drain nor its flow's deploy is
        # run again)
        "burst_own": cfg.repeat * (max(0, approaches - reused_bursts) * burst
                                   + (0.0 if reused_bursts >= 2 else integrated_drain + BURST_REPETITION_S)),
        "fault": (0.0 if cfg.fault_nodes == cfg.db_nodes else switch)
                 + cfg.repeat * approaches * (cfg.fault_s + RUN_OVERHEAD_S + VERIFY_S),
        "scale": sum(switch + _search_s(cfg, apps - (PLAIN in cfg.apps),
                                        PLAIN in cfg.apps or (plain_searched and n == cfg.db_nodes),
                                        cfg.scale_search_ratio)
                     + cfg.repeat * apps * steady for n in cfg.scale_nodes),
    }
    return [(n, parts[n]) for n in (names or parts)]


def describe(cfg: BenchConfig, names=None) -> str:
    """One line: the estimate in all and per experiment."""
    est = estimate(cfg, names)
    total = sum(s for _, s in est)
    return (f"estimated {total / 3600:.1f} h ({total / 60:.0f} min): "
            + ", ".join(f"{n} {s / 60:.0f} min" for n, s in est)
            + f"; repeat {cfg.repeat}, sizes {cfg.db_nodes}+{'/'.join(str(n) for n in cfg.scale_nodes)} nodes")
