"""python -m async_triggers.benchmarks.report RESULTS_DIR [--out DIR]: writes DIR/report.md and the figures."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from async_triggers.benchmarks.errors import ResultsError
from async_triggers.benchmarks.report import __doc__ as REPORT_DOC
from async_triggers.benchmarks.report.document import build


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m async_triggers.benchmarks.report", description=REPORT_DOC.split("\n\n")[0])
    p.add_argument("results", type=Path, help="directory of run JSON files")
    p.add_argument("--out", type=Path, default=None, help="default: the results directory")
    p.add_argument("--db-nodes", type=int, default=None, help="our node count for Tables 1-3 (default: 2)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--allow-mixed-commits", action="store_true", help="report runs of different commits together")
    args = p.parse_args(argv)
    try:
        path = build(args.results, args.out, args.db_nodes, plots=not args.no_plots,
                     allow_mixed_commits=args.allow_mixed_commits)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
