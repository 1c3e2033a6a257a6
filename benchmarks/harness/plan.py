"""How long a benchmark run will take, from its configuration: printed before it starts (``ctl bench plan``, and
the first line of ``ctl bench run|all``), so a full run can be fitted into a working session.

The model is coarse and measured on this machine (2 cores): every application run costs its schedule plus
``RUN_OVERHEAD_S`` (Spark's job, the barrier, the drain, the lag probe, truncating the tables); a cluster switch
``CLUSTER_S`` (nodes, schema, the follower graph); a saturation search ``SEARCH_STEPS`` steps the first time at a
size and ``REPEAT_STEPS`` when it starts from the previous repetition's rate; the fault run Spark's verification
on top; the capacity measurement its steps and a warm-up step per sender.
"""
from __future__ import annotations

import math

from async_triggers.benchmarks.harness.config import APPS, PLAIN, BenchConfig

RUN_OVERHEAD_S = 15.0
CLUSTER_S = 180.0
SEARCH_STEPS = 5
REPEAT_STEPS = 3
VERIFY_S = 60.0
CAPACITY_OVERHEAD_S = 5.0


def _search_s(cfg: BenchConfig, apps: int) -> float:
    """The saturation searches of all repetitions at one size."""
    if cfg.fixed_rate:
        steps = cfg.repeat
    else:
        steps = min(SEARCH_STEPS, cfg.max_steps + 1) + (cfg.repeat - 1) * min(REPEAT_STEPS, cfg.max_steps + 1)
    return apps * steps * (cfg.step_s + RUN_OVERHEAD_S)


def estimate(cfg: BenchConfig, names=None) -> list[tuple[str, float]]:
    """(experiment, seconds) in the order they run, for ``names`` (default: all)."""
    approaches = len([a for a in cfg.apps if a != PLAIN]) or len(APPS)
    apps = len(cfg.apps)
    with_plain = apps + (1 if cfg.plain_baseline and PLAIN not in cfg.apps else 0)
    reuse = bool(cfg.reuse_cluster)
    switch = 0.0 if reuse else CLUSTER_S
    # the steps up to the highest rate, and the warm-up step before them
    capacity_steps = max(1, math.floor(math.log(cfg.capacity_max_rate / cfg.capacity_start_rate, cfg.rate_factor)) + 2)
    eighty = apps * (cfg.steady_s + RUN_OVERHEAD_S)
    parts = {
        "capacity": switch + cfg.repeat * (3 if cfg.capacity_blocking else 2) * capacity_steps
                    * (cfg.capacity_step_s + CAPACITY_OVERHEAD_S),
        "bulk": cfg.repeat * (2 * cfg.bulk_s + 60.0),
        "saturating": _search_s(cfg, with_plain),
        "80pct": cfg.repeat * eighty,
        "burst": cfg.repeat * (2 if cfg.burst_highest else 1) * approaches * (sum(cfg.burst_s) + RUN_OVERHEAD_S),
        "fault": (0.0 if cfg.fault_nodes == cfg.db_nodes else switch)
                 + cfg.repeat * approaches * (cfg.fault_s + RUN_OVERHEAD_S + VERIFY_S),
        "scale": sum(switch + _search_s(cfg, with_plain if n == cfg.db_nodes else apps) + cfg.repeat * eighty
                     for n in cfg.scale_nodes),
    }
    return [(n, parts[n]) for n in (names or parts)]


def describe(cfg: BenchConfig, names=None) -> str:
    """One line: the estimate in all and per experiment."""
    est = estimate(cfg, names)
    total = sum(s for _, s in est)
    return (f"estimated {total / 3600:.1f} h ({total / 60:.0f} min): "
            + ", ".join(f"{n} {s / 60:.0f} min" for n, s in est)
            + f"; repeat {cfg.repeat}, sizes {cfg.db_nodes}+{'/'.join(str(n) for n in cfg.scale_nodes)} nodes")
