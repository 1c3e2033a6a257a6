"""Verify flows, the project's oracle: derive, from each flow's specification and the current source and fan-out
tables, the rows its targets should hold, and compare them with what the target tables hold, key by key.

    ctl verify twitter_timeline users_by_name            # or: ctl verify --all
    python -m async_triggers.spark_jobs.verify --flow twitter_timeline --consistency ALL --json
    python -m async_triggers.spark_jobs.verify --spec spec.json

Per target table (``compare.Result``): ``expected`` keys, ``present`` (found with the expected values),
``missing`` (expected, absent), ``unexpected`` (present, should not be), ``wrong_value`` (in both, a value differs;
counted once, as a wrong value only), so ``expected == present + missing + wrong_value``; and samples of each kind.

Options: ``--consistency`` (default LOCAL_QUORUM) the level of every read (the connector's input consistency);
``--ranges N`` compares token range by token range, recording each range done in ``async_triggers.verify_progress``
so that a rerun resumes (``--restart`` starts over; see ``verify_run``); ``--repair`` repairs what differs
(``repair``: missing and wrong rows written at their source row's write time and remaining TTL, unexpected rows
deleted at their own write time; docs/design.md, "Verify and repair").

Exit code (ctl's table, async_triggers.cli.exit_codes): 0 when no flow differs in any way (missing, unexpected or
wrong value), and after ``--repair`` when everything found was repaired; 1 when a flow differs, a repair left
something, or a verification could not run (Cassandra unreachable, Spark failed); 2 for bad input (an unknown
flow, a bad option, an unreadable specification file). Connection options as in ctl (``--hosts``, ``--port``,
``--username``, ``--ssl-ca``...; the password from ASYNC_TRIGGERS_PASSWORD or a cqlshrc file, never an argument).

Output: a text report per flow, its last line the verdict. With ``--json``, JSON lines: **one line per flow**, each
a JSON list with one object per target table: ``flow``, ``seconds``, ``consistency``, ``ranges``, ``run`` (the
checkpointed run's start, null for a single comparison), ``table``, ``key_columns``, ``expected``, ``present``,
``missing``, ``unexpected``, ``wrong_value``, ``ok``, ``missing_sample`` (expected rows), ``unexpected_sample``
(rows found), ``wrong_value_sample`` (``{"key", "expected", "found", "columns"}``), and with ``--repair``
``repaired`` (``{"written", "deleted", "not_repaired", "raised"}``) and ``lineage_removed``. Progress goes to stderr, and so
do errors (with ``--json`` one object ``{"error", "exit_code", "flow"}`` each); a flow ``--all`` skips (a Java
handler) is named on stderr.

What "expected" means (the assumptions a verification can only state, not check):

- Every current source row is the last word: the flow handled every insert, update and delete of the source
  table (``events`` covers all three). A source row deleted while a flow without ``delete`` ran leaves target
  rows that are reported as unexpected; a value updated without ``update`` is reported as a wrong value.
- The expected fan-out rows are the join of the *current* source with the *current* fan-out table: what a fan-out
  that follows its table (``follow=True``) keeps. A fan-out that does not follow writes the rows of the followers a
  source row had when its task ran, so a change of its fan-out table since then shows as a difference.
- A target row needs a non-null value in every primary key column; a source row that maps a null into one
  produces no row. This is exactly the ``lineage`` rule (index ``users`` -> ``users_by_name``: one index row per
  user whose name is set; the rows of former names must be gone), and holds for ``direct`` targets too.
- Rows are compared on the target's primary key AND the columns the flow maps (other columns of the target
  table are ignored). Several targets writing the same table are unioned; when they map different columns,
  the comparison uses the columns all of them map.
- "Unexpected" is judged against the whole target table: every row of a table the flow writes that the flow
  would not produce. A table also written by another flow or by clients directly shows their rows as
  unexpected; in the seeds' examples each target table is written by one flow only.
- The tables are read while the flow runs: verify a drained flow (``ctl trigger wait``), or rows on their way show
  as differences.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Iterable, Mapping, Sequence

from async_triggers.errors import AsyncTriggersError
from async_triggers.spec import FlowSpec

from .compare import SAMPLE_SIZE, Result, compare  # noqa: F401
from .derive import (aggregate_rows, aggregate_tables, compared_columns, expected_rows, fanout_columns, parse_ref, primary_key,  # noqa: F401
                     source_columns, target_rows, targets_by_table)
from .errors import VerifyError
from . import follows
from .specs import load_specs
from .verify_report import exit_code, format_report, json_line, summary  # noqa: F401
from .verify_run import DEFAULT_CONSISTENCY, READ_LEVELS, FlowReport, Options, verify_flow

# the connector's writetime()/ttl() (a repair reads them) and Cassandra's case-sensitive column names
SESSION_CONF = {"spark.sql.extensions": "com.datastax.spark.connector.CassandraSparkExtensions",
                "spark.sql.caseSensitive": "true"}


def verify_frames(spec: FlowSpec | Mapping, source_df, fanout_dfs: Mapping[str, object],
                  actual_dfs: Mapping[str, object], sample_size: int = SAMPLE_SIZE) -> list[Result]:
    """:func:`expected_rows` then :func:`compare` for every target table of ``spec`` (a document or its FlowSpec);
    ``actual_dfs`` maps each target table's qualified name to its DataFrame."""
    spec = FlowSpec.parse(spec)
    results = []
    for name, exp in expected_rows(spec, source_df, fanout_dfs).items():
        if name not in actual_dfs:
            raise VerifyError(f"no DataFrame given for the target table {name}")
        key = primary_key(targets_by_table(spec)[name][0])
        results.append(compare(exp, actual_dfs[name], key, table=name, sample_size=sample_size))
    for name, aggregate in aggregate_tables(spec).items():
        if name not in actual_dfs:
            raise VerifyError(f"no DataFrame given for the aggregate table {name}")
        results.append(compare(aggregate_rows(aggregate, source_df, fanout_dfs), actual_dfs[name], primary_key(aggregate),
                               table=name, sample_size=sample_size))
    return results


