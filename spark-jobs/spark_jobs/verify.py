"""Verify a flow: derive, from the flow specification and the current source and fan-out tables, the rows its
targets should hold, and compare them with what the target tables hold.

    python -m async_triggers.spark_jobs.verify --flow twitter_timeline --contact-points 127.0.0.1,127.0.0.2
    python -m async_triggers.spark_jobs.verify --spec spec.json --json

Exit code (ctl's table, async_triggers.cli.exit_codes): 0 when no expected row is missing, 1 when some are or when
the verification could not run (Cassandra unreachable, Spark failed), 2 for bad input (an unknown flow, a bad
option, an unreadable specification file). Connection options as in ctl (``--hosts``, ``--port``, ``--username``,
``--ssl-ca``...; the password from ASYNC_TRIGGERS_PASSWORD or a cqlshrc file, never an argument).

What "expected" means (the assumptions a verification can only state, not check):

- Every current source row is the last word: the flow handled every insert, update and delete of the source
  table (``events`` covers all three). A source row deleted while a flow without ``delete`` ran leaves target
  rows that are reported as unexpected; a value updated without ``update`` is reported as a wrong value.
- Fan-out tables did not change while the flow ran: the expected fan-out rows are the join of the *current*
  source with the *current* fan-out table. (The demo loads the followers before the tweets.)
- A target row needs a non-null value in every primary key column; a source row that maps a null into one
  produces no row. This is exactly the ``lineage`` rule (index ``users`` -> ``users_by_name``: one index row per
  user whose name is set; the rows of former names must be gone), and holds for ``direct`` targets too.
- Rows are compared on the target's primary key AND the columns the flow maps (other columns of the target
  table are ignored). Several targets writing the same table are unioned; when they map different columns,
  the comparison uses the columns all of them map.
- "Unexpected" is judged against the whole target table: every row of a table the flow writes that the flow
  would not produce. A table also written by another flow or by clients directly shows their rows as
  unexpected; in the seeds' examples each target table is written by one flow only.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Iterable, Mapping, Sequence

from async_triggers.errors import AsyncTriggersError

from .derive import (compared_columns, expected_rows, fanout_columns, parse_ref, primary_key,  # noqa: F401
                     qualified, source_columns, target_rows, targets_by_table)
from .errors import VerifyError

SAMPLE_SIZE = 10


@dataclasses.dataclass(frozen=True)
class Result:
    """The comparison of one target table.

    Rows are compared as tuples of (primary key columns + mapped value columns), duplicates ignored:

    - ``expected``: distinct rows the flow should have produced;
    - ``present``: expected rows found in the table with exactly these values;
    - ``missing``: expected rows not found with exactly these values, so ``expected == present + missing``;
    - ``unexpected``: rows of the table (projected on the compared columns) that match no expected row;
    - ``wrong_value``: keys counted both as missing and as unexpected: the row is there, a value differs.
      A row with a wrong value therefore counts once in ``missing`` AND once in ``unexpected``.
    """
    table: str
    key_columns: tuple[str, ...]
    expected: int
    present: int
    missing: int
    unexpected: int
    wrong_value: int = 0
    missing_sample: tuple[dict, ...] = ()
    unexpected_sample: tuple[dict, ...] = ()

    @property
    def ok(self) -> bool:
        return self.missing == 0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def compare(expected_df, actual_df, key_columns: Sequence[str], table: str = "",
            sample_size: int = SAMPLE_SIZE) -> Result:
    """Compare the expected rows of one table with the table's actual rows (see :class:`Result` for the
    counts). The comparison is on all columns of ``expected_df``; ``actual_df`` may hold more columns, which are
    ignored. Nulls compare equal to nulls (set semantics), as a null cell and an absent cell are the same in
    Cassandra."""
    cols = list(expected_df.columns)
    absent = [c for c in cols if c not in actual_df.columns]
    if absent:
        raise VerifyError(f"table {table or '?'} has no column(s) {', '.join(absent)}")
    from pyspark.sql import functions as F

    keys = list(key_columns)
    # one full outer join on every compared column (null-safe, like set operations) classifies each distinct row
    exp = expected_df.select(*cols).distinct().withColumn("__in_expected", F.lit(True))
    act = actual_df.select(*[F.col(c).alias(f"__actual_{c}") for c in cols]).distinct() \
        .withColumn("__in_actual", F.lit(True))
    joined = exp.join(act, on=[exp[c].eqNullSafe(act[f"__actual_{c}"]) for c in cols], how="full_outer")
    status = (F.when(F.col("__in_expected") & F.col("__in_actual"), "present")
              .when(F.col("__in_expected"), "missing").otherwise("unexpected"))
    rows = joined.select(status.alias("status"), *[F.coalesce(F.col(c), F.col(f"__actual_{c}")).alias(c)
                                                   for c in keys]).cache()
    try:
        counts = {r["status"]: r["count"] for r in rows.groupBy("status").count().collect()}
        n_present, n_missing, n_unexpected = (counts.get(k, 0) for k in ("present", "missing", "unexpected"))
        n_expected = n_present + n_missing

        def keys_of(kind):
            return rows.where(F.col("status") == kind).select(*keys)

        def sample(kind, n):
            if not n:
                return ()
            return tuple(r.asDict() for r in keys_of(kind).orderBy(*keys).limit(sample_size).collect())

        wrong = keys_of("missing").intersect(keys_of("unexpected")).count() if n_missing and n_unexpected else 0
        miss_sample, unexp_sample = sample("missing", n_missing), sample("unexpected", n_unexpected)
    finally:
        rows.unpersist()
    return Result(table=table, key_columns=tuple(keys), expected=n_expected, present=n_expected - n_missing,
                  missing=n_missing, unexpected=n_unexpected, wrong_value=wrong,
                  missing_sample=miss_sample, unexpected_sample=unexp_sample)


def verify_frames(spec: Mapping, source_df, fanout_dfs: Mapping[str, object],
                  actual_dfs: Mapping[str, object]) -> list[Result]:
    """:func:`expected_rows` then :func:`compare` for every target table; ``actual_dfs`` maps each target
    table's qualified name to its DataFrame."""
    results = []
    for name, exp in expected_rows(spec, source_df, fanout_dfs).items():
        if name not in actual_dfs:
            raise VerifyError(f"no DataFrame given for the target table {name}")
        key = primary_key(targets_by_table(spec)[name][0])
        results.append(compare(exp, actual_dfs[name], key, table=name))
    return results


