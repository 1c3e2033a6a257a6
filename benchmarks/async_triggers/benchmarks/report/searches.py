"""The saturation searches behind Table 1, one row per approach and repetition: how many trials each took (and how
many were a miss tried again), every trial's rate and outcome, which were invalid and why (the load generator fell behind: such a trial counts as a
miss), and where the search ended. A search with no confirmed miss (no rate unbounded in both its trials) found a
lower bound, not a limit: it says so, as a rate that stands for more than was measured would flatter whichever side
of a ratio it is on."""
from __future__ import annotations

import collections
from typing import Sequence

from async_triggers.benchmarks.report import reference
from async_triggers.benchmarks.report.format import NA, fmt_rate, md_table
from async_triggers.benchmarks.report.runs import get, repetition, repetitions

TITLE = "The saturation searches behind Table 1 (ours only)."
LABELS = {**reference.LABELS, "plain": "Plain write, no flow"}


def search_lines(runs: Sequence[dict], db_nodes: int) -> list[str]:
    """The section: a caption and one row per approach (and the plain write) and repetition; nothing without
    saturating runs that carry their search."""
    rows = []
    for app in (*reference.APPROACHES, "plain"):
        for run in repetitions(runs, "saturating", app, db_nodes):
            trials = get(run, "config", "search")
            if trials:
                rows.append([LABELS[app], str(repetition(run)), *describe(trials, get(run, "config", "search_bounds"))])
    if not rows:
        return []
    return [f"### {TITLE}", "",
            f"Ours: {db_nodes} Cassandra node(s). A trial is bounded when nothing failed or was dropped, its backlog "
            "drained within the step's bound and the load generator kept its schedule; an invalid trial (the "
            "generator fell behind) counts as a miss. A search ends when its bounds are within the search's ratio or "
            "after its trials; one with no confirmed miss (a rate unbounded in both its trials) gives a lower bound.", "",
            *md_table(["", "repetition", "trials (repeated)", "invalid trials", "bounded at [msg/s]",
                       "not bounded at [msg/s]", "end", "every trial [msg/s]: + bounded, - not, (again) repeated"],
                      rows), ""]


def describe(trials: Sequence[dict], bounds: dict | None) -> list[str]:
    """The cells of one search: trials, invalid ones with their reasons, the final bounds and how it ended."""
    repeated = sum(1 for t in trials if t.get("repeat"))
    invalid = [t for t in trials if t.get("valid") is False]
    reasons = collections.Counter(t.get("invalid_reason") or "reason not recorded" for t in invalid)
    invalid_cell = "0" if not invalid else f"{len(invalid)}: " + "; ".join(
        f"{reason}{f' (x{n})' if n > 1 else ''}" for reason, n in reasons.items())
    lo, hi = (bounds or {}).get("bounded"), (bounds or {}).get("unbounded")
    if lo is None:
        end = "no trial was bounded"
    elif hi is None:
        end = f"lower bound: no confirmed miss in {len(trials)} trial{'s' if len(trials) != 1 else ''}"
    else:
        end = f"limit within {hi / lo:.2f}x"
    every = ", ".join(f"{fmt_rate(t['rate'])} {'+' if t.get('bounded') else '-'}{' (again)' if t.get('repeat') else ''}"
                      for t in trials)
    return [f"{len(trials)} ({repeated})", invalid_cell, NA if lo is None else fmt_rate(lo),
            NA if hi is None else fmt_rate(hi), end, every]
