"""`ctl chaos`: a fault campaign on a real cluster (pycontrol/async_triggers/chaos)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import typer

from .exit_codes import errors_to_exit
from ..errors import ConfigError

app = typer.Typer(help="Fault campaigns: load + nemesis + Spark checker, seeded and replayable.", no_args_is_help=True)


@app.command("run")
def run(ctx: typer.Context,
        runs: int = typer.Option(3, "--runs", help="Faulty runs after the fault-free reference run."),
        seed: int = typer.Option(1, "--seed", help="Draws each run's fault seed."),
        replay: Optional[int] = typer.Option(None, "--replay", help="Run only this fault seed (from a run's line)."),
        from_run: int = typer.Option(1, "--from-run", help="Play the seed's faulty runs from this one on (after the "
                                                           "reference run): resumes a campaign cut short."),
        kinds: Optional[str] = typer.Option(None, "--kinds", help="Comma-separated fault kinds to draw from."),
        faults: Optional[int] = typer.Option(None, "--faults", help="Faults per run (default: one or two, drawn)."),
        cluster: str = typer.Option("chaos", "--cluster", help="The ccm cluster (created when missing)."),
        nodes: int = typer.Option(3, "--nodes"),
        tweets: Optional[int] = typer.Option(None, "--tweets", help="Tweets per run."),
        follows: Optional[int] = typer.Option(None, "--follows", help="Follows per run by users of its own (half "
                                                                      "unfollow again); default 60."),
        load_s: Optional[float] = typer.Option(None, "--load-seconds", help="Seconds of load per run."),
        out: Path = typer.Option(Path("/tmp/async-triggers-chaos"), "--out", help="Per-run lines, summary, evidence."),
        no_reference: bool = typer.Option(False, "--no-reference", help="No fault-free reference run: each run is "
                                                                        "checked against its own source only "
                                                                        "(no 'differs')."),
        master: str = typer.Option("local[2]", "--master", help="Spark master of the checks (spark://... with "
                                                                 "`ctl spark up`)."),
        as_json: bool = typer.Option(False, "--json", help="The runs and the summary as one JSON object (the lines "
                                                            "go to stderr).")):
    """Run a campaign: one line per run, then a summary; exit 1 when any run lost, added or changed a row."""
    from ..chaos import campaign, nemesis
    with errors_to_exit():
        config = campaign.CampaignConfig(out=out, runs=runs, seed=seed, replay=replay, cluster=cluster, nodes=nodes,
                                         faults_per_run=faults, master=master,
                                         reference=not no_reference)
        if kinds:
            chosen = tuple(k.strip() for k in kinds.split(",") if k.strip())
            unknown = [k for k in chosen if k not in nemesis.KINDS]
            if unknown:
                raise ConfigError(f"unknown fault kind(s) {', '.join(unknown)} (known: {', '.join(nemesis.KINDS)})")
            config = dataclasses.replace(config, kinds=chosen)
        if tweets is not None:
            config = dataclasses.replace(config, tweets=tweets)
        if follows is not None:
            if follows < 0:
                raise ConfigError(f"--follows must be zero or more, found: {follows}")
            config = dataclasses.replace(config, follows=follows)
        if load_s is not None:
            config = dataclasses.replace(config, load_s=load_s)
        if runs < 0:
            raise ConfigError(f"--runs must be zero or more, found: {runs}")
        if not 1 <= from_run <= max(runs, 1) or (replay is not None and from_run != 1):
            raise ConfigError(f"--from-run must be between 1 and --runs ({runs}) and without --replay, found: {from_run}")
        config = dataclasses.replace(config, from_run=from_run)
        results = campaign.run_campaign(ctx.obj, config, progress=lambda m: typer.echo(m, err=True),
                                        report=(lambda m: typer.echo(m, err=True)) if as_json else typer.echo)
    if as_json:
        summary = json.loads((out / "summary.json").read_text())
        typer.echo(json.dumps({"runs": [dataclasses.asdict(r) for r in results], "summary": summary}, default=str))
    raise typer.Exit(0 if all(r.ok for r in results) else 1)
