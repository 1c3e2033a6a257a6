"""`ctl verify FLOW`: the Spark job that checks every propagation happened."""
from __future__ import annotations

import typer

from .exit_codes import OK, PROBLEM, errors_to_exit
from .options import connection_options


@connection_options
def verify(ctx: typer.Context, flow: str = typer.Argument(..., help="A deployed flow."),
           master: str = typer.Option("local[*]", help="Spark master."),
           as_json: bool = typer.Option(False, "--json")):
    """Compare the flow's target tables with what the source tables imply: expected/present/missing/unexpected.
    Exit 1 when rows are missing (or the check could not run), 2 for a flow that is not deployed."""
    from async_triggers import connection as connection_mod
    from async_triggers.spark_jobs import verify as verify_job
    with errors_to_exit():
        # the job runs in this process; its connection is ours, password included, never an argument
        conn = connection_mod.with_password(ctx.obj.connection)
        args = verify_job._parser().parse_args(["--flow", flow, "--master", master, "--home", str(ctx.obj.home)])
        name, results, elapsed = verify_job.run(args, connection=conn)
    typer.echo(verify_job.report(name, results, elapsed, as_json))
    raise typer.Exit(OK if all(r.ok for r in results) else PROBLEM)
