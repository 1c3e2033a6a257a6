"""The issue's targets, each measured from the runs: met, MISSED, or not measured (with why, where a repetition
lacks the data). A target over repetitions holds only if it holds in every one of them."""
from __future__ import annotations

from typing import Callable, Sequence

from async_triggers.benchmarks.report import reference
from async_triggers.benchmarks.report.format import NA, md_table
from async_triggers.benchmarks.report.runs import (app_cost_per_message, get, latest, repetition, repetitions,
                                                   with_burst_base)
from async_triggers.benchmarks.results import saturating_rate

APPS = reference.APPROACHES


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b in (None, 0) else a / b


def targets(runs: Sequence[dict], db_nodes: int = 2) -> list[tuple[str, str, str]]:
    """The issue's targets as (target, measured, verdict): verdict is met, MISSED or not measured."""
    def at(experiment, app):
        return latest(runs, experiment, app, db_nodes)

    every = list(runs)
    # each measurement once: a run standing for another experiment's too (same schedule) is not named again
    invalid = [r["run_id"] for r in runs if r.get("valid") is False and not get(r, "config", "same_run_as")]
    runs = with_burst_base([r for r in runs if r.get("valid", True)], "lowest")
    rows = []

    def each_repetition(name, experiment, a, b, value: Callable[[dict], float | None], ok: Callable[[float], bool],
                        searched: bool = False):
        """``value(a) / value(b)`` in each repetition both have: met when it holds in every one; ``searched``: the
        values are the saturation searches' rates, and a search that found no limit is named."""
        ra = {repetition(r): r for r in repetitions(runs, experiment, a, db_nodes)}
        rb = {repetition(r): r for r in repetitions(runs, experiment, b, db_nodes)}
        ratios = [v for v in (_ratio(value(ra[k]), value(rb[k])) for k in sorted(set(ra) & set(rb))) if v is not None]
        if not ratios:
            rows.append((name, NA, "not measured"))
            return
        measured = (f"{ratios[0]:.2f}x" if len(ratios) == 1 else
                    f"{min(ratios):.2f}x–{max(ratios):.2f}x ({len(ratios)} repetitions)")
        if searched:   # a search with a bounded rate and no confirmed miss measured a lower bound: say whose
            bounds = [f"repetition {k}: {app.replace('_', ' ')}'s rate is a lower bound (no confirmed miss in its "
                      f"search)" for k in sorted(set(ra) & set(rb)) for app, run in ((a, ra[k]), (b, rb[k]))
                      if get(run, "config", "search_bounds", "bounded") is not None
                      and get(run, "config", "search_bounds", "unbounded") is None]
            measured += "".join(f"; {b}" for b in bounds)
        rows.append((name, measured, "met" if all(ok(v) for v in ratios) else "MISSED"))

    def throughput(run):
        return saturating_rate(run)

    def response(key):
        return lambda run: get(run, "response_ms", key)

    def ratio_row(name, value, ok: Callable[[float], bool], unit="x"):
        if value is None:
            rows.append((name, NA, "not measured"))
        else:
            rows.append((name, f"{value:.2f}{unit}", "met" if ok(value) else "MISSED"))

    def capacities(sender):
        """The generator's capacity with this sender in each repetition, in repetition order."""
        return [get(r, "throughput_msg_s") for r in sorted(runs, key=repetition)
                if r["experiment"] == "capacity" and get(r, "config", "sender") == sender]

    for sender, how in (("null", "alone (a sender answered at once)"),
                        ("release_version", "through the driver, the idle cluster answering")):
        # the lowest of the repetitions: the target holds in every one
        capacity = capacities(sender)
        name = f"load generator capacity >= 3x the highest offered rate, {how}"
        if capacity and not all(capacity):   # a repetition measured nothing: say so, not "0.00x"
            rows.append((name, f"not measured ({sum(1 for c in capacity if not c)} of {len(capacity)} "
                               "repetitions measured no throughput)", "not measured"))
        else:
            ratio_row(name, _ratio(min(capacity), highest_offered(runs)) if capacity else None, lambda v: v >= 3)
    for new_sender, old_sender, name in (
            ("release_version", "release_version_blocking",
             "load generator capacity against the cluster: asynchronous vs the former blocking threads"),
            ("release_version", "release_version_python",
             "load generator capacity against the cluster: the JVM sender (Java driver) vs the Python driver")):
        new, old = capacities(new_sender), capacities(old_sender)
        if new and old and all(v is not None for v in new) and all(old):
            pairs = list(zip(new, old))
            shown = ", ".join(f"{n:.0f} vs {o:.0f}" for n, o in pairs)
            ratios = [n / o for n, o in pairs]
            spread_x = f"{ratios[0]:.1f}x" if len(ratios) == 1 else f"{min(ratios):.1f}x–{max(ratios):.1f}x"
            rows.append((name, f"{shown} requests/s ({spread_x})", "counted"))
    rows.append(("runs where the load generator kept its schedule (invalid runs are left out of every table)",
                 f"{len(invalid)} invalid" + (f": {', '.join(invalid)}" if invalid else ""),
                 "met" if not invalid else "MISSED"))
    each_repetition("saturating throughput: integrated >= 0.8x the plain write (tweets only, no flow)",
                    "saturating", "integrated", "plain", throughput, lambda v: v >= 0.8, searched=True)
    for other, factor in (("external_queue", 2), ("synchronous", 1)):
        each_repetition(f"saturating throughput: integrated >= {f'{factor}x ' if factor != 1 else ''}"
                        f"{other.replace('_', ' ')}", "saturating", "integrated", other, throughput,
                        lambda v, factor=factor: v >= factor, searched=True)
    for other in ("external_queue", "synchronous"):
        for key in ("median", "p99"):
            each_repetition(f"80 %: integrated {key} <= {other.replace('_', ' ')}'s", "80pct", "integrated", other,
                            response(key), lambda v: v <= 1)
    each_repetition("80 %: synchronous median >= 5x integrated's", "80pct", "synchronous", "integrated",
                    response("median"), lambda v: v >= 5)
    for i, what in ((0, "CPU"), (1, "network bytes")):
        each_repetition(f"application {what} per message: integrated <= 0.2x external queue's", "saturating",
                        "integrated", "external_queue", lambda run, i=i: (app_cost_per_message(run) or (None, None))[i],
                        lambda v: v <= 0.2)
    # the flow's fan-out with its queues never empty (experiments.bulk_writer.flow_fanout) against the bulk writer,
    # repetition by repetition; without such runs, the saturating run's fan-out against the latest bulk writer
    fanout_name = "fan-out rows/s: integrated >= 0.9x plain bulk writer"
    if repetitions(runs, "bulk_writer", "integrated"):
        each_repetition(fanout_name, "bulk_writer", "integrated", "bulk_writer",
                        lambda run: get(run, "fanout_rows_s"), lambda v: v >= 0.9)
    else:
        bulk, fanout = latest(runs, "bulk_writer", "bulk_writer"), at("saturating", "integrated")
        ratio_row(fanout_name, _ratio(get(fanout, "fanout_rows_s"), get(bulk, "fanout_rows_s")), lambda v: v >= 0.9)
    for app in ("external_queue", "integrated"):
        reps = repetitions(runs, "burst", app)
        name = f"burst at a common rate: 0 lost requests, {reference.LABELS[app]}"
        if not reps:
            rows.append((name, NA, "not measured"))
        else:
            lost = [r["requests"]["dropped"] + r["requests"]["error"] for r in reps]
            rows.append((name, ", ".join(str(n) for n in lost) + " lost", "met" if not any(lost) else "MISSED"))
    sync = repetitions(runs, "burst", "synchronous")
    if sync:
        rows.append(("burst: synchronous losses (counted, no target)", losses(sync), "counted"))
    for app in APPS:
        missing = [m for m in (get(r, "verification", "missing") for r in repetitions(runs, "fault", app))
                   if m is not None]
        name = f"fault: 0 missing propagations, {reference.LABELS[app]}"
        rows.append((name, NA, "not measured") if not missing
                    else (name, ", ".join(str(m) for m in missing) + " missing", "met" if not any(missing) else "MISSED"))
    return rows + own_limit_targets(runs, every, db_nodes)


