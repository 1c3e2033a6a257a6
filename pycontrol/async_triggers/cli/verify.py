"""`ctl verify FLOW [FLOW ...]` / `ctl verify --all`: the Spark job that checks (and with --repair repairs) what the
flows derived (async_triggers.spark_jobs.verify)."""
from __future__ import annotations

import typer

from . import preflight
from .exit_codes import fail, errors_to_exit
from .options import connection_options


@connection_options
def verify(ctx: typer.Context, flows: list[str] = typer.Argument(None, help="Deployed flows (or --all)."),
           all_flows: bool = typer.Option(False, "--all", help="Every deployed flow (Java handler flows skipped)."),
           master: str = typer.Option("local[*]", help="Spark master."),
           consistency: str = typer.Option("LOCAL_QUORUM", help="Consistency level of every read (ONE, QUORUM, "
                                                                "LOCAL_QUORUM, ALL, ...)."),
           ranges: int = typer.Option(1, help="Compare token range by token range; each range done is recorded in "
                                              "async_triggers.verify_progress and a rerun resumes."),
           restart: bool = typer.Option(False, "--restart", help="With --ranges: start over instead of resuming."),
           repair: bool = typer.Option(False, "--repair", help="Write what is missing or wrong (at the source row's "
                                                               "write time), delete what is unexpected (at its own); "
                                                               "run it on a drained flow."),
           as_json: bool = typer.Option(False, "--json", help="JSON lines: one line per flow, a list with one object "
                                                              "per target table.")):
    """Compare each flow's target tables with what its source tables imply: expected, present, missing,
    unexpected and wrong-value rows, with samples. Exit 0 when nothing differs (after --repair: when everything
    found was repaired), 1 when something differs or the check could not run, 2 for a flow that is not deployed
    or a bad option."""
    from async_triggers import connection as connection_mod, extras
    if bool(flows) == all_flows:
        raise fail("name the flows to verify, or --all (not both)", 2, as_json)
    with errors_to_exit():
        extras.require("spark")
        from async_triggers.spark_jobs import verify as verify_job
        from async_triggers.spark_jobs.verify_run import Options
        Options(consistency=consistency, ranges=ranges)   # a bad option, before anything connects
        # the job runs in this process; its connection is ours, password included, never an argument
        conn = connection_mod.with_password(ctx.obj.connection)
        preflight.deployed(conn, flows or [], acting="verify --repair" if repair else None)
        request = verify_job.Request(flows=tuple(flows or ()), all=all_flows, master=master, home=str(ctx.obj.home),
                                     consistency=consistency.upper(), ranges=ranges, restart=restart, repair=repair)
        results = verify_job.run(request, connection=conn)
    out, err, code = verify_job.outcome(results, as_json)
    for line in out:
        typer.echo(line)
    for line in err:
        typer.echo(line, err=True)
    raise typer.Exit(code)
