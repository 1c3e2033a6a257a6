"""`ctl verify FLOW`: the Spark job that checks every propagation happened."""
from __future__ import annotations

import typer

from .exit_codes import errors_to_exit


def verify(ctx: typer.Context, flow: str = typer.Argument(..., help="A deployed flow."),
           master: str = typer.Option("local[*]", help="Spark master."),
           as_json: bool = typer.Option(False, "--json")):
    """Compare the flow's target tables with what the source tables imply: expected/present/missing/unexpected."""
    from async_triggers.spark_jobs import verify as verify_job
    with errors_to_exit():
        argv = ["--flow", flow, "--master", master, "--contact-points", ",".join(ctx.obj.contact_points)]
        if as_json:
            argv.append("--json")
        code = verify_job.main(argv)
    raise typer.Exit(code)
