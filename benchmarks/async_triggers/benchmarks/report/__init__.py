"""The benchmark report: markdown tables in the layout of the report's Tables 1–4 with its numbers beside ours,
the issue's targets, and PNG plots in the style of Figures 6–8.

    python -m async_triggers.benchmarks.report RESULTS_DIR [--out DIR]      # writes DIR/report.md and DIR/figure6.png ...

Input: a directory of runs in the results schema (benchmarks/README.md). For each experiment, approach and number
of database nodes the latest run is used. Each table cell reads ``report / ours``; ``n/a`` is a run we do not
have, ``–`` a component the approach does not have (as in the report).
"""
from async_triggers.benchmarks.report.document import build, markdown

__all__ = ["build", "markdown"]