# -- each approach at its own limits -----------------------------------------------------------------------------
LAG_P99_MS = 250.0
ACK_VS_PLAIN = 1.2


def over_repetitions(name: str, values: dict[int, float], gaps: list[str], ok: Callable[[float], bool],
                     show: Callable[[list[float]], str]) -> tuple[str, str, str]:
    """A target over repetitions from each one's value (``gaps``: why a repetition has none): MISSED when a measured
    repetition misses it, else not measured while a repetition lacks its value, else met."""
    measured = [values[k] for k in sorted(values)]
    if not measured:
        return name, f"not measured ({'; '.join(gaps) or 'no run'})", "not measured"
    text = show(measured)
    if not all(ok(v) for v in measured):
        return name, text + (f" ({'; '.join(gaps)})" if gaps else ""), "MISSED"
    if gaps:
        return name, f"not measured ({'; '.join(gaps)}; the others: {text})", "not measured"
    return name, text, "met"


def _by_repetition(valid: Sequence[dict], every: Sequence[dict], experiment: str, app: str,
                   db_nodes: int) -> tuple[dict[int, dict], list[int]]:
    """The valid run of each repetition, and the repetitions whose only run is invalid."""
    have = {repetition(r): r for r in repetitions(valid, experiment, app, db_nodes)}
    ran = {repetition(r) for r in repetitions(every, experiment, app, db_nodes)}
    return have, sorted(ran - set(have))


def _ratios(values: list[float]) -> str:
    return (f"{values[0]:.2f}x" if len(values) == 1 else
            f"{min(values):.2f}x–{max(values):.2f}x ({len(values)} repetitions)")


def offered_rate(run: dict) -> float:
    """The rate a steady run offered: its phase's, else what it scheduled per second."""
    phases = get(run, "config", "phases") or []
    return float(phases[0]["rate"]) if phases else float(run.get("offered_msg_s") or 0.0)


