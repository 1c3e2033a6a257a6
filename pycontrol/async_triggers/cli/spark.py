"""``ctl spark up|status|down``: a Spark standalone cluster on this machine (a master and workers started from the
pyspark installation's own launcher), for running the Spark-backed commands with ``--master spark://...``."""
from __future__ import annotations

import json

import typer

from async_triggers.cli.exit_codes import errors_to_exit

app = typer.Typer(help="A local Spark standalone cluster (master + workers) for --master spark://...",
                  no_args_is_help=True)

_NAME = typer.Option("local", "--name", help="The cluster's name (its state folder under the cache home).")


@app.command("up")
def up(ctx: typer.Context, name: str = _NAME,
       workers: int = typer.Option(2, "--workers", help="Worker processes."),
       cores: int = typer.Option(1, "--cores", help="Cores each worker offers."),
       memory: str = typer.Option("1g", "--memory", help="Memory each worker offers its executors."),
       port: int = typer.Option(7177, "--port", help="The master's port (spark://127.0.0.1:PORT)."),
       webui_port: int = typer.Option(8180, "--webui-port", help="The master's status page (its /json/)."),
       timeout: float = typer.Option(90.0, "--timeout", help="Seconds to wait for every worker to register."),
       as_json: bool = typer.Option(False, "--json")):
    """Start the master and workers (or say it runs already); prints the master URL for --master."""
    from async_triggers.spark_jobs import standalone
    with errors_to_exit():
        cluster = standalone.up(ctx.obj.home, name, workers, cores, memory, port, webui_port, timeout,
                                progress=lambda m: typer.echo(m, err=True))
    typer.echo(json.dumps({"name": name, "master": cluster.master_url, "workers": cluster.workers}) if as_json
               else cluster.master_url)


@app.command("status")
def status(ctx: typer.Context, name: str = _NAME, as_json: bool = typer.Option(False, "--json")):
    """The master's own account: status, workers, cores; exit 1 when the cluster is not up."""
    from async_triggers.spark_jobs import standalone
    with errors_to_exit():
        cluster = standalone.state(ctx.obj.home, name)
        if cluster is None:
            report = {"name": name, "status": "NONE", "workers": [], "alive_workers": 0, "cores": 0}
        else:
            report = standalone.status(cluster)
    if as_json:
        typer.echo(json.dumps(report))
    else:
        typer.echo(f"{name}: {report['status']}" + (f" {report['master']}, {report['alive_workers']} alive "
                                                    f"worker(s), {report['cores']} core(s)" if cluster else
                                                    " (no such cluster: ctl spark up)"))
        for w in report["workers"]:
            typer.echo(f"  {w['id']}: {w['state']}, {w['cores']} core(s), {w['memory_mb']} MB")
    ok = cluster is not None and report["status"] == "ALIVE" and report["alive_workers"] >= cluster.workers
    raise typer.Exit(0 if ok else 1)


@app.command("down")
def down(ctx: typer.Context, name: str = _NAME, as_json: bool = typer.Option(False, "--json")):
    """Stop the master and workers this cluster started."""
    from async_triggers.spark_jobs import standalone
    with errors_to_exit():
        found = standalone.down(ctx.obj.home, name, progress=lambda m: typer.echo(m, err=True))
    typer.echo(json.dumps({"name": name, "stopped": bool(found)}) if as_json
               else f"Spark cluster {name} {'stopped' if found else 'was not running'}")
