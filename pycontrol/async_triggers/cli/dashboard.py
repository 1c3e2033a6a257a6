"""`ctl trigger dashboard`: the Grafana dashboard drawn into a PNG from a Prometheus server
(async_triggers.dashboard_picture); `ctl cluster prometheus up` runs one for a local cluster."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from .exit_codes import errors_to_exit


def dashboard(ctx: typer.Context,
              out: Path = typer.Option(..., "--out", help="The PNG to write."),
              prometheus: Optional[str] = typer.Option(None, "--prometheus",
                                                       help="The Prometheus server to read, e.g. http://host:9090."),
              name: Optional[str] = typer.Option(None, "--name", "-n",
                                                 help="Instead of --prometheus: the local cluster whose Prometheus "
                                                      "`ctl cluster prometheus up` started."),
              since: str = typer.Option("10m", "--since", help="The window: this long up to now (90s, 10m, 1h)."),
              flow: str = typer.Option(".*", "--flow", help="Regex of the flows shown ($flow)."),
              node: str = typer.Option(".*", "--node", help="Regex of the instances shown, host:port ($node)."),
              rate_interval: str = typer.Option("1m", "--rate-interval", help="$__rate_interval of the rates."),
              dashboard_file: Optional[Path] = typer.Option(None, "--dashboard",
                                                            help="Another dashboard JSON (default: the shipped "
                                                                 "trigger-plugin/dist/metrics/grafana-dashboard.json)."),
              as_json: bool = typer.Option(False, "--json", help="The summary as JSON.")):
    """Draw every panel of the Grafana dashboard from a Prometheus server into a PNG (no Grafana needed). A panel
    whose queries fail or return nothing shows "no data" and is named on stderr (exit 0: the picture was drawn)."""
    from .. import dashboard_picture as picture
    from ..errors import ConfigError
    with errors_to_exit():
        if not prometheus:
            if not name:
                raise ConfigError("give --prometheus URL (or --name NAME: a local cluster whose Prometheus "
                                  "`ctl cluster prometheus up --name NAME` started)")
            prometheus = _local_prometheus(ctx, name)
        window = picture.Window.ending(time.time(), picture.parse_duration(since))
        summary = picture.render(prometheus, out, window, dashboard=dashboard_file or picture.DASHBOARD, flow=flow,
                                 node=node, rate_interval=rate_interval)
    if as_json:
        typer.echo(json.dumps(summary.as_dict()))
        return
    for panel in summary.panels:
        if not panel.has_data:
            typer.echo(f"no data: {panel.title}" + "".join(f"\n  {e}" for e in panel.errors), err=True)
    typer.echo(f"wrote {summary.out}: {len(summary.panels) - len(summary.no_data)} of {len(summary.panels)} panels "
               f"with data, from {summary.prometheus}")


def _local_prometheus(ctx: typer.Context, name: str) -> str:
    from async_triggers.cluster import prometheus as local
    from ..errors import ClusterError
    server = local.running(local.directory_of(ctx.obj, name))
    if server is None:
        raise ClusterError(f"no Prometheus runs for cluster {name}: start it with "
                           f"`ctl cluster prometheus up --name {name}`")
    return server.url
