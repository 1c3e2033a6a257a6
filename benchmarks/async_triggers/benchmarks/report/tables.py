"""Tables 1–4 in the report's layout, each cell ``report / ours``."""
from __future__ import annotations

from typing import Callable, Sequence

from async_triggers.benchmarks.report import reference
from async_triggers.benchmarks.report.format import NA, NONE, cell, fmt_ms, fmt_rate, fmt_sig, md_table
from async_triggers.benchmarks.report.runs import component_figures, get, latest, repetitions, spread
from async_triggers.benchmarks.results import COMPONENTS, nearest_rank, saturating_rate

APPS = reference.APPROACHES


def response_table(runs: Sequence[dict], table: dict, db_nodes: int | None = None) -> list[str]:
    """Table 1 or 2: throughput and response times, report / ours; Table 2 adds our p99 and p99.9."""
    nodes = db_nodes or table["db_nodes"]
    extra = table["id"] == "table2"
    header = ["", "Throughput [msg/s]", "Response Time [ms] median", "stddev", "max"]
    if extra:
        header += ["p99", "p99.9"]
    rows, used = [], []

    def ours(reps: list[dict], key: str, fmt: Callable[[float | None], str]) -> str:
        # Table 1: the rate each search confirmed bounded (results.saturating_rate); Table 2: what completed
        rate = saturating_rate if table["experiment"] == "saturating" else (lambda r: get(r, "throughput_msg_s"))
        return spread([rate(r) if key == "throughput" else get(r, "response_ms", key) for r in reps], fmt)

    for app in APPS:
        reps = repetitions(runs, table["experiment"], app, nodes)
        used += [r["run_id"] for r in reps]
        pub = table["rows"][app]
        row = [reference.LABELS[app], cell(pub["throughput_msg_s"], ours(reps, "throughput", fmt_rate)),
               cell(pub["median_ms"], ours(reps, "median", fmt_ms)), cell(pub["stddev_ms"], ours(reps, "stddev", fmt_ms)),
               cell(pub["max_ms"], ours(reps, "max", fmt_ms))]
        if extra:
            row += [cell(None, ours(reps, "p99", fmt_ms)), cell(None, ours(reps, "p999", fmt_ms))]
        rows.append(row)
    plain = repetitions(runs, table["experiment"], "plain", nodes) if table["id"] == "table1" else []
    if plain:   # what Cassandra itself takes here: the tweet write alone, no flow (the report has none)
        used += [r["run_id"] for r in plain]
        rows.append(["Plain write, no flow (ours only)", cell(None, ours(plain, "throughput", fmt_rate)),
                     cell(None, ours(plain, "median", fmt_ms)), cell(None, ours(plain, "stddev", fmt_ms)),
                     cell(None, ours(plain, "max", fmt_ms))])
    return _captioned(table, nodes, used, md_table(header, rows))


def resource_table(runs: Sequence[dict], table: dict, db_nodes: int | None = None) -> list[str]:
    """Table 3 or 4: CPU, memory, network and number of nodes per component, report / ours (ours: processes)."""
    nodes = db_nodes or table["db_nodes"]
    header = ["", "CPU [%] App", "DB", "Queue", "Memory [GB] App", "DB", "Queue", "Network Traffic [MB/s] App", "DB",
              "Queue", "Number of Nodes App", "DB", "Queue", "Total"]
    rows, used, projected = [], [], False
    for app in APPS:
        # every measured repetition; a table we cannot measure here (16 nodes) reads its projection
        reps = [r for r in repetitions(runs, table["experiment"], app, nodes) if r.get("resources") is not None]
        if not reps:
            run = latest(runs, table["experiment"], app, nodes)
            reps = [run] if run is not None and run.get("resources") is not None else []
        used += [r["run_id"] for r in reps]
        projected = projected or any(r.get("projected") for r in reps)
        pub = table["rows"][app]
        figures = [{comp: component_figures(r, comp) for comp in COMPONENTS} for r in reps]

        def ours(comp: str, key: str, fmt: Callable[[float | None], str]) -> str:
            if not reps:
                return NA
            if figures[0][comp] is None:
                return NONE
            return spread([f[comp][key] for f in figures if f[comp] is not None], fmt)

        row = [reference.RESOURCE_LABELS[app]]
        for key, pub_key in (("cpu_pct", "cpu_pct"), ("memory_gb", "memory_gb"), ("network_mb_s", "network_mb_s")):
            row += [cell(pub[pub_key][comp], ours(comp, key, fmt_sig)) for comp in COMPONENTS]
        row += [cell(pub["nodes"][comp], ours(comp, "processes", _fmt_count)) for comp in COMPONENTS]
        totals = [sum(c["processes"] for c in f.values() if c is not None) for f in figures]
        row.append(cell(pub["nodes"]["total"], spread(totals, _fmt_count)))
        rows.append(row)
    lines = _captioned(table, nodes, used, md_table(header, rows))
    lines.insert(4, "Ours: CPU is the average per process (100 % = one core busy), memory the sum of resident "
                    "memory, network the sum of bytes in and out per second; nodes are processes (the application "
                    "counts the load generator and the queue workers)." + (
                        " Our numbers for this table are *projected* from measured per-message costs, "
                        "not measured." if projected else ""))
    lines.insert(5, "")
    return lines


