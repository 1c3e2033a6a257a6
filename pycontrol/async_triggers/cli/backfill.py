"""`ctl trigger backfill FLOW`: the Spark job that applies a deployed flow to the rows its source already held."""
from __future__ import annotations

from typing import Sequence

import typer

from ..errors import BackfillError, ConfigError
from ..flows import Flow
from . import preflight
from .exit_codes import errors_to_exit, exit_code_of, fail
from .options import connection_options


def refuse_handlers(flows: Sequence[Flow]) -> None:
    """`deploy --backfill` refuses, before the cluster changes, a flow that Spark cannot apply."""
    for f in flows:
        if f.handler:
            raise BackfillError(f"flow '{f.name}' runs the Java handler {f.handler}: Spark cannot apply a handler, "
                                "so this flow cannot be backfilled (deploy it without --backfill)")


def run(ctx: typer.Context, flow: str, master: str, ranges: int | None = None, restart: bool = False,
        as_json: bool = False) -> None:
    """Runs the job in this process (its connection is ours, password included, never an argument); its report on
    stdout, a failure as the job's error with its exit code."""
    import dataclasses
    import json

    from async_triggers import connection as connection_mod, extras
    from async_triggers.errors import AsyncTriggersError
    with errors_to_exit():
        extras.require("spark")
        from async_triggers.spark_jobs import backfill as backfill_job
        if ranges is not None and ranges < 1:
            raise ConfigError(f"--ranges must be at least 1, found: {ranges}")
        conn = connection_mod.with_password(ctx.obj.connection)
        preflight.deployed(conn, [flow], acting=f"backfill {flow}")
        try:
            report = backfill_job.run_backfill(flow, conn, master, str(ctx.obj.home),
                                               ranges if ranges is not None else backfill_job.DEFAULT_RANGES, restart)
        except AsyncTriggersError as e:
            raise fail(str(e) if f"'{flow}'" in str(e) else f"flow '{flow}': {e}", exit_code_of(e), as_json)
    typer.echo(json.dumps(dataclasses.asdict(report)) if as_json else report.text())


@connection_options
def backfill(ctx: typer.Context, flow: str = typer.Argument(..., help="A deployed flow."),
             master: str = typer.Option("local[*]", help="Spark master."),
             ranges: int = typer.Option(None, help="Token ranges of a new run (default 16); each completed one is "
                                                   "recorded, and a rerun skips them."),
             restart: bool = typer.Option(False, "--restart", help="Start over instead of resuming the last run."),
             as_json: bool = typer.Option(False, "--json")):
    """Write what the flow derives from the rows its source held before it was deployed, at each source row's
    timestamp and TTL (a newer live write wins); resumes an interrupted run."""
    run(ctx, flow, master, ranges, restart, as_json)
