"""PNG plots in the style of the report's Figures 6–8."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from async_triggers.benchmarks.report import reference
import statistics

from async_triggers.benchmarks.report.runs import by_node_count, get, latest, repetitions, with_burst_base

APPS = reference.APPROACHES
FIGURE_FILES = {"figure6": "figure6_burst.png", "figure6b": "figure6b_burst_highest.png", "figure7": "figure7_fault.png",
                "figure8": "figure8_scalability.png", "figure6c": "figure6c_burst_own.png"}
FIGURE_6B = {**reference.FIGURES["figure6"], "id": "figure6b",
             "title": "Figure 6b (ours only): the burst at 200 % of the HIGHEST saturating rate."}
# each approach offered its own load: the dotted lines differ by approach
FIGURE_6C = {**reference.FIGURES["figure6"], "id": "figure6c", "experiment": "burst_own",
             "title": "Figure 6c (ours only): the burst at 200 % of each approach's OWN saturating rate."}
COLORS = {"synchronous": "tab:red", "external_queue": "tab:blue", "integrated": "tab:green"}


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
    chosen = {app: latest(runs, figure["experiment"], app) for app in APPS}
    chosen = {a: r for a, r in chosen.items() if r is not None}
    if not chosen:
        return False
    plt = _plt()
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(11, 4))
    for app, run in chosen.items():
        ts = run["timeseries"]
        label = reference.LABELS[app]
        # bucketed data: one step per bucket, from its start to its end
        edges = ts["t_s"] + [ts["t_s"][-1] + ts["bucket_s"]]

        def steps(values):
            values = [math.nan if v is None else v for v in values]
            return values + values[-1:]
        for other in repetitions(runs, figure["experiment"], app):   # the other repetitions, faint: the spread
            if other is not run:
                ots = other["timeseries"]
                ax_a.plot(ots["t_s"] + [ots["t_s"][-1] + ots["bucket_s"]], steps(ots["handled_msg_s"]),
                          color=COLORS[app], alpha=0.25, linewidth=0.8, drawstyle="steps-post")
        ax_a.plot(edges, steps(ts["handled_msg_s"]), label=label, color=COLORS[app], drawstyle="steps-post")
        # what this approach was offered, in its colour: the same schedule for all when the rate is common
        ax_a.plot(edges, steps(ts["offered_msg_s"]), label=f"offered to {label}", color=COLORS[app], linestyle=":",
                  linewidth=1.0, drawstyle="steps-post")
        ax_b.plot(edges, steps(ts["response_ms_median"]), label=label, color=COLORS[app], drawstyle="steps-post")
    drawn = events_once(chosen.values())
    for ax in (ax_a, ax_b):
        for t, what in drawn:
            ax.axvline(t, color="black", linestyle="--", linewidth=0.8)
            ax.annotate(what, (t, 1), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                        fontsize=7)
        ax.set_xlabel("time [s]")
        ax.grid(alpha=0.3)
    ax_a.set_title(figure["panels"][0] + " [msg/s]", fontsize=10)
    ax_a.set_ylim(bottom=0)   # rates from 0: an axis starting near the data exaggerates every dip
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


def events_once(runs) -> list[tuple[float, str]]:
    """Each event of the runs once, at the median of its times in the runs (the approaches' runs each have their
    own "kill -9 node2", a few 100 ms apart), in time order."""
    events: dict[str, list[float]] = {}
    for run in runs:
        for e in run.get("events", []):
            events.setdefault(e["what"], []).append(float(e["t_s"]))
    return sorted((sorted(ts)[len(ts) // 2], what) for what, ts in events.items())


def scalability_series(runs: Sequence[dict]) -> dict[str, tuple[dict[int, list[float]], dict[int, list[float]]]]:
    """By approach: saturating throughput and 80 % median response time of every repetition, by node count."""
    return {app: (by_node_count(runs, "saturating", app, lambda r: get(r, "throughput_msg_s")),
                  by_node_count(runs, "80pct", app, lambda r: get(r, "response_ms", "median"))) for app in APPS}


def _errorbar(ax, by_n: dict[int, list[float]], label: str, color: str) -> None:
    """The median at each node count, the repetitions' min-max as the error bar."""
    xs = sorted(by_n)
    mids = [statistics.median(by_n[n]) for n in xs]
    low = [m - min(by_n[n]) for m, n in zip(mids, xs)]
    high = [max(by_n[n]) - m for m, n in zip(mids, xs)]
    ax.errorbar(xs, mids, yerr=[low, high], marker="o", capsize=3, label=label, color=color)


def _scalability(runs: Sequence[dict], figure: dict, path: Path) -> bool:
    """Figure 8: (a) saturating throughput and (b) median response time at 80 % against database nodes; the
    median of the repetitions with their min-max."""
    series = scalability_series(runs)
    if not any(sat or eighty for sat, eighty in series.values()):
        return False
    plt = _plt()
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(11, 4))
    for app, (sat, eighty) in series.items():
        label, color = reference.LABELS[app], COLORS[app]
        if sat:
            _errorbar(ax_a, sat, label, color)
        if eighty:
            _errorbar(ax_b, eighty, label, color)
    ax_a.set_title(figure["panels"][0], fontsize=10)
    ax_b.set_title(figure["panels"][1] + ", median", fontsize=10)
    for ax, experiment in ((ax_a, "saturating"), (ax_b, "80pct")):
        ax.set_xlabel("database nodes")
        ax.xaxis.set_major_locator(_ticker().MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)   # from 0, as the rates and times it compares are
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
    lowest = with_burst_base(runs, "lowest")
    written = {}
    for fid, draw, chosen, figure in (
            ("figure6", _over_time, lowest, reference.FIGURES["figure6"]),
            ("figure6b", _over_time, with_burst_base(runs, "highest"), FIGURE_6B),
            ("figure7", _over_time, lowest, reference.FIGURES["figure7"]),
            ("figure8", _scalability, lowest, reference.FIGURES["figure8"]),
            ("figure6c", _over_time, runs, FIGURE_6C)):
        path = out / FIGURE_FILES[fid]
        if draw(chosen, figure, path):
            written[fid] = path
    return written
