"""Which runs the report reads (for each experiment, approach and number of database nodes the latest), and the
figures it derives from a run's resources."""
from __future__ import annotations

from typing import Any, Sequence


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
