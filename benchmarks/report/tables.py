"""The benchmark report: markdown tables in the layout of the report's Tables 1–4 with its numbers beside ours,
the issue's targets, and PNG plots in the style of Figures 6–8.

    python -m async_triggers.benchmarks.report RESULTS_DIR [--out DIR]      # writes DIR/report.md and DIR/figure6.png ...

Input: a directory of runs in the results schema (benchmarks/README.md). For each experiment, approach and number
of database nodes the latest run is used. Each table cell reads ``report / ours``; ``n/a`` is a run we do not
have, ``–`` a component the approach does not have (as in the report).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from async_triggers.benchmarks import reference  # noqa: E402
from async_triggers.benchmarks.errors import ResultsError  # noqa: E402
from async_triggers.benchmarks.results import COMPONENTS, load_runs  # noqa: E402

APPS = reference.APPROACHES
NA = "n/a"          # we have no such run
NONE = "–"          # the approach has no such component (the report's dash)
FIGURE_FILES = {"figure6": "figure6_burst.png", "figure7": "figure7_fault.png", "figure8": "figure8_scalability.png"}
COLORS = {"synchronous": "tab:red", "external_queue": "tab:blue", "integrated": "tab:green"}


# -- formatting ----------------------------------------------------------------------------------------------------
def fmt_sig(value: float | None, digits: int = 3) -> str:
    """``digits`` significant digits, never in exponent form and never fewer than the integer part (1297, 8.90,
    0.360, 49900): the way the report prints its numbers."""
    if value is None:
        return NA
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if decimals and len(text.lstrip("-").replace(".", "").lstrip("0")) > digits:  # 9.996 -> "10.00": one too many
        text = f"{value:.{decimals - 1}f}"
    return text


def fmt_rate(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}"


def fmt_ms(value: float | None) -> str:
    """Response times: two decimals below 100 ms (the report's 0.83, 20.66), one below 1 s, none above."""
    if value is None:
        return NA
    return f"{value:.2f}" if value < 100 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def cell(published: Any, ours: str) -> str:
    return f"{NONE if published is None else published} / {ours}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_first_left: bool = True) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"
    lines = [line(header), line(["---" if i == 0 and align_first_left else "---:" for i in range(len(header))])]
    return lines + [line(row) for row in rows]


# -- picking runs --------------------------------------------------------------------------------------------------
def latest(runs: Sequence[dict], experiment: str, app: str, db_nodes: int | None = None) -> dict | None:
    found = [r for r in runs if r["experiment"] == experiment and r["app"] == app
             and (db_nodes is None or r["db_nodes"] == db_nodes)]
    return max(found, key=lambda r: (r["started_at"], r["run_id"])) if found else None


def by_nodes(runs: Sequence[dict], experiment: str, app: str) -> list[dict]:
    """The latest measured run of each number of database nodes, by nodes (projections are not measurements)."""
    measured = [r for r in runs if not r.get("projected")]
    nodes = sorted({r["db_nodes"] for r in measured if r["experiment"] == experiment and r["app"] == app})
    return [latest(measured, experiment, app, n) for n in nodes]


def _get(run: dict | None, *path: str) -> Any:
    value: Any = run
    for key in path:
        if value is None:
            return None
        value = value.get(key)
    return value


# -- derived resource figures --------------------------------------------------------------------------------------
def component_figures(run: dict | None, comp: str) -> dict | None:
    """CPU % (average per process, 100 = one core), memory GB (sum), network MB/s (in + out, sum), processes;
    None when the run measured no resources or the approach has no such component."""
    res = _get(run, "resources")
    if res is None or res.get(comp) is None:
        return None
    c, window = res[comp], res["window_s"]
    return {"cpu_pct": 100 * c["cpu_s"] / window / max(1, c["processes"]), "memory_gb": c["memory_gb"],
            "network_mb_s": c["net_bytes"] / window / 1e6, "processes": c["processes"]}


def app_cost_per_message(run: dict | None) -> tuple[float, float] | None:
    """The application's CPU ms and network bytes per completed message (the issue's cost targets)."""
    res = _get(run, "resources")
    if res is None or not res.get("messages") or res.get("app") is None:
        return None
    return 1000 * res["app"]["cpu_s"] / res["messages"], res["app"]["net_bytes"] / res["messages"]


# -- tables --------------------------------------------------------------------------------------------------------
def response_table(runs: Sequence[dict], table: dict, db_nodes: int | None = None) -> list[str]:
    """Table 1 or 2: throughput and response times, report / ours; Table 2 adds our p99 and p99.9."""
    nodes = db_nodes or table["db_nodes"]
    extra = table["id"] == "table2"
    header = ["", "Throughput [msg/s]", "Response Time [ms] median", "stddev", "max"]
    if extra:
        header += ["p99", "p99.9"]
    rows, used = [], []
    for app in APPS:
        run = latest(runs, table["experiment"], app, nodes)
        if run is not None:
            used.append(run["run_id"])
        pub = table["rows"][app]
        resp = _get(run, "response_ms") or {}
        row = [reference.LABELS[app], cell(pub["throughput_msg_s"], fmt_rate(_get(run, "throughput_msg_s"))),
               cell(pub["median_ms"], fmt_ms(resp.get("median"))), cell(pub["stddev_ms"], fmt_ms(resp.get("stddev"))),
               cell(pub["max_ms"], fmt_ms(resp.get("max")))]
        if extra:
            row += [cell(None, fmt_ms(resp.get("p99"))), cell(None, fmt_ms(resp.get("p999")))]
        rows.append(row)
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
            f"Each cell: report / ours. Ours: {nodes} Cassandra node(s); runs: {runs}.", "", *body, ""]


