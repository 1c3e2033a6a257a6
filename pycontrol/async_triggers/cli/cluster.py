"""`ctl cluster`: local Cassandra clusters (ccm) for development, tests and the demo."""
from __future__ import annotations

import json

import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import typer

from .exit_codes import errors_to_exit


class _Cluster:
    """async_triggers.cluster, imported at a command's first use of it: its ccm and psutil come with the 'cluster'
    extra, and `ctl --help` works without them."""

    def __getattr__(self, name: str):
        from async_triggers import cluster
        return getattr(cluster, name)


cl = _Cluster()

app = typer.Typer(help="Local Cassandra clusters (ccm): install, up, status, stop/start/kill nodes, add, decommission "
                      "and replace nodes, down.",
                  no_args_is_help=True)

NAME = typer.Option(None, "--name", "-n", help="Cluster name (default: ASYNC_TRIGGERS_CLUSTER or 'atc').")
NODE = typer.Argument(..., help="node1, node2... (or 1, 2...)")


def _progress(message: str) -> None:
    typer.echo(f"[cluster] {message}", err=True)


def _print_status(nodes) -> None:
    typer.echo(f"{'node':<8} {'address':<12} {'state':<6} {'cql':<4} {'pid':>8}  metrics")
    for n in nodes:
        typer.echo(f"{n.name:<8} {n.address:<12} {n.state:<6} {'yes' if n.cql else 'no':<4} "
                   f"{n.pid if n.pid else '-':>8}  {n.metrics_url or '-'}")


def _node_dict(n) -> dict:
    return {"name": n.name, "address": n.address, "state": n.state, "pid": n.pid, "cql": n.cql,
            "native_port": n.native_port, "jmx_port": n.jmx_port, "metrics_url": n.metrics_url}


def _report(nodes, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps([_node_dict(n) for n in nodes], indent=2))
    else:
        _print_status(nodes)


