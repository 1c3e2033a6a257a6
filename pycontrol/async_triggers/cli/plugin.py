"""`ctl plugin ...`: the plugin on an existing cluster: the bundle to install, and whether every node runs it."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from .. import bundle as bundle_mod, plugin as plugin_mod
from ..cql import connect
from .exit_codes import PROBLEM, errors_to_exit
from .options import acting_on, connection_options

app = typer.Typer(help="Install the plugin on a cluster and check it.", no_args_is_help=True)


@app.command("bundle")
def bundle_cmd(ctx: typer.Context,
               out: Path = typer.Option(Path("dist"), "--out", help="Folder for the bundle and its .tar.gz."),
               as_json: bool = typer.Option(False, "--json")):
    """Assemble the versioned bundle an operator installs: the jar, install-on-node.sh, INSTALL.md, metrics/."""
    from async_triggers.cluster.node_process import metrics_exporter_sources
    exporter, _ = metrics_exporter_sources(ctx.obj.plugin_jar)
    if not exporter.is_file():
        typer.echo(f"warning: {exporter} is not built (make plugin): the bundle's metrics/ lacks the Prometheus "
                   "exporter agent, and install-on-node.sh with ASYNC_TRIGGERS_METRICS_PORT will refuse", err=True)
    with errors_to_exit():
        b = bundle_mod.build(ctx.obj.plugin_jar, out,
                             extra_jars={exporter.name: exporter} if exporter.is_file() else None)
    if as_json:
        typer.echo(json.dumps({"version": b.version, "sha256": b.sha256, "folder": str(b.folder),
                               "archive": str(b.archive), "files": b.files}))
        return
    typer.echo(f"bundle {b.version} (jar sha256 {b.sha256[:12]}): {b.archive}")
    for f in b.files:
        typer.echo(f"  {b.folder.name}/{f}")
    typer.echo(f"next: follow {b.folder / 'INSTALL.md'}")


@app.command("check")
@connection_options
def check_cmd(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")):
    """Ask every node whether it runs the plugin, which version and build; exit 1 unless all run the same one."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            report = plugin_mod.check(session)
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        typer.echo(f"{'node':<16} {'dc':<12} {'rack':<8} {'plugin':<12} {'version':<16} jar sha256")
        for n in report.nodes:
            typer.echo(f"{n.address:<16} {n.datacenter or '?':<12} {n.rack or '?':<8} {n.state:<12} "
                       f"{n.version or '-':<16} {(n.jar_sha256 or '-')[:12]}")
        for p in report.problems:
            typer.echo(f"problem: {p}", err=True)
        if not report.problems:
            typer.echo(f"ok: all {len(report.nodes)} nodes run the plugin, one build")
    if report.problems:
        raise typer.Exit(PROBLEM)


@app.command("uninstall")
@connection_options
def uninstall_cmd(ctx: typer.Context,
                  discard_pending: bool = typer.Option(False, "--discard-pending",
                                                       help="Go on although flows hold tasks or dead letters."),
                  yes: bool = typer.Option(False, "--yes", help="Do not ask (scripts)."),
                  as_json: bool = typer.Option(False, "--json")):
    """Remove the plugin's schema: every flow (capture indexes, triggers, backup maps), anything of ours left
    without a flow, and the async_triggers keyspace. Refused while flows hold tasks or dead letters unless
    --discard-pending; asks first. The jar, the -javaagent line and the spill folders on each node are removed by
    hand (INSTALL.md, "Removing it")."""
    from .. import uninstall as uninstall_mod
    from .options import confirm
    with errors_to_exit():
        with acting_on(ctx.obj, "plugin uninstall") as session:
            held = uninstall_mod.holdings(session)
            if held and not discard_pending:
                raise uninstall_mod.refusal(held)
            lost = "; ".join(f"'{h.flow}': {h.describe()}" for h in held)
            confirm("Remove every flow, their backup maps and the async_triggers keyspace"
                    + (f", discarding {lost}" if held else "") + "?", yes)
            removed = uninstall_mod.uninstall(session, held, progress=lambda m: typer.echo(m, err=True))
    if as_json:
        typer.echo(json.dumps(removed.as_dict()))
        return
    typer.echo(f"removed {len(removed.flows)} flow(s)" + (f" ({', '.join(removed.flows)})" if removed.flows else "")
               + f", {len(removed.indexes)} leftover index(es), {len(removed.triggers)} trigger(s), "
               f"{len(removed.backup_maps)} backup map(s)"
               + (", the async_triggers keyspace" if removed.keyspace else ""))
    typer.echo("on each node: remove the -javaagent line and the jar, restart it, then delete "
               "<first data directory>/async_triggers_spill (INSTALL.md, \"Removing it\")")
