"""`ctl`: one sub-app per noun. Commands stay thin: build settings, call the library, map errors to exit codes."""
from __future__ import annotations

import typer

from .. import config as config_mod

app = typer.Typer(help="Asynchronous triggers for Apache Cassandra: clusters, flows, verification, benchmarks.",
                  no_args_is_help=True, add_completion=False)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version
        typer.echo(f"ctl (async-triggers) {version('async-triggers')}")
        raise typer.Exit()


@app.callback()
def _root(ctx: typer.Context,
          _version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                        help="Print the version and exit."),
          home: str = typer.Option(None, help="Cache directory (default ~/.cache/async-triggers)."),
          contact_points: str = typer.Option(None, "--contact-points", help="Comma-separated CQL hosts."),
          install_dir: str = typer.Option(None, "--install-dir",
                                          help="An official Apache Cassandra 5.0 binary distribution to use instead "
                                               "of the one assembled from Maven.")):
    cps = tuple(p for p in contact_points.split(",") if p) if contact_points else None
    ctx.obj = config_mod.load(home=home, contact_points=cps, install_dir=install_dir)


def _register() -> None:
    from . import bench, chaos, cluster, demo, plugin, trigger, verify
    app.add_typer(bench.app, name="bench")
    app.add_typer(chaos.app, name="chaos")
    app.add_typer(cluster.app, name="cluster")
    app.add_typer(plugin.app, name="plugin")
    app.add_typer(trigger.app, name="trigger")
    app.command("verify")(verify.verify)
    app.command("demo")(demo.demo)


def main() -> None:
    _register()
    app()
