"""`ctl fuzz`: differential fuzzing of the flows on a real cluster (pycontrol/async_triggers/fuzz)."""
from __future__ import annotations

import json

from pathlib import Path
from typing import Optional

import typer

from .exit_codes import errors_to_exit

app = typer.Typer(help="Seeded random histories of every CQL write shape, checked by the verify job, failures shrunk.",
                  no_args_is_help=True)


@app.command("run")
def run(ctx: typer.Context,
        seeds: int = typer.Option(30, "--seeds", help="Seeds to run: --seed, --seed + 1, ..."),
        seed: int = typer.Option(1, "--seed", help="The first seed."),
        replay: Optional[int] = typer.Option(None, "--replay", help="Run only this seed (from a seed's line)."),
        ops: int = typer.Option(40, "--ops", help="Operations per history (a replay needs the same number)."),
        out: Path = typer.Option(Path("/tmp/async-triggers-fuzz"), "--out", help="Runs, summary, evidence."),
        faults: bool = typer.Option(True, "--faults/--no-faults", help="Stop a replica in about a third of the "
                                                                       "histories (hints off, then read repair)."),
        shrink: bool = typer.Option(True, "--shrink/--no-shrink", help="Shrink a failing history."),
        shrink_runs: int = typer.Option(16, "--shrink-runs", help="Candidate runs a shrink may make per seed."),
        cluster: str = typer.Option("fuzz", "--cluster", help="The ccm cluster (created, and removed after, when "
                                                              "missing)."),
        nodes: int = typer.Option(3, "--nodes"),
        keyspace: str = typer.Option("fuzz", "--keyspace", help="The designs' keyspaces are <keyspace>_d<design>."),
        design_every: int = typer.Option(10, "--design-every", help="Seeds per drawn design (tables, column types, "
                                                                     "flows): seed S runs on design S // this."),
        master: str = typer.Option("local[2]", "--master", help="Spark master of the checks."),
        as_json: bool = typer.Option(False, "--json", help="The summary as one JSON object (the lines go to "
                                                            "stderr).")):
    """Run a campaign: one line per seed, a failing seed's (shrunk) operations, then a summary with the count of
    every write shape and the column types and flow shapes drawn; exit 1 when a seed failed."""
    from ..fuzz import campaign
    with errors_to_exit():
        config = campaign.FuzzConfig(out=out, seeds=seeds, seed=seed, replay=replay, ops=ops, faults=faults,
                                     shrink=shrink, shrink_runs=shrink_runs, cluster=cluster, nodes=nodes,
                                     keyspace=keyspace, master=master, design_every=design_every)
        summary = campaign.run_campaign(ctx.obj, config, progress=lambda m: typer.echo(m, err=True),
                                        report=(lambda m: typer.echo(m, err=True)) if as_json else typer.echo)
    if as_json:
        typer.echo(json.dumps({**summary.as_dict(), "out": str(out)}))
    raise typer.Exit(0 if not summary.failed_seeds else 1)
