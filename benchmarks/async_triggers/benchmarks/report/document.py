"""The whole report as markdown: the targets, Tables 1–4, the runs at each approach's own limits (ours only),
Figures 6–8 with what the report says about them; and the files it is written to."""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Sequence

from async_triggers.benchmarks.report import generated_docs, reference
from async_triggers.benchmarks.report.figures import FIGURE_6C, figures, scalability_series
from async_triggers.benchmarks.report.format import NA
from async_triggers.benchmarks.report.runs import (check_commits, default_nodes, latest, repetition, same_schedule,
                                                   with_burst_base)
from async_triggers.benchmarks.report.searches import search_lines
from async_triggers.benchmarks.report.tables import (OWN_BURST, OWN_EIGHTY, lost, own_limits_table, resource_table,
                                                     response_table)
from async_triggers.benchmarks.report.targets import targets_table
from async_triggers.benchmarks.results import load_runs


def markdown(runs: Sequence[dict], figure_paths: dict[str, Path] | None = None, db_nodes: int | None = None,
             allow_mixed_commits: bool = False) -> str:
    """The whole report as markdown (figures referenced by file name)."""
    figure_paths = figure_paths or {}
    db_nodes = db_nodes or default_nodes(runs)
    first = runs[0]
    machine = first.get("machine") or {}
    commits = check_commits(runs, allow_mixed_commits)
    repeats = sorted({repetition(r) for r in runs})
    lines = ["# Benchmarks: synchronous vs external queue vs integrated", "",
             f"The report's numbers ({reference.SOURCE}) beside ours. The report ran on "
             f"{reference.SETUP['machines']}, one machine per component; ours run on one machine: "
             f"{machine.get('cpu', 'unknown CPU')}, {machine.get('cores', '?')} cores, "
             f"{machine.get('memory_gb', '?')} GB, {machine.get('os', '')}.",
             ("From one commit" if len(commits) == 1 else f"From {len(commits)} commits") + " (each run's file names it)."
             + f" Runs: {len(runs)}"
             + (f" ({reused})" if (reused := same_schedule(runs)) else "")
             + (f", in {len(repeats)} repetitions" if len(repeats) > 1 else "")
             + f"; measured {generated_docs.when_measured(runs)}."
             + ("" if len(commits) == 1 else " Commits were mixed on purpose (--allow-mixed-commits): each run's "
                                              "commit is in its file."), "",
             "## Targets", ""]
    lines += targets_table(runs, db_nodes)
    every = runs
    runs = [r for r in runs if r.get("valid", True)]   # the invalid ones are named in the targets, used nowhere
    highest_burst = [r for r in runs if r["experiment"] == "burst" and get_base(r) == "highest"]
    runs = with_burst_base(runs, "lowest")
    lines += ["", "## Tables", ""]
    lines += response_table(runs, reference.TABLE_1, db_nodes)
    lines += search_lines(every, db_nodes or reference.TABLE_1["db_nodes"])
    lines += response_table(runs, reference.TABLE_2, db_nodes)
    lines += resource_table(runs, reference.TABLE_3, db_nodes)
    lines += resource_table(runs, reference.TABLE_4)
    lines += ["## Each approach at its own limits (ours only)", "",
              "The report offers every approach one load (the slowest one's, above). Here each is also run near its "
              "own limit, at 80 % and in a burst to 200 % of the median of its own saturation searches: what it "
              "answers, how far behind its propagation runs, and what it loses. The targets above judge these runs "
              "in every repetition.", ""]
    lines += own_limits_table(runs, OWN_EIGHTY, db_nodes)
    lines += own_limits_table(runs, OWN_BURST, db_nodes)
    lines += ["## Figures", ""]
    for fid in ("figure6", "figure7", "figure8"):
        fig = reference.FIGURES[fid]
        lines += [f"### {fig['title']}", ""]
        if fid in figure_paths:
            lines += [f"![{fig['title']} (ours)]({figure_paths[fid].name})", ""]
            lines += ["What we measured: " + measured_caption(fid, runs), ""]
        else:
            wanted = fig.get("experiment") or " or ".join(fig["experiments"])
            lines += [f"Ours: {NA} (no {wanted} run).", ""]
        lines += ["What the report says (§" + fig["section"] + "):", ""]
        lines += [f"> {s}" for s in fig["observations"]] + [""]
        if fid == "figure6":
            lines += _figure_6b(highest_burst, figure_paths)
            lines += _figure_6c(runs, figure_paths)
    return "\n".join(lines)


