"""Which runs the report reads, and the figures it derives from a run's resources.

Every run of an experiment, approach and number of database nodes in the results directory is a repetition of it
(``config.repetition`` numbers them; ``ctl bench --repeat N``): tables give their median and min-max, the targets
must hold in every repetition, and :func:`latest` is the one a figure over time draws. The report refuses runs of
different commits (:func:`check_commits`) unless asked.
"""
from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence

from async_triggers.benchmarks.errors import ResultsError
from async_triggers.benchmarks.report import reference


def default_nodes(runs: Sequence[dict]) -> int:
    """The node count Tables 1-3 and the targets use: the report's 2 when we measured at 2 nodes, else the
    smallest count with a measured saturating run (a smoke run on the test suite's 3-node cluster)."""
    counts = sorted({r["db_nodes"] for r in runs if r["experiment"] == "saturating" and not r.get("projected")})
    return reference.TABLE_1["db_nodes"] if not counts or reference.TABLE_1["db_nodes"] in counts else counts[0]


def latest(runs: Sequence[dict], experiment: str, app: str, db_nodes: int | None = None) -> dict | None:
    found = [r for r in runs if r["experiment"] == experiment and r["app"] == app
             and (db_nodes is None or r["db_nodes"] == db_nodes)]
    return max(found, key=lambda r: (r["started_at"], r["run_id"])) if found else None


def by_nodes(runs: Sequence[dict], experiment: str, app: str) -> list[dict]:
    """The latest measured run of each number of database nodes, by nodes (projections are not measurements)."""
    measured = [r for r in runs if not r.get("projected")]
    nodes = sorted({r["db_nodes"] for r in measured if r["experiment"] == experiment and r["app"] == app})
    return [latest(measured, experiment, app, n) for n in nodes]


def get(run: dict | None, *path: str) -> Any:
    value: Any = run
    for key in path:
        if value is None:
            return None
        value = value.get(key)
    return value


def component_figures(run: dict | None, comp: str) -> dict | None:
    """CPU % (average per process, 100 = one core), memory GB (sum), network MB/s (in + out, sum), processes;
    None when the run measured no resources or the approach has no such component."""
    res = get(run, "resources")
    if res is None or res.get(comp) is None:
        return None
    c, window = res[comp], res["window_s"]
    return {"cpu_pct": 100 * c["cpu_s"] / window / max(1, c["processes"]), "memory_gb": c["memory_gb"],
            "network_mb_s": c["net_bytes"] / window / 1e6, "processes": c["processes"]}


def app_cost_per_message(run: dict | None) -> tuple[float, float] | None:
    """The application's CPU ms and network bytes per completed message (the issue's cost targets)."""
    res = get(run, "resources")
    if res is None or not res.get("messages") or res.get("app") is None:
        return None
    return 1000 * res["app"]["cpu_s"] / res["messages"], res["app"]["net_bytes"] / res["messages"]


def with_burst_base(runs: Sequence[dict], base: str) -> list[dict]:
    """The runs with only the burst runs of one base rate ("lowest": Figure 6, the targets; "highest": Figure 6b).
    A run without ``config.base`` is from before the common base: its own rate, read as "lowest"."""
    return [r for r in runs if r["experiment"] != "burst" or (get(r, "config", "base") or "lowest") == base]


def repetitions(runs: Sequence[dict], experiment: str, app: str, db_nodes: int | None = None) -> list[dict]:
    """The runs of one experiment, approach and node count, one per repetition index (the latest of each), in
    repetition order."""
    found = [r for r in runs if r["experiment"] == experiment and r["app"] == app and not r.get("projected")
             and (db_nodes is None or r["db_nodes"] == db_nodes)]
    by_rep: dict[int, dict] = {}
    for r in sorted(found, key=lambda r: (r["started_at"], r["run_id"])):
        by_rep[repetition(r)] = r
    return [by_rep[k] for k in sorted(by_rep)]


def same_schedule(runs: Sequence[dict]) -> str:
    """How many runs are another experiment's run of the same schedule (run_app.same_run: one measurement under two
    names), as the report's run counts say it; "" when none."""
    n = sum(1 for r in runs if get(r, "config", "same_run_as"))
    if not n:
        return ""
    return (f"{n} of them {'a run' if n == 1 else 'runs'} of another experiment with the same schedule, "
            f"measured once")


def repetition(run: dict) -> int:
    return int(get(run, "config", "repetition") or 1)


def spread(values: Sequence[float | None], fmt: Callable[[float | None], str]) -> str:
    """One value (or several equal ones) as ``fmt`` prints it; several as ``median (min–max)``; none as fmt(None)."""
    values = [v for v in values if v is not None]
    if not values:
        return fmt(None)
    if min(values) == max(values):
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def check_commits(runs: Sequence[dict], allow_mixed: bool = False) -> list[str]:
    """The commits of the runs; refuses (naming a run of each) when they differ, unless ``allow_mixed``."""
    by_commit: dict[str, list[str]] = {}
    for r in runs:
        by_commit.setdefault(str(r.get("commit")), []).append(r["run_id"])
    if len(by_commit) > 1 and not allow_mixed:
        detail = "; ".join(f"{c}: {len(ids)} run(s), e.g. {ids[0]}" for c, ids in sorted(by_commit.items()))
        raise ResultsError(f"the runs come from {len(by_commit)} commits ({detail}): a report mixes them only with "
                         "--allow-mixed-commits (or run `ctl bench all` into an empty --out)")
    return sorted(by_commit)


def by_node_count(runs: Sequence[dict], experiment: str, app: str,
                  value: Callable[[dict], float | None]) -> dict[int, list[float]]:
    """``value`` of every repetition of a measured experiment, by number of database nodes."""
    out: dict[int, list[float]] = {}
    nodes = sorted({r["db_nodes"] for r in runs if r["experiment"] == experiment and r["app"] == app})
    for n in nodes:
        values = [v for v in (value(r) for r in repetitions(runs, experiment, app, n)) if v is not None]
        if values:
            out[n] = values
    return out