# --- against Cassandra -----------------------------------------------------------------------------------------

def load_spec(spark, flow: str, keyspace: str = "async_triggers") -> dict:
    """The deployed specification of ``flow`` from ``async_triggers.flows``, read through the connector."""
    from pyspark.sql import functions as F

    from .session import read_table

    from async_triggers.errors import UnknownFlowError

    from .session import describe_error
    try:
        rows = read_table(spark, keyspace, "flows", ["name", "spec"]).where(F.col("name") == flow).collect()
    except Exception as e:
        if f"Couldn't find {keyspace}" in describe_error(e):   # nothing was ever deployed on this cluster
            raise UnknownFlowError([flow]) from None
        raise
    if not rows:
        deployed = [r["name"] for r in read_table(spark, keyspace, "flows", ["name"]).collect()]
        raise UnknownFlowError([flow], deployed)
    try:
        return json.loads(rows[0]["spec"])
    except (TypeError, ValueError) as e:
        raise VerifyError(f"flow '{flow}': the stored specification is not valid JSON: {e}") from e


def verify_with_session(spark, spec: Mapping) -> list[Result]:
    """Read the source, fan-out and target tables of ``spec`` with the connector and verify every target."""
    from .session import read_table

    grouped = targets_by_table(spec)
    src = spec["source"]
    source_df = read_table(spark, src["keyspace"], src["table"], source_columns(spec))
    fanout_dfs = {name: read_table(spark, *name.split(".", 1), cols) for name, cols in fanout_columns(spec).items()}
    actual_dfs = {name: read_table(spark, *name.split(".", 1), compared_columns(group))
                  for name, group in grouped.items()}
    return verify_frames(spec, source_df, fanout_dfs, actual_dfs)


def run_verify(spec: Mapping, contact_points: Iterable[str] | None = None, master: str = "local[*]",
               port: int | None = None, home=None, connection=None) -> list[Result]:
    """Start a Spark session with the connector and verify ``spec`` (what ``ctl verify FLOW`` calls).
    Raises VerifyError when the verification cannot run; missing rows are a result, not an error."""
    from .session import build_session

    spark = build_session(master=master, contact_points=contact_points, port=port, connection=connection,
                          app_name=f"verify-{spec.get('name', 'flow')}", home=home)
    try:
        return verify_with_session(spark, spec)
    except VerifyError:
        raise
    except Exception as e:  # Spark surfaces Cassandra errors (unknown table, unavailable) as Py4J/analysis errors
        raise VerifyError(f"verifying flow '{spec.get('name')}' failed: {_first_line(e)}") from e