# --- against Cassandra -----------------------------------------------------------------------------------------

def verify_with_session(spark, spec: FlowSpec | Mapping, consistency: str = DEFAULT_CONSISTENCY,
                        sample_size: int = SAMPLE_SIZE) -> list[Result]:
    """Reads the source, fan-out and target tables of ``spec`` (a document or its FlowSpec) with the connector at
    ``consistency`` and verifies every target (whole tables, nothing recorded, no driver session needed)."""
    options = Options(consistency=consistency, sample_size=sample_size)
    return list(verify_flow(spark, None, FlowSpec.parse(spec), options).results)


def run_verify(spec: FlowSpec | Mapping, contact_points: Iterable[str] | None = None, master: str = "local[*]",
               port: int | None = None, home=None, connection=None,
               consistency: str = DEFAULT_CONSISTENCY) -> list[Result]:
    """Starts a Spark session with the connector and verifies ``spec`` (a document or its FlowSpec). Raises
    VerifyError when the verification cannot run; differences are a result, not an error."""
    from .errors import describe_error
    from .session import build_session

    spec = FlowSpec.parse(spec)
    spark = build_session(master=master, contact_points=contact_points, port=port, connection=connection,
                          app_name=f"verify-{spec.name}", home=home, conf=SESSION_CONF)
    try:
        return verify_with_session(spark, spec, consistency)
    except AsyncTriggersError:
        raise
    except Exception as e:  # Spark surfaces Cassandra errors (unknown table, unavailable) as Py4J/analysis errors
        raise VerifyError(f"verifying flow '{spec.name}' failed: {describe_error(e)}") from e


# --- command line ----------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Failure:
    """A flow whose verification could not run (the others of the run go on)."""
    flow: str
    error: AsyncTriggersError

    @property
    def message(self) -> str:
        text = str(self.error)
        return text if f"'{self.flow}'" in text else f"flow '{self.flow}': {text}"


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A flow ``--all`` leaves out: a Java handler's rows cannot be derived from the specification."""
    flow: str
    reason: str


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.spark_jobs.verify", description=__doc__.split("\n\n")[0])
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--flow", action="append", help="a deployed flow (repeat for several)")
    which.add_argument("--all", action="store_true", help="every deployed flow")
    which.add_argument("--spec", help="a flow specification file (JSON, as in docs/design.md)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--home", default=None, help="cache dir (default $ASYNC_TRIGGERS_HOME or ~/.cache/async-triggers)")
    p.add_argument("--consistency", default=DEFAULT_CONSISTENCY, type=str.upper,
                   help=f"consistency level of every read (default {DEFAULT_CONSISTENCY}; {', '.join(READ_LEVELS)})")
    p.add_argument("--ranges", type=int, default=1,
                   help="compare token range by token range, each recorded so that a rerun resumes (default 1: one "
                        "comparison, nothing recorded)")
    p.add_argument("--restart", action="store_true", help="with --ranges: start a new run instead of resuming")
    p.add_argument("--repair", action="store_true", help="write what is missing or wrong, delete what is unexpected")
    p.add_argument("--json", action="store_true",
                   help="JSON lines: one line per flow, a list with one object per target table (see the module)")
    from async_triggers.connection import add_arguments
    add_arguments(p)
    return p


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Request:
    """What a verification checks and how: flows by name, or every deployed one (``all``), or a specification
    file (``spec``); the read consistency, token ranges, restart and repair of verify_run.Options."""
    flows: tuple[str, ...] = ()
    all: bool = False
    spec: str | None = None
    master: str = "local[*]"
    home: str | None = None
    consistency: str = DEFAULT_CONSISTENCY
    ranges: int = 1
    restart: bool = False
    repair: bool = False

    @classmethod
    def from_arguments(cls, args) -> "Request":
        return cls(flows=tuple(args.flow or ()), all=args.all, spec=args.spec, master=args.master, home=args.home,
                   consistency=args.consistency, ranges=args.ranges, restart=args.restart, repair=args.repair)