@app.command()
def install(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")):
    """Assemble (or validate) the Cassandra install dir and print its path."""
    with errors_to_exit():
        path = cl.ensure_install(ctx.obj, _progress)
    typer.echo(json.dumps({"install_dir": str(path), "version": ctx.obj.cassandra_version}) if as_json else path)


@app.command()
def up(ctx: typer.Context,
       nodes: Optional[int] = typer.Option(None, "--nodes", help="Number of nodes (new cluster: 3)."),
       name: Optional[str] = NAME,
       heap: str = typer.Option("1G", "--heap", help="JVM heap of each node (e.g. 512M, 1G)."),
       rf_hint: bool = typer.Option(False, "--rf-hint", help="Also print the replication factor to use."),
       no_plugin: bool = typer.Option(False, "--no-plugin", help="Start even if the plugin jar is not built."),
       timeout: float = typer.Option(300, "--timeout", help="Seconds to wait for the nodes."),
       commitlog_sync: Optional[str] = typer.Option(
           None, "--commitlog-sync", help="New cluster: periodic (Cassandra's default; a node killed -9 forgets its "
                                          "last ~100 ms of acknowledged writes) or batch (nothing acknowledged is lost)."),
       as_json: bool = typer.Option(False, "--json", help="Print the nodes as JSON.")):
    """Create and start a local cluster (reused if it exists), with the trigger plugin in every node."""
    with errors_to_exit():
        info = cl.up(ctx.obj, nodes=nodes, name=name, heap=heap, progress=_progress,
                     require_plugin=not no_plugin, timeout=timeout, commitlog_sync=commitlog_sync)
    if as_json:
        typer.echo(json.dumps({"name": info.name, "contact_points": list(info.contact_points),
                               "nodes": [_node_dict(n) for n in info.nodes]}, indent=2))
        return
    _print_status(info.nodes)
    typer.echo(f"contact points: {','.join(info.contact_points)}")
    typer.echo(f"cqlsh: {info.cqlsh_command()}   (or: ctl cluster cqlsh node1)")
    if rf_hint:
        rf = info.replication_factor_hint
        typer.echo(f"replication factor hint: {rf}  "
                   f"(WITH replication = {{'class': 'NetworkTopologyStrategy', 'datacenter1': {rf}}})")


@app.command()
def status(ctx: typer.Context, name: Optional[str] = NAME, as_json: bool = typer.Option(False, "--json", help="Print the nodes as JSON.")):
    """Nodes of the cluster: address, state (up/down), CQL port open, pid."""
    with errors_to_exit():
        nodes = cl.node_status(ctx.obj, name)
    _report(nodes, as_json)


@app.command()
def down(ctx: typer.Context, name: Optional[str] = NAME,
         missing_ok: bool = typer.Option(False, "--missing-ok", help="A cluster that does not exist is no error."),
         as_json: bool = typer.Option(False, "--json")):
    """Stop every node (kill) and remove the cluster with its data. A cluster that does not exist is an error
    (exit 2) unless --missing-ok."""
    from ..errors import ConfigError
    with errors_to_exit():
        resolved = name or ctx.obj.cluster_name
        removed = cl.down(ctx.obj, name, _progress)
        if not removed and not missing_ok:
            raise ConfigError(f"no cluster named '{resolved}' (the clusters are the folders of {ctx.obj.ccm_dir})")
    typer.echo(json.dumps({"cluster": resolved, "removed": removed}) if as_json
               else f"removed cluster {resolved}" if removed else f"no cluster named '{resolved}': nothing to remove")


@app.command()
def stop(ctx: typer.Context, node: str = NODE,
         name: Optional[str] = NAME,
         timeout: float = typer.Option(60, "--timeout", help="Seconds before falling back to kill -9."),
         as_json: bool = typer.Option(False, "--json", help="Print the nodes as JSON.")):
    """Stop one node gracefully."""
    with errors_to_exit():
        _report([cl.stop_node(ctx.obj, node, name, _progress, timeout=timeout)], as_json)


@app.command()
def start(ctx: typer.Context, node: str = NODE,
          name: Optional[str] = NAME,
          timeout: float = typer.Option(180, "--timeout", help="Seconds to wait for CQL."),
          as_json: bool = typer.Option(False, "--json", help="Print the nodes as JSON.")):
    """Start one node and wait until it answers CQL."""
    with errors_to_exit():
        _report([cl.start_node(ctx.obj, node, name, _progress, timeout=timeout)], as_json)


@app.command()
def kill(ctx: typer.Context, node: str = NODE,
         name: Optional[str] = NAME, as_json: bool = typer.Option(False, "--json", help="Print the nodes as JSON.")):
    """kill -9 one node's JVM (fault injection)."""
    with errors_to_exit():
        _report([cl.kill_node(ctx.obj, node, name, _progress)], as_json)


@app.command("add-node")
def add_node(ctx: typer.Context, name: Optional[str] = NAME,
             timeout: float = typer.Option(900, "--timeout", help="Seconds to wait for the bootstrap."),
             as_json: bool = typer.Option(False, "--json", help="Print the new node as JSON.")):
    """Bootstrap a new node into the running cluster (it streams its share of the data, then serves)."""
    with errors_to_exit():
        _report([cl.add_node(ctx.obj, name, _progress, timeout=timeout)], as_json)


@app.command()
def decommission(ctx: typer.Context, node: str = NODE, name: Optional[str] = NAME,
                 timeout: float = typer.Option(900, "--timeout", help="Seconds to wait for the streaming."),
                 force: bool = typer.Option(False, "--force", help="Also when a keyspace's replication factor is "
                                            "larger than the nodes left (nodetool decommission --force)."),
                 as_json: bool = typer.Option(False, "--json", help="Print the remaining nodes as JSON.")):
    """Stream a running node's data to the others (nodetool decommission), then stop and remove it."""
    with errors_to_exit():
        cl.decommission(ctx.obj, node, name, _progress, timeout=timeout, force=force)
        _report(cl.node_status(ctx.obj, name), as_json)


@app.command()
def replace(ctx: typer.Context, node: str = NODE, name: Optional[str] = NAME,
            timeout: float = typer.Option(900, "--timeout", help="Seconds to wait for the replacement to serve."),
            as_json: bool = typer.Option(False, "--json", help="Print the new node as JSON.")):
    """Replace a dead node by a new one on a free address that takes over its tokens (replace_address_first_boot)."""
    with errors_to_exit():
        _report([cl.replace_node(ctx.obj, node, name, _progress, timeout=timeout)], as_json)


@app.command("install-plugin")
def install_plugin(ctx: typer.Context, name: Optional[str] = NAME,
                   jar: Optional[Path] = typer.Option(None, "--jar", help="Default: the built plugin jar."),
                   as_json: bool = typer.Option(False, "--json")):
    """Copy the plugin jar into the cluster's dir and restart the running nodes one at a time to load it."""
    with errors_to_exit():
        info = cl.cluster_info(ctx.obj, name)
        installed = cl.install_plugin(info, jar or ctx.obj.plugin_jar, _progress)
    typer.echo(json.dumps({"cluster": info.name, "plugin": str(installed)}) if as_json else installed)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def nodetool(ctx: typer.Context, node: str = NODE,
             args: Optional[List[str]] = typer.Argument(None, help="nodetool arguments (after --)"),
             name: Optional[str] = NAME):
    """Run nodetool against one node: ctl cluster nodetool node1 -- status"""
    with errors_to_exit():
        argv, env = cl.nodetool_command(ctx.obj, node, list(args or []) + list(ctx.args), name)
    raise typer.Exit(subprocess.call(argv, env=env))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def cqlsh(ctx: typer.Context, node: str = typer.Argument("node1", help="node1, node2... (or 1, 2...)"),
          args: Optional[List[str]] = typer.Argument(None, help="cqlsh arguments (after --), e.g. -e 'QUERY'"),
          name: Optional[str] = NAME):
    """Open cqlsh on one node: ctl cluster cqlsh node1 [-- -e 'SELECT ...']"""
    with errors_to_exit():
        argv = cl.cqlsh_command(ctx.obj, node, list(args or []) + list(ctx.args), name)
    sys.stdout.flush()
    os.execv(argv[0], argv)


prometheus_app = typer.Typer(help="A Prometheus server scraping the local cluster's nodes every 2 s (Debian's "
                                  "/usr/bin/prometheus; `make promtool` installs it), for `ctl trigger dashboard`.",
                             no_args_is_help=True)
app.add_typer(prometheus_app, name="prometheus")


@prometheus_app.command("up")
def prometheus_up(ctx: typer.Context, name: Optional[str] = NAME,
                  as_json: bool = typer.Option(False, "--json", help="The server as JSON.")):
    """Start Prometheus on a free port of 127.0.0.1, scraping every node's exporter (a running one reloads its
    config); print its URL. Its config, data and log live in the cluster's dir, under prometheus/."""
    from async_triggers.cluster import prometheus
    with errors_to_exit():
        server = prometheus.up(ctx.obj, name, _progress)
    typer.echo(json.dumps({"cluster": name or ctx.obj.cluster_name, **server.as_dict()}) if as_json else server.url)


@prometheus_app.command("down")
def prometheus_down(ctx: typer.Context, name: Optional[str] = NAME, as_json: bool = typer.Option(False, "--json")):
    """Stop the cluster's Prometheus (its data stays until `ctl cluster down`). None running is no error."""
    from async_triggers.cluster import prometheus
    with errors_to_exit():
        resolved = name or ctx.obj.cluster_name
        stopped = prometheus.down(ctx.obj, name, _progress)
    typer.echo(json.dumps({"cluster": resolved, "stopped": stopped}) if as_json
               else f"stopped the Prometheus of cluster {resolved}" if stopped
               else f"no Prometheus runs for cluster {resolved}")
