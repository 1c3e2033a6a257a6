"""What ``ctl verify`` prints: a flow's report as text (for an operator) or as one line of JSON (for scripts and
the tests that parse it), and the exit code of a verification. The shapes are described in ``verify``'s docstring.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from .compare import Result
from .verify_run import FlowReport

OK, DIFFERS = 0, 1


def table_objects(report: FlowReport) -> list[dict]:
    """One JSON object per target table of ``report``."""
    repaired = {r.table: r.as_dict() for r in report.repaired or ()}
    out = []
    for r in report.results:
        obj = {"flow": report.flow, "seconds": round(report.seconds, 2), "consistency": report.consistency,
               "ranges": report.ranges, "run": report.run, **r.as_dict()}
        if report.repaired is not None:
            obj["repaired"] = {k: v for k, v in repaired.get(r.table, {}).items() if k != "table"}
            obj["lineage_removed"] = report.lineage_removed
        out.append(obj)
    return out


def json_line(report: FlowReport) -> str:
    return json.dumps(table_objects(report), default=str)


def _values(row: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in row.items())


def _samples(r: Result) -> list[str]:
    lines = []
    if r.missing_sample:
        lines.append(f"  missing in {r.table} ({len(r.missing_sample)} of {r.missing}; the expected row):")
        lines.extend(f"    {_values(s)}" for s in r.missing_sample)
    if r.unexpected_sample:
        lines.append(f"  unexpected in {r.table} ({len(r.unexpected_sample)} of {r.unexpected}; the row found):")
        lines.extend(f"    {_values(s)}" for s in r.unexpected_sample)
    if r.wrong_value_sample:
        lines.append(f"  wrong value in {r.table} ({len(r.wrong_value_sample)} of {r.wrong_value}):")
        for s in r.wrong_value_sample:
            diffs = "; ".join(f"{c} expected {s['expected'].get(c)!r}, found {s['found'].get(c)!r}"
                              for c in s["columns"])
            lines.append(f"    {_values(s['key'])}: {diffs}")
    return lines


def _counts(missing: int, unexpected: int, wrong: int) -> str:
    parts = [f"{n} {what}" for n, what in ((missing, "missing"), (unexpected, "unexpected"), (wrong, "wrong value"))
             if n]
    return ", ".join(parts) or "no difference"


def format_report(report: FlowReport) -> str:
    """The text report of one flow; its last line is the verdict (OK, FAILED or REPAIRED)."""
    where = "the whole ring" if report.run is None else \
        f"{report.ranges} token ranges (run {report.run}, {report.done_before} unit(s) done before)"
    lines = [f"flow {report.flow}: read at {report.consistency}, {where}, in {report.seconds:.1f} s"]
    width = max([len(r.table) for r in report.results] + [5])
    lines.append(f"  {'table':<{width}}  {'expected':>10} {'present':>10} {'missing':>10} {'unexpected':>10} "
                 f"{'wrong value':>11}")
    for r in report.results:
        lines.append(f"  {r.table:<{width}}  {r.expected:>10} {r.present:>10} {r.missing:>10} {r.unexpected:>10} "
                     f"{r.wrong_value:>11}")
    for r in report.results:
        lines.extend(_samples(r))
    missing, unexpected, wrong = (sum(getattr(r, f) for r in report.results)
                                  for f in ("missing", "unexpected", "wrong_value"))
    if report.repaired is None:
        lines.append("OK: no difference" if report.ok else f"FAILED: {_counts(missing, unexpected, wrong)}")
        return "\n".join(lines)
    for rep in report.repaired:
        lines.append(f"  repaired {rep.table}: {rep.written} row(s) written, {rep.deleted} deleted"
                     + (f" ({rep.raised} above a newer write made outside the flow)" if rep.raised else "")
                     + f", {rep.not_repaired} not repaired")
    if report.lineage_removed:
        lines.append(f"  lineage: {report.lineage_removed} older image(s) and their rows removed")
    left = sum(r.not_repaired for r in report.repaired)
    if not missing + unexpected + wrong:
        lines.append("OK: no difference, nothing to repair")
    elif left:
        lines.append(f"FAILED: found {_counts(missing, unexpected, wrong)}; {left} row(s) not repaired: the "
                     "source row or the row changed since the verification read them (verify again when the flow "
                     "has drained)")
    else:
        lines.append(f"REPAIRED: found {_counts(missing, unexpected, wrong)}; all repaired (verify again to confirm)")
    return "\n".join(lines)


def summary(reports: Sequence[FlowReport], failed: Sequence[str] = (), skipped: Sequence[str] = ()) -> str:
    good = sum(1 for r in reports if r.ok)
    return (f"{len(reports) + len(failed) + len(skipped)} flows: {good} OK, {len(reports) - good} with differences"
            + (f", {len(failed)} could not be verified ({', '.join(failed)})" if failed else "")
            + (f", {len(skipped)} skipped ({', '.join(skipped)})" if skipped else ""))


def exit_code(reports: Sequence[FlowReport]) -> int:
    """0 when no flow differs (after a repair: when everything found was repaired), 1 otherwise."""
    return OK if all(r.ok for r in reports) else DIFFERS