def own_limit_targets(valid: Sequence[dict], every: Sequence[dict], db_nodes: int) -> list[tuple[str, str, str]]:
    """The targets of the runs at each approach's own rate, over every repetition: at 80 % of it, the integrated
    propagation lag's p99 and its median acknowledgement against the plain write's at the same rate; in the burst
    at 200 % of it, no request lost by the asynchronous approaches (the synchronous one sheds load by design: its
    losses are counted)."""
    rows = []
    label = reference.LABELS
    integrated, invalid = _by_repetition(valid, every, "80pct_own", "integrated", db_nodes)
    gaps = [f"repetition {k}: the integrated run is invalid" for k in invalid]
    gaps += [f"repetition {k}: no propagation lag measured" for k, r in integrated.items()
             if get(r, "propagation_lag_ms", "p99") is None]
    rows.append(over_repetitions(
        f"at 80 % of its own rate: integrated propagation lag p99 <= {LAG_P99_MS:.0f} ms",
        {k: get(r, "propagation_lag_ms", "p99") for k, r in integrated.items()
         if get(r, "propagation_lag_ms", "p99") is not None},
        gaps or ([] if integrated else ["no 80pct_own run of the integrated approach"]),
        lambda v: v <= LAG_P99_MS, lambda vs: ", ".join(f"{v:.0f}" for v in vs) + " ms"))
    plain, plain_invalid = _by_repetition(valid, every, "80pct_own", "plain", db_nodes)
    ratios, gaps = {}, [f"repetition {k}: the integrated run is invalid" for k in invalid]
    gaps += [f"repetition {k}: the plain write's run is invalid" for k in plain_invalid]
    for k in sorted(set(integrated) | set(plain)):
        a, b = integrated.get(k), plain.get(k)
        if a is None or b is None:
            if k not in invalid and k not in plain_invalid:
                gaps.append(f"repetition {k}: no {'integrated' if a is None else 'plain write'} run")
        elif abs(offered_rate(a) - offered_rate(b)) > 0.01 * max(offered_rate(a), offered_rate(b)):
            gaps.append(f"repetition {k}: the plain write ran at {offered_rate(b):.0f} msg/s, the integrated "
                        f"approach at {offered_rate(a):.0f}")
        elif _ratio(get(a, "response_ms", "median"), get(b, "response_ms", "median")) is None:
            gaps.append(f"repetition {k}: no response time")
        else:
            ratios[k] = _ratio(get(a, "response_ms", "median"), get(b, "response_ms", "median"))
    if not integrated and not invalid:
        gaps = ["no 80pct_own run of the integrated approach"]
    elif not plain and not plain_invalid:
        gaps = ["no plain write run at the integrated approach's own rate"]
    rows.append(over_repetitions(
        f"at 80 % of its own rate: integrated median ack <= {ACK_VS_PLAIN}x the plain write's at the same rate",
        ratios, gaps, lambda v: v <= ACK_VS_PLAIN, _ratios))
    for app in ("external_queue", "integrated"):
        have, bad = _by_repetition(valid, every, "burst_own", app, db_nodes)
        rows.append(over_repetitions(
            f"burst at 200 % of its own rate: 0 lost requests, {label[app]}",
            {k: float(r["requests"]["dropped"] + r["requests"]["error"]) for k, r in have.items()},
            [f"repetition {k}: the run is invalid" for k in bad] or (
                [] if have else [f"no burst_own run of the {label[app]} approach"]),
            lambda v: v == 0, lambda vs: ", ".join(f"{v:.0f}" for v in vs) + " lost"))
    sync = repetitions(valid, "burst_own", "synchronous", db_nodes)
    if sync:
        rows.append(("burst at 200 % of its own rate: synchronous losses (counted, no target)", losses(sync),
                     "counted"))
    return rows


def losses(runs: Sequence[dict]) -> str:
    """The requests each run lost, one repetition after the other."""
    return "; ".join(f"{r['requests']['dropped']} dropped, {r['requests']['error']} failed of "
                     f"{r['requests']['scheduled']}" for r in runs)


def targets_table(runs: Sequence[dict], db_nodes: int = 2) -> list[str]:
    """The targets as report.md's "## Targets" table, markdown lines (docs/benchmarks.md's generated block too)."""
    return md_table(["target", "measured", "verdict"], [list(t) for t in targets(runs, db_nodes)])


def highest_offered(runs: Sequence[dict]) -> float | None:
    """The highest rate any experiment offered an approach: its busiest phase (the burst's 200 %), over every
    approach's run. Not the plain write's (no flow, a baseline): its search goes up to the rate at which the cluster
    itself stops keeping up, which no generator on the same machine can offer three times; each of its runs is judged
    instead by whether the generator kept its schedule (a run where it did not is invalid)."""
    rates = []
    for r in runs:
        if r["app"] in ("loadgen", "bulk_writer", "plain") or r.get("projected"):
            continue
        phases = get(r, "config", "phases") or []
        rates.append(max([p["rate"] for p in phases] + [r.get("offered_msg_s") or 0.0]))
    return max(rates) if rates else None