def measured_caption(fid: str, runs: Sequence[dict]) -> str:
    """What our runs show in a figure, computed from them (never the report's claim)."""
    labels = reference.LABELS
    if fid == "figure8":
        parts = []
        for app, (sat, _eighty) in scalability_series(runs).items():
            if len(sat) >= 2:
                lo, hi = min(sat), max(sat)
                a, b = statistics.median(sat[lo]), statistics.median(sat[hi])
                parts.append(f"{labels[app]} {a:.0f} msg/s at {lo} nodes, {b:.0f} at {hi} ({b / a:.2f}x)")
            elif sat:
                (n, values), = sat.items()
                parts.append(f"{labels[app]} {statistics.median(values):.0f} msg/s at {n} nodes only")
        return ("saturating throughput (median of the repetitions): " + "; ".join(parts) + ". "
                "The bars are the repetitions' min-max; panel (b) is each size's own 80 % run.") if parts else NA
    chosen = [r for r in (latest(runs, reference.FIGURES[fid]["experiment"], a) for a in reference.APPROACHES) if r]
    if fid == "figure6":
        base = sorted({get_rate(r) for r in chosen})
        return (f"every approach offered the same load, 50 % / 200 % / 50 % of {', '.join(f'{b:.0f}' for b in base)} "
                "msg/s (the lowest saturating rate); lost requests (dropped or failed): "
                + ", ".join(f"{labels[r['app']]} {r['requests']['dropped'] + r['requests']['error']}" for r in chosen)
                + ".")
    return ("propagations missing after the fault, by Spark's verification: "
            + ", ".join(f"{labels[r['app']]} {(r.get('verification') or {}).get('missing', NA)}" for r in chosen)
            + "; each event is drawn once, at the median of its times in the approaches' runs.")


def get_rate(run: dict) -> float:
    return float((run.get("config") or {}).get("base_rate") or run.get("offered_msg_s") or 0.0)


def get_base(run: dict) -> str:
    return (run.get("config") or {}).get("base") or "lowest"


def _figure_6b(runs: Sequence[dict], figure_paths: dict[str, Path]) -> list[str]:
    """The same burst at 200 % of the highest saturating rate: ours only (the report has one burst)."""
    lines = ["### Figure 6b (ours only): the burst at 200 % of the highest saturating rate.", ""]
    if "figure6b" in figure_paths:
        lines += [f"![Figure 6b (ours)]({figure_paths['figure6b'].name})", ""]
    lost = {r["app"]: r["requests"]["dropped"] + r["requests"]["error"] for r in runs}
    if lost:
        lines += ["Requests lost (dropped or failed) per approach: "
                  + ", ".join(f"{reference.LABELS[a]} {lost[a]}" for a in reference.APPROACHES if a in lost)
                  + ".", ""]
    else:
        lines += [f"Ours: {NA} (no burst at the highest rate).", ""]
    return lines


def _figure_6c(runs: Sequence[dict], figure_paths: dict[str, Path]) -> list[str]:
    """The burst at each approach's own rate over time, and what the latest repetition lost: ours only."""
    lines = [f"### {FIGURE_6C['title']}", ""]
    if "figure6c" in figure_paths:
        lines += [f"![Figure 6c (ours)]({figure_paths['figure6c'].name})", ""]
    chosen = [r for r in (latest(runs, "burst_own", a) for a in reference.APPROACHES) if r]
    if not chosen:
        return lines + [f"Ours: {NA} (no burst_own run).", ""]

    def lag(run: dict) -> str:
        p99 = (run.get("propagation_lag_ms") or {}).get("p99")
        return NA if p99 is None else f"{p99:.0f} ms"
    return lines + ["What we measured (the latest repetition): "
                    + "; ".join(f"{reference.LABELS[r['app']]} at 200 % of {get_rate(r):.0f} msg/s: {lost(r)} "
                                f"requests lost, propagation lag p99 {lag(r)}" for r in chosen) + ".", ""]


def build(results_dir: Path, out: Path | None = None, db_nodes: int | None = None,
          plots: bool = True, allow_mixed_commits: bool = False) -> Path:
    """Read the runs, write ``report.md`` and the figures into ``out`` (default: the results directory); when that
    is the committed benchmarks/results, rewrite docs/benchmarks.md's generated block from the same runs."""
    runs = load_runs(results_dir)
    check_commits(runs, allow_mixed_commits)
    out = Path(out or results_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a run where the load generator fell behind its schedule measured the generator: in no figure (the targets
    # name it)
    figure_paths = figures([r for r in runs if r.get("valid", True)], out) if plots else {}
    path = out / "report.md"
    path.write_text(markdown(runs, figure_paths, db_nodes, allow_mixed_commits) + "\n")
    if generated_docs.is_committed_report(path):   # the committed report: the docs' copy of it follows
        generated_docs.update_generated_block(generated_docs.DOCS, generated_docs.render(runs, db_nodes))
    return path