def run(request: Request, connection=None, progress=_stderr) -> list:
    """Verifies what ``request`` names, connecting as ``connection`` says (default: the ASYNC_TRIGGERS_*
    environment and the cqlshrc file). Returns a FlowReport, Failure or Skipped per flow; raises our errors when
    nothing can run (bad options, an unknown flow, no Spark, no cluster)."""
    import contextlib

    from async_triggers.connection import resolve
    from async_triggers.cql import connect

    from .errors import describe_error
    from .session import build_session

    options = Options(consistency=request.consistency, ranges=request.ranges, restart=request.restart, repair=request.repair)
    connection = connection or resolve({})
    spec = None
    if request.spec:
        try:
            with open(request.spec) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            from async_triggers.errors import ConfigError
            raise ConfigError(f"cannot read the specification {request.spec}: {e}") from e
        spec = FlowSpec.parse(doc)   # a SpecError (bad input) names the field
    label = spec.name if spec is not None else ("all" if request.all else "-".join(list(request.flows)))
    spark = build_session(master=request.master, connection=connection, app_name=f"verify-{label}", home=request.home,
                          conf=SESSION_CONF)
    try:
        specs = {label: spec} if spec is not None else load_specs(spark, None if request.all else list(request.flows))
    except AsyncTriggersError:
        raise
    except Exception as e:
        raise VerifyError(f"reading the deployed flows failed: {describe_error(e)}") from e
    if not specs:
        progress("verify: no flow is deployed")
    out: list = []
    needs_driver = options.ranges > 1 or options.repair
    with (connect(connection) if needs_driver and specs else contextlib.nullcontext()) as session:
        for name, s in specs.items():
            if request.all and s.handler:
                out.append(Skipped(name, f"runs the Java handler {s.handler}, whose rows Spark cannot derive"))
                continue
            if request.all and follows.is_companion(s):
                out.append(Skipped(name, f"the companion of flow '{s.follows.flow}', verified with it"))
                continue
            refusal = follows.companion_refusal(s, "verify")
            if refusal:
                out.append(Failure(name, VerifyError(refusal)))
                continue
            try:
                out.append(verify_flow(spark, session, s, options, progress))
            except AsyncTriggersError as e:
                out.append(Failure(name, e))
            except Exception as e:
                out.append(Failure(name, VerifyError(f"verifying flow '{name}' failed: {describe_error(e)}")))
    return out


def error_text(failure: Failure, as_json: bool) -> str:
    from async_triggers.errors import exit_code_of
    if as_json:
        return json.dumps({"error": failure.message, "exit_code": exit_code_of(failure.error), "flow": failure.flow})
    return f"error: {failure.message}"


def outcome(results: Sequence, as_json: bool) -> tuple[list[str], list[str], int]:
    """What a run prints (stdout lines, stderr lines) and its exit code: a failure's own exit code (the highest),
    else 1 when a flow differs, else 0."""
    from async_triggers.errors import exit_code_of

    reports = [r for r in results if isinstance(r, FlowReport)]
    failures = [r for r in results if isinstance(r, Failure)]
    out = [json_line(r) if as_json else format_report(r) for r in reports]
    if not as_json and len(results) > 1:
        out.append(summary(reports, [f.flow for f in failures], [r.flow for r in results if isinstance(r, Skipped)]))
    err = [f"verify {r.flow}: skipped: {r.reason}" for r in results if isinstance(r, Skipped)]
    err += [error_text(f, as_json) for f in failures]
    code = max([exit_code_of(f.error) for f in failures] + [exit_code(reports)])
    return (out if as_json else ["\n\n".join(out)] if out else []), err, code


def main(argv: Sequence[str] | None = None, connection=None) -> int:
    from async_triggers.errors import exit_code_of

    from async_triggers.connection import from_arguments

    args = _parser().parse_args(argv)
    try:
        results = run(Request.from_arguments(args), connection or from_arguments(args))
    except AsyncTriggersError as e:
        print(json.dumps({"error": str(e), "exit_code": exit_code_of(e)}) if args.json else f"error: {e}",
              file=sys.stderr)
        return exit_code_of(e)
    out, err, code = outcome(results, args.json)
    for line in out:
        print(line)
    for line in err:
        print(line, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
