"""The issue's targets, each measured from the runs: met, MISSED, or not measured."""
from __future__ import annotations

from typing import Callable, Sequence

from async_triggers.benchmarks.report import reference
from async_triggers.benchmarks.report.format import NA
from async_triggers.benchmarks.report.runs import app_cost_per_message, get, latest, with_burst_base

APPS = reference.APPROACHES


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b in (None, 0) else a / b


def targets(runs: Sequence[dict], db_nodes: int = 2) -> list[tuple[str, str, str]]:
    """The issue's targets as (target, measured, verdict): verdict is met, MISSED or not measured."""
    def at(experiment, app):
        return latest(runs, experiment, app, db_nodes)

    invalid = [r["run_id"] for r in runs if r.get("valid") is False]
    runs = with_burst_base([r for r in runs if r.get("valid", True)], "lowest")
    sat = {app: get(at("saturating", app), "throughput_msg_s") for app in APPS}
    resp = {app: get(at("80pct", app), "response_ms") or {} for app in APPS}
    cost = {app: app_cost_per_message(at("saturating", app)) for app in APPS}
    rows = []

    def ratio_row(name, value, ok: Callable[[float], bool], unit="x"):
        if value is None:
            rows.append((name, NA, "not measured"))
        else:
            rows.append((name, f"{value:.2f}{unit}", "met" if ok(value) else "MISSED"))

    capacity = [get(r, "throughput_msg_s") for r in runs if r["experiment"] == "capacity"
                and get(r, "config", "sender") in ("null", "release_version")]
    ratio_row("load generator capacity >= 3x the highest offered rate",
              _ratio(min(capacity), highest_offered(runs)) if capacity else None, lambda v: v >= 3)
    rows.append(("runs where the load generator kept its schedule (invalid runs are left out of every table)",
                 f"{len(invalid)} invalid" + (f": {', '.join(invalid)}" if invalid else ""),
                 "met" if not invalid else "MISSED"))
    ratio_row("saturating throughput: integrated >= 0.8x the plain write (tweets only, no flow)",
              _ratio(sat["integrated"], get(at("saturating", "plain"), "throughput_msg_s")), lambda v: v >= 0.8)
    ratio_row("saturating throughput: integrated >= external queue",
              _ratio(sat["integrated"], sat["external_queue"]), lambda v: v >= 1)
    ratio_row("saturating throughput: integrated >= synchronous",
              _ratio(sat["integrated"], sat["synchronous"]), lambda v: v >= 1)
    ratio_row("80 %: integrated median <= external queue's",
              _ratio(resp["integrated"].get("median"), resp["external_queue"].get("median")), lambda v: v <= 1)
    ratio_row("80 %: integrated p99 <= external queue's",
              _ratio(resp["integrated"].get("p99"), resp["external_queue"].get("p99")), lambda v: v <= 1)
    ratio_row("80 %: synchronous median >= 5x integrated's",
              _ratio(resp["synchronous"].get("median"), resp["integrated"].get("median")), lambda v: v >= 5)
    ratio_row("application CPU per message: integrated <= 0.2x external queue's",
              _ratio(*(c[0] if c else None for c in (cost["integrated"], cost["external_queue"]))), lambda v: v <= 0.2)
    ratio_row("application network bytes per message: integrated <= 0.2x external queue's",
              _ratio(*(c[1] if c else None for c in (cost["integrated"], cost["external_queue"]))), lambda v: v <= 0.2)
    bulk = latest(runs, "bulk_writer", "bulk_writer")
    # the flow's fan-out with its queues never empty (experiments.bulk_writer.flow_fanout), else the saturating run's
    fanout = latest(runs, "bulk_writer", "integrated") or at("saturating", "integrated")
    ratio_row("fan-out rows/s: integrated >= 0.9x plain bulk writer",
              _ratio(get(fanout, "fanout_rows_s"), get(bulk, "fanout_rows_s")), lambda v: v >= 0.9)
    for app in ("external_queue", "integrated"):
        run = latest(runs, "burst", app)
        if run is None:
            rows.append((f"burst at a common rate: 0 lost requests, {reference.LABELS[app]}", NA, "not measured"))
        else:
            lost = run["requests"]["dropped"] + run["requests"]["error"]
            rows.append((f"burst at a common rate: 0 lost requests, {reference.LABELS[app]}", f"{lost} lost",
                         "met" if lost == 0 else "MISSED"))
    sync_burst = latest(runs, "burst", "synchronous")
    if sync_burst is not None:
        req = sync_burst["requests"]
        rows.append(("burst: synchronous losses (counted, no target)",
                     f"{req['dropped']} dropped, {req['error']} failed of {req['scheduled']}", "counted"))
    for app in APPS:
        run = latest(runs, "fault", app)
        missing = get(run, "verification", "missing")
        name = f"fault: 0 missing propagations, {reference.LABELS[app]}"
        rows.append((name, NA, "not measured") if missing is None
                    else (name, f"{missing} missing", "met" if missing == 0 else "MISSED"))
    return rows


def highest_offered(runs: Sequence[dict]) -> float | None:
    """The highest rate any experiment offered: its busiest phase (the burst's 200 %), over every approach's run."""
    rates = []
    for r in runs:
        if r["app"] in ("loadgen", "bulk_writer") or r.get("projected"):
            continue
        phases = get(r, "config", "phases") or []
        rates.append(max([p["rate"] for p in phases] + [r.get("offered_msg_s") or 0.0]))
    return max(rates) if rates else None