# -- targets -------------------------------------------------------------------------------------------------------
def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b in (None, 0) else a / b


def targets(runs: Sequence[dict], db_nodes: int = 2) -> list[tuple[str, str, str]]:
    """The issue's targets as (target, measured, verdict): verdict is met, MISSED or not measured."""
    def at(experiment, app):
        return latest(runs, experiment, app, db_nodes)

    sat = {app: _get(at("saturating", app), "throughput_msg_s") for app in APPS}
    resp = {app: _get(at("80pct", app), "response_ms") or {} for app in APPS}
    cost = {app: app_cost_per_message(at("saturating", app)) for app in APPS}
    rows = []

    def ratio_row(name, value, ok: Callable[[float], bool], unit="x"):
        if value is None:
            rows.append((name, NA, "not measured"))
        else:
            rows.append((name, f"{value:.2f}{unit}", "met" if ok(value) else "MISSED"))

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
    bulk = max((r for r in runs if r["experiment"] == "bulk_writer" and r["app"] == "bulk_writer"),
               key=lambda r: r["started_at"], default=None)
    # the flow's fan-out with its queues never empty (experiments.flow_fanout), else the saturating run's
    fanout = max((r for r in runs if r["experiment"] == "bulk_writer" and r["app"] == "integrated"),
                 key=lambda r: r["started_at"], default=None) or at("saturating", "integrated")
    ratio_row("fan-out rows/s: integrated >= 0.9x plain bulk writer",
              _ratio(_get(fanout, "fanout_rows_s"), _get(bulk, "fanout_rows_s")), lambda v: v >= 0.9)
    for app in ("external_queue", "integrated"):
        run = max((r for r in runs if r["experiment"] == "burst" and r["app"] == app),
                  key=lambda r: r["started_at"], default=None)
        if run is None:
            rows.append((f"burst: 0 lost requests, {reference.LABELS[app]}", NA, "not measured"))
        else:
            lost = run["requests"]["dropped"] + run["requests"]["error"]
            rows.append((f"burst: 0 lost requests, {reference.LABELS[app]}", f"{lost} lost",
                         "met" if lost == 0 else "MISSED"))
    sync_burst = max((r for r in runs if r["experiment"] == "burst" and r["app"] == "synchronous"),
                     key=lambda r: r["started_at"], default=None)
    if sync_burst is not None:
        req = sync_burst["requests"]
        rows.append(("burst: synchronous losses (counted, no target)",
                     f"{req['dropped']} dropped, {req['error']} failed of {req['scheduled']}", "counted"))
    for app in APPS:
        run = max((r for r in runs if r["experiment"] == "fault" and r["app"] == app),
                  key=lambda r: r["started_at"], default=None)
        missing = _get(run, "verification", "missing")
        name = f"fault: 0 missing propagations, {reference.LABELS[app]}"
        rows.append((name, NA, "not measured") if missing is None
                    else (name, f"{missing} missing", "met" if missing == 0 else "MISSED"))
    return rows