def _fmt_count(value: float | None) -> str:
    return NA if value is None else str(int(value))


def _captioned(table: dict, nodes: int, used: list[str], body: list[str]) -> list[str]:
    runs = ", ".join(f"`{u}`" for u in used) if used else "none"
    return [f"### {table['title']}", "",
            f"Each cell: report / ours. Ours: {nodes} Cassandra node(s); with several repetitions, their median "
            f"(min–max); runs: {runs}.", "", *body, ""]


# -- each approach at its own limits (ours only: the report offered every approach one rate) ----------------------
OWN_EIGHTY = {"id": "own80", "experiment": "80pct_own",
              "title": "Ours only: each approach at 80 % of its own saturating rate.",
              "what": "each approach offered 0.8x the median of its own saturation searches; the plain write (no "
                      "flow) the integrated approach's rate, the same requests without the flow"}
OWN_BURST = {"id": "own_burst", "experiment": "burst_own",
             "title": "Ours only: the burst at 50 % / 200 % / 50 % of each approach's own saturating rate.",
             "what": "each approach offered 50 %, 200 %, then 50 % of the median of its own saturation searches; a "
                     "request more than drop_after_s late is dropped"}
PLAIN_LABEL = "Plain write at the integrated rate, no flow"


def lost(run: dict) -> int:
    """Requests lost in a run: dropped (shed, too late) or failed."""
    return run["requests"]["dropped"] + run["requests"]["error"]


def _count(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}"


def own_limits_table(runs: Sequence[dict], table: dict, db_nodes: int) -> list[str]:
    """A run at each approach's own rate (``OWN_EIGHTY`` or ``OWN_BURST``): offered rate, completed throughput,
    response times, propagation lag and lost requests, each the median (min–max) of the repetitions; ``–`` where
    the application has no such figure (the plain write propagates nothing)."""
    burst = table["experiment"] == "burst_own"
    header = ["", "Base rate [msg/s]", "Peak [msg/s]" if burst else "Offered [msg/s]", "Throughput [msg/s]",
              "Response Time [ms] median", "p99", "max", "Propagation Lag [ms] p50", "p99", "max",
              "Lost requests"] + (["Drain [s]"] if burst else [])
    rows, used, probes = [], [], []
    apps = list(APPS) + ([] if burst else ["plain"])
    for app in apps:
        reps = repetitions(runs, table["experiment"], app, db_nodes)
        if app != "plain":
            probes += [n for r in reps if (n := get(r, "config", "probes"))]
        # a run that is another experiment's (the same schedule) is named by the run measured
        used += [f"{r['run_id']}` = `{r['config']['same_run_as']}" if get(r, "config", "same_run_as") else r["run_id"]
                 for r in reps]

        def ours(value: Callable[[dict], float | None], fmt: Callable[[float | None], str]) -> str:
            return spread([value(r) for r in reps], fmt)

        def lag(key: str) -> str:
            return NONE if app == "plain" and reps else ours(lambda r: get(r, "propagation_lag_ms", key), fmt_ms)

        peak = ours(lambda r: max((p["rate"] for p in get(r, "config", "phases") or []), default=None), fmt_rate)
        row = [PLAIN_LABEL if app == "plain" else reference.LABELS[app],
               ours(lambda r: get(r, "config", "base_rate"), fmt_rate),
               peak if burst else ours(lambda r: get(r, "offered_msg_s"), fmt_rate),
               ours(lambda r: get(r, "throughput_msg_s"), fmt_rate),
               *(ours(lambda r, key=key: get(r, "response_ms", key), fmt_ms) for key in ("median", "p99", "max")),
               lag("median"), lag("p99"), lag("max"), ours(lost, _count)]
        if burst:
            row.append(ours(lambda r: get(r, "drain_s"), lambda v: NA if v is None else f"{v:.1f}"))
        rows.append(row)
    listed = ", ".join(f"`{u}`" for u in used) if used else "none"
    return [f"### {table['title']}", "",
            f"Ours: {db_nodes} Cassandra node(s); {table['what']}. Lost: dropped or failed. {_probes(probes)}With "
            f"several repetitions, their median (min–max); runs: {listed}.", "", *md_table(header, rows), ""]


def _probes(counts: list[int]) -> str:
    """How many lag probes stand behind the lag columns: p99 is a nearest rank, the largest below 100 probes."""
    if not counts:
        return ""
    # the lag's p99 is results.nearest_rank's: the largest probe when a run had too few to leave one above it
    few = " (with fewer than 100, p99 is the largest)" if any(nearest_rank(range(n), 99) == n - 1 for n in counts) \
        else ""
    return (f"Propagation lag: probe tweets, one a second, from acknowledgement to readable timeline rows, "
            f"{min(counts)}–{max(counts)} per run{few}. ")
