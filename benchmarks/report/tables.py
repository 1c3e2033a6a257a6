"""Tables 1–4 in the report's layout, each cell ``report / ours``."""
from __future__ import annotations

from typing import Callable, Sequence

from async_triggers.benchmarks.report import reference
from async_triggers.benchmarks.report.format import NA, NONE, cell, fmt_ms, fmt_rate, fmt_sig, md_table
from async_triggers.benchmarks.report.runs import component_figures, get, latest, repetitions, spread
from async_triggers.benchmarks.results import COMPONENTS

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
        return spread([get(r, "throughput_msg_s") if key == "throughput" else get(r, "response_ms", key)
                       for r in reps], fmt)

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
        run = latest(runs, table["experiment"], app, nodes)
        if run is not None and run.get("resources") is not None:
            used.append(run["run_id"])
            projected = projected or bool(run.get("projected"))
        else:
            run = None
        pub = table["rows"][app]
        figures = {comp: component_figures(run, comp) for comp in COMPONENTS}

        def ours(comp: str, key: str, fmt: Callable[[float], str]) -> str:
            if run is None:
                return NA
            return NONE if figures[comp] is None else fmt(figures[comp][key])

        row = [reference.RESOURCE_LABELS[app]]
        for key, pub_key in (("cpu_pct", "cpu_pct"), ("memory_gb", "memory_gb"), ("network_mb_s", "network_mb_s")):
            row += [cell(pub[pub_key][comp], ours(comp, key, fmt_sig)) for comp in COMPONENTS]
        row += [cell(pub["nodes"][comp], ours(comp, "processes", lambda v: str(int(v)))) for comp in COMPONENTS]
        total = NA if run is None else str(int(sum(f["processes"] for f in figures.values() if f is not None)))
        row.append(cell(pub["nodes"]["total"], total))
        rows.append(row)
    lines = _captioned(table, nodes, used, md_table(header, rows))
    lines.insert(4, "Ours: CPU is the average per process (100 % = one core busy), memory the sum of resident "
                    "memory, network the sum of bytes in and out per second; nodes are processes (the application "
                    "counts the load generator and the queue workers)." + (
                        " Our numbers for this table are *projected* from measured per-message costs, "
                        "not measured." if projected else ""))
    lines.insert(5, "")
    return lines


def _captioned(table: dict, nodes: int, used: list[str], body: list[str]) -> list[str]:
    runs = ", ".join(f"`{u}`" for u in used) if used else "none"
    return [f"### {table['title']}", "",
            f"Each cell: report / ours. Ours: {nodes} Cassandra node(s); with several repetitions, their median "
            f"(min–max); runs: {runs}.", "", *body, ""]