# -- figures -------------------------------------------------------------------------------------------------------
def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _ticker():
    import matplotlib.ticker
    return matplotlib.ticker


def _over_time(runs: Sequence[dict], figure: dict, path: Path) -> bool:
    """Figures 6 and 7: (a) handled requests per second, (b) median response time, per approach over time."""
    chosen = {app: max((r for r in runs if r["experiment"] == figure["experiment"] and r["app"] == app),
                       key=lambda r: r["started_at"], default=None) for app in APPS}
    chosen = {a: r for a, r in chosen.items() if r is not None}
    if not chosen:
        return False
    plt = _plt()
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(11, 4))
    offered_drawn = False
    events: dict[float, str] = {}
    for app, run in chosen.items():
        ts = run["timeseries"]
        label = reference.LABELS[app]
        # bucketed data: one step per bucket, from its start to its end
        edges = ts["t_s"] + [ts["t_s"][-1] + ts["bucket_s"]]

        def steps(values):
            values = [math.nan if v is None else v for v in values]
            return values + values[-1:]
        ax_a.plot(edges, steps(ts["handled_msg_s"]), label=label, color=COLORS[app], drawstyle="steps-post")
        if not offered_drawn:
            ax_a.plot(edges, steps(ts["offered_msg_s"]), label="offered", color="grey", linestyle=":",
                      drawstyle="steps-post")
            offered_drawn = True
        ax_b.plot(edges, steps(ts["response_ms_median"]), label=label, color=COLORS[app], drawstyle="steps-post")
        for e in run.get("events", []):
            events.setdefault(float(e["t_s"]), e["what"])
    for ax in (ax_a, ax_b):
        for t, what in sorted(events.items()):
            ax.axvline(t, color="black", linestyle="--", linewidth=0.8)
            ax.annotate(what, (t, 1), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                        fontsize=7)
        ax.set_xlabel("time [s]")
        ax.grid(alpha=0.3)
    ax_a.set_title(figure["panels"][0] + " [msg/s]", fontsize=10)
    ax_b.set_title(figure["panels"][1] + ", median", fontsize=10)
    ax_b.set_yscale("log")
    ax_b.yaxis.set_major_formatter(_ticker().ScalarFormatter())
    ax_b.yaxis.set_minor_formatter(_ticker().NullFormatter())
    ax_a.legend(fontsize=8)
    fig.suptitle(f"{figure['title']} (ours)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _scalability(runs: Sequence[dict], figure: dict, path: Path) -> bool:
    """Figure 8: (a) saturating throughput and (b) median response time at 80 % against database nodes."""
    series = {app: (by_nodes(runs, "saturating", app), by_nodes(runs, "80pct", app)) for app in APPS}
    if not any(sat or eighty for sat, eighty in series.values()):
        return False
    plt = _plt()
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(11, 4))
    for app, (sat, eighty) in series.items():
        label, color = reference.LABELS[app], COLORS[app]
        sat = [r for r in sat if r.get("throughput_msg_s") is not None]
        eighty = [r for r in eighty if r.get("response_ms") is not None]
        if sat:
            ax_a.plot([r["db_nodes"] for r in sat], [r["throughput_msg_s"] for r in sat], marker="o", label=label,
                      color=color)
        if eighty:
            ax_b.plot([r["db_nodes"] for r in eighty], [r["response_ms"]["median"] for r in eighty], marker="o",
                      label=label, color=color)
    ax_a.set_title(figure["panels"][0], fontsize=10)
    ax_b.set_title(figure["panels"][1] + ", median", fontsize=10)
    for ax, experiment in ((ax_a, "saturating"), (ax_b, "80pct")):
        ax.set_xlabel("database nodes")
        ax.xaxis.set_major_locator(_ticker().MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, f"no {experiment} run", transform=ax.transAxes, ha="center", va="center")
    fig.suptitle(f"{figure['title']} (ours)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def figures(runs: Sequence[dict], out: Path) -> dict[str, Path]:
    """Write the PNGs that the runs allow; returns the figure ids written and their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for fid, draw in (("figure6", _over_time), ("figure7", _over_time), ("figure8", _scalability)):
        path = out / FIGURE_FILES[fid]
        if draw(runs, reference.FIGURES[fid], path):
            written[fid] = path
    return written


# -- the report ----------------------------------------------------------------------------------------------------
def default_nodes(runs: Sequence[dict]) -> int:
    """The node count Tables 1-3 and the targets use: the report's 2 when we measured at 2 nodes, else the
    smallest count with a measured saturating run (a smoke run on the test suite's 3-node cluster)."""
    counts = sorted({r["db_nodes"] for r in runs if r["experiment"] == "saturating" and not r.get("projected")})
    return reference.TABLE_1["db_nodes"] if not counts or reference.TABLE_1["db_nodes"] in counts else counts[0]


def markdown(runs: Sequence[dict], figure_paths: dict[str, Path] | None = None, db_nodes: int | None = None) -> str:
    """The whole report as markdown (figures referenced by file name)."""
    figure_paths = figure_paths or {}
    db_nodes = db_nodes or default_nodes(runs)
    first = runs[0]
    machine = first.get("machine") or {}
    commits = sorted({str(r.get("commit")) for r in runs})
    lines = ["# Benchmarks: synchronous vs external queue vs integrated", "",
             f"The report's numbers ({reference.SOURCE}) beside ours. The report ran on "
             f"{reference.SETUP['machines']}, one machine per component; ours run on one machine: "
             f"{machine.get('cpu', 'unknown CPU')}, {machine.get('cores', '?')} cores, "
             f"{machine.get('memory_gb', '?')} GB, {machine.get('os', '')}.",
             f"Commit(s): {', '.join(f'`{c}`' for c in commits)}. Runs: {len(runs)}.", "",
             "## Targets", ""]
    lines += md_table(["target", "measured", "verdict"], [list(t) for t in targets(runs, db_nodes)])
    lines += ["", "## Tables", ""]
    lines += response_table(runs, reference.TABLE_1, db_nodes)
    lines += response_table(runs, reference.TABLE_2, db_nodes)
    lines += resource_table(runs, reference.TABLE_3, db_nodes)
    lines += resource_table(runs, reference.TABLE_4)
    lines += ["## Figures", ""]
    for fid in ("figure6", "figure7", "figure8"):
        fig = reference.FIGURES[fid]
        lines += [f"### {fig['title']}", ""]
        if fid in figure_paths:
            lines += [f"![{fig['title']} (ours)]({figure_paths[fid].name})", ""]
        else:
            wanted = fig.get("experiment") or " or ".join(fig["experiments"])
            lines += [f"Ours: {NA} (no {wanted} run).", ""]
        lines += ["What the report says (§" + fig["section"] + "):", ""]
        lines += [f"> {s}" for s in fig["observations"]] + [""]
    return "\n".join(lines)


def build(results_dir: Path, out: Path | None = None, db_nodes: int | None = None,
          plots: bool = True) -> Path:
    """Read the runs, write ``report.md`` and the figures into ``out`` (default: the results directory)."""
    runs = load_runs(results_dir)
    out = Path(out or results_dir)
    out.mkdir(parents=True, exist_ok=True)
    figure_paths = figures(runs, out) if plots else {}
    path = out / "report.md"
    path.write_text(markdown(runs, figure_paths, db_nodes) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m async_triggers.benchmarks.report", description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path, help="directory of run JSON files")
    p.add_argument("--out", type=Path, default=None, help="default: the results directory")
    p.add_argument("--db-nodes", type=int, default=None, help="our node count for Tables 1-3 (default: 2)")
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    try:
        path = build(args.results, args.out, args.db_nodes, plots=not args.no_plots)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