def _first_line(e: Exception) -> str:
    from .session import describe_error

    return describe_error(e)


# --- report and CLI --------------------------------------------------------------------------------------------

def format_report(flow: str, results: Sequence[Result], seconds: float | None = None) -> str:
    lines = [f"flow {flow}" + (f" (verified in {seconds:.1f} s)" if seconds is not None else "")]
    width = max(len(r.table) for r in results) if results else 5
    lines.append(f"  {'table':<{width}}  {'expected':>10} {'present':>10} {'missing':>10} {'unexpected':>10} "
                 f"{'wrong value':>11}")
    for r in results:
        lines.append(f"  {r.table:<{width}}  {r.expected:>10} {r.present:>10} {r.missing:>10} {r.unexpected:>10} "
                     f"{r.wrong_value:>11}")
    for r in results:
        if r.missing_sample:
            lines.append(f"  missing in {r.table} (first {len(r.missing_sample)} keys):")
            lines.extend(f"    {_key_text(k)}" for k in r.missing_sample)
    lines.append("OK: no missing rows" if all(r.ok for r in results) else
                 f"FAILED: {sum(r.missing for r in results)} missing row(s)")
    return "\n".join(lines)


def _key_text(key: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in key.items())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.spark_jobs.verify", description=__doc__.split("\n\n")[0])
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--flow", help="name of a deployed flow (its spec is read from async_triggers.flows)")
    which.add_argument("--spec", help="a flow specification file (JSON, as in docs/design.md)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--home", default=None, help="cache dir (default $ASYNC_TRIGGERS_HOME or ~/.cache/async-triggers)")
    p.add_argument("--json", action="store_true",
                   help="print the results as one line of JSON: a list with one object per target table "
                        "(flow, seconds, table, key_columns, expected, present, missing, unexpected, wrong_value, "
                        "missing_sample, unexpected_sample)")
    from async_triggers.connection import add_arguments
    add_arguments(p)
    return p


def run(args, connection=None) -> tuple[str, list[Result], float]:
    """Verify what ``args`` (the parsed command line) names; ``connection`` replaces its connection options.
    Returns the flow's name, the results and the seconds taken; raises our errors when it cannot run."""
    from async_triggers.connection import from_arguments

    from .session import build_session

    started = time.monotonic()
    connection = connection or from_arguments(args)
    spec = None
    if args.spec:
        try:
            with open(args.spec) as f:
                spec = json.load(f)
        except (OSError, ValueError) as e:
            from async_triggers.errors import ConfigError
            raise ConfigError(f"cannot read the specification {args.spec}: {e}") from e
    name = args.flow or spec.get("name", args.spec)
    spark = build_session(master=args.master, connection=connection, app_name=f"verify-{name}", home=args.home)
    try:
        if spec is None:
            spec = load_spec(spark, args.flow)
        results = verify_with_session(spark, spec)
    except AsyncTriggersError:
        raise
    except Exception as e:
        raise VerifyError(f"verifying flow '{name}' failed: {_first_line(e)}") from e
    return name, results, time.monotonic() - started


def report(name: str, results: Sequence[Result], elapsed: float, as_json: bool) -> str:
    if as_json:
        # one line, the last of stdout: a list with one object per target table
        return json.dumps([{"flow": name, "seconds": round(elapsed, 2), **r.as_dict()} for r in results], default=str)
    return format_report(name, results, elapsed)


def main(argv: Sequence[str] | None = None) -> int:
    from async_triggers.cli.exit_codes import PROBLEM, exit_code_of

    args = _parser().parse_args(argv)
    try:
        name, results, elapsed = run(args)
    except AsyncTriggersError as e:
        print(json.dumps({"error": str(e), "exit_code": exit_code_of(e)}) if args.json else f"error: {e}",
              file=sys.stderr)
        return exit_code_of(e)
    print(report(name, results, elapsed, args.json))
    return 0 if all(r.ok for r in results) else PROBLEM


if __name__ == "__main__":
    sys.exit(main())
