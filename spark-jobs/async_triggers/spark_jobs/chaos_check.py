"""The checker of a chaos run: an independent read of the tables through the Spark Cassandra Connector.

For one run's rows (the tweet ids in ``[id_from, id_to)``):

- every flow is verified as ``async_triggers.spark_jobs.verify`` does (expected rows from the current source and fan-out
  tables; missing, unexpected and wrong-value rows of each target), on that run's rows only; a flow with aggregates
  on the whole source (a group totals every run's rows);
- the run's tables, ids made relative to the run (the id column, and the other columns ``relative`` names where they
  hold one of the run's ids), are compared with those of the campaign's fault-free reference run (same inputs): rows
  only in the reference, rows only in this run. The reference run writes its snapshot (Parquet) instead.

    python -m async_triggers.spark_jobs.chaos_check --flows chaos_timeline,chaos_copy --tables chaos.tweets:tweet_id \\
        --run-ids chaos.timeline:user_id --id-from 10000000 --id-to 20000000 --reference /tmp/ref --json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from async_triggers.spec import FlowSpec

SAMPLE_SIZE = 10


def restrict(df, column: str, id_from: int, id_to: int):
    from pyspark.sql import functions as F

    return df.where((F.col(column) >= id_from) & (F.col(column) < id_to))


def verify_flow(spark, spec: FlowSpec | Mapping, id_column: str, id_from: int, id_to: int) -> list[dict]:
    """async_triggers.spark_jobs.verify on one run's rows: the source and every target restricted to the run's ids.
    ``spec``: a document or its FlowSpec."""
    from .derive import aggregate_tables
    from .session import read_table
    from .verify import fanout_columns, source_columns, targets_by_table, verify_frames
    from .verify_run import Options, read_target

    spec = FlowSpec.parse(spec)
    whole = bool(aggregate_tables(spec))

    def run_only(df, column: str = id_column):
        return df if whole else restrict(df, column, id_from, id_to)

    def id_of(group) -> str:   # the target's column that holds the source's id (a join index names it k0)
        return next((c for c, e in group[0].columns.items() if e == f"source.{id_column}"), id_column)

    source_df = run_only(read_table(spark, spec.source.keyspace, spec.source.table, source_columns(spec)))
    fanout_dfs = {name: read_table(spark, *name.split(".", 1), cols) for name, cols in fanout_columns(spec).items()}
    # as ctl verify reads them (a join index's rows kept as gone are not the flow's rows)
    actual_dfs = {name: run_only(read_target(spark, None, spec, name, None, Options()), id_of(group))
                  for name, group in targets_by_table(spec).items()}
    return [dict(flow=spec.name, **r.as_dict()) for r in verify_frames(spec, source_df, fanout_dfs, actual_dfs)]


def compare_with_reference(spark, tables: Sequence[tuple[str, str]], id_from: int, id_to: int,
                           reference: Path, write: bool, relative: Mapping[str, Sequence[str]] = {}) -> list[dict]:
    """Each table's rows of the run, ids relative to the run; written as the reference (``write``) or compared
    with it. Returns one dict per table: rows, only_in_reference, only_in_run (and samples)."""
    from pyspark.sql import functions as F

    from .session import read_table

    out = []
    for qualified, column in tables:
        keyspace, table = qualified.split(".", 1)
        df = restrict(read_table(spark, keyspace, table), column, id_from, id_to)
        df = df.withColumn(column, F.col(column) - F.lit(id_from))
        for other in relative.get(qualified, ()):
            run_id = (F.col(other) >= F.lit(id_from)) & (F.col(other) < F.lit(id_to))
            df = df.withColumn(other, F.when(run_id, F.col(other) - F.lit(id_from)).otherwise(F.col(other)))
        df = df.select(*sorted(df.columns))
        path = str(reference / table)
        if write:
            df.write.mode("overwrite").parquet(path)
            out.append(dict(table=qualified, rows=spark.read.parquet(path).count(), only_in_reference=0, only_in_run=0))
            continue
        ref = spark.read.parquet(path).select(*sorted(df.columns)).cache()
        cur = df.cache()
        missing, extra = ref.exceptAll(cur), cur.exceptAll(ref)
        out.append(dict(table=qualified, rows=cur.count(), only_in_reference=missing.count(), only_in_run=extra.count(),
                        only_in_reference_sample=[r.asDict() for r in missing.limit(SAMPLE_SIZE).collect()],
                        only_in_run_sample=[r.asDict() for r in extra.limit(SAMPLE_SIZE).collect()]))
        ref.unpersist()
        cur.unpersist()
    return out


def check(spark, flows: Iterable[str], tables: Sequence[tuple[str, str]], id_column: str, id_from: int, id_to: int,
          reference: Path | None, write_reference: bool, relative: Mapping[str, Sequence[str]] = {}) -> dict:
    """``reference`` None: no comparison with a reference run (``differs`` 0)."""
    from .specs import load_spec

    verified = [r for flow in flows for r in verify_flow(spark, load_spec(spark, flow), id_column, id_from, id_to)]
    compared = [] if reference is None else compare_with_reference(spark, tables, id_from, id_to, reference,
                                                                   write_reference, relative)
    return {
        "verified": verified,
        "compared": compared,
        "missing": sum(r["missing"] for r in verified),
        "unexpected": sum(r["unexpected"] for r in verified),
        "wrong_value": sum(r["wrong_value"] for r in verified),
        "differs": sum(c["only_in_reference"] + c["only_in_run"] for c in compared),
    }


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.spark_jobs.chaos_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--flows", required=True, help="comma-separated deployed flows")
    p.add_argument("--tables", required=True, help="comma-separated keyspace.table:id_column to compare")
    p.add_argument("--run-ids", default="", help="comma-separated keyspace.table:column, other columns that hold a "
                                                 "run's ids where they are in the run's range (its own users)")
    p.add_argument("--id-column", default="tweet_id")
    p.add_argument("--id-from", type=int, required=True)
    p.add_argument("--id-to", type=int, required=True)
    p.add_argument("--reference", required=True, help="the reference run's snapshot folder")
    p.add_argument("--write-reference", action="store_true", help="this run is the reference: write its snapshot")
    p.add_argument("--master", default="local[2]")
    from async_triggers.connection import add_arguments
    add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from .session import build_session

    args = _parser().parse_args(argv)
    tables = [tuple(t.split(":", 1)) for t in args.tables.split(",") if t]
    relative: dict[str, list[str]] = {}
    for item in filter(None, args.run_ids.split(",")):
        table, column = item.split(":", 1)
        relative.setdefault(table, []).append(column)
    from async_triggers.errors import exit_code_of
    from async_triggers.connection import from_arguments
    from async_triggers.errors import AsyncTriggersError
    try:
        spark = build_session(master=args.master, connection=from_arguments(args), app_name="chaos-check")
    except AsyncTriggersError as e:
        print(f"error: {e}", file=sys.stderr)
        return exit_code_of(e)
    result = check(spark, args.flows.split(","), tables, args.id_column, args.id_from, args.id_to,
                   Path(args.reference), args.write_reference, relative)
    print(json.dumps(result, default=str))
    return 0 if result["missing"] == result["unexpected"] == result["wrong_value"] == result["differs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
