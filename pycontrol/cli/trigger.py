"""`ctl trigger ...`: render, deploy, list, status, wait for and drop flows; their dead letters in `ctl trigger dlq` (dlq.py)."""
from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import typer

from .. import deploy as deploy_mod, render, status as status_mod, validate
from ..cql_schema import parse_cql_file, schema_file_of
from . import dlq as cli_dlq
from .exit_codes import errors_to_exit
from .options import connection_options
from ..cql import connect
from ..flows import load_flow_file

app = typer.Typer(help="Define, deploy and watch flows.", no_args_is_help=True)
app.add_typer(cli_dlq.app, name="dlq")


def _progress(msg: str) -> None:
    typer.echo(msg, err=True)


@app.command("render")
@connection_options
def render_cmd(ctx: typer.Context,
               file: Path = typer.Argument(..., help="A Python flow file defining FLOWS."),
               out: Path = typer.Option(None, "--out", help="Write <flow>.json and deploy.cql into this folder."),
               live: bool = typer.Option(False, "--live", help="Validate against the live schema (else "
                                                               "against the schema file beside the flow file: "
                                                               "<stem>.cql or schema.cql)."),
               replication_factor: int = typer.Option(3, "--rf", help="Replication of the async_triggers keyspace."),
               as_json: bool = typer.Option(False, "--json", help="Print the specifications and the CQL as JSON.")):
    """Print (or write) the plugin configuration and the CQL a deploy would run."""
    with errors_to_exit():
        flows = load_flow_file(file)
        status_columns: set[str] = set()
        if live:
            with connect(ctx.obj) as session:
                specs = deploy_mod.plan(session, flows)
                status_columns = deploy_mod.flow_status_columns(session)
        else:
            specs = validate.compile_all(flows, parse_cql_file(schema_file_of(file)))
        script = render.deploy_script(specs, replication_factor, version=0, flow_status_columns=status_columns)
        if as_json:
            if out:
                _write_rendered(out, specs, script)
            typer.echo(json.dumps({"specs": specs, "cql": script, "out": str(out) if out else None}, indent=2))
        elif out:
            _write_rendered(out, specs, script)
            typer.echo(f"wrote {len(specs)} flow specification(s) and deploy.cql to {out}")
        else:
            for s in specs:
                typer.echo(f"-- specification of flow {s['name']}\n{render.spec_json(s)}\n")
            typer.echo(script)


def _write_rendered(out: Path, specs, script: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for s in specs:
        (out / f"{s['name']}.json").write_text(render.spec_json(s) + "\n")
    (out / "deploy.cql").write_text(script)


@app.command("deploy")
@connection_options
def deploy_cmd(ctx: typer.Context, file: Path = typer.Argument(..., help="A Python flow file defining FLOWS."),
               as_json: bool = typer.Option(False, "--json")):
    """Validate the flows against the live schema, then create what the plugin needs and the triggers."""
    with errors_to_exit():
        flows = load_flow_file(file)
        with connect(ctx.obj) as session:
            result = deploy_mod.deploy(session, flows, progress=_progress)
        if as_json:
            typer.echo(json.dumps({"deployed": result.flows, "version": result.version}))
        else:
            typer.echo(f"deployed {', '.join(result.flows)} (version {result.version})")


@app.command("list")
@connection_options
def list_cmd(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")):
    """The deployed flows."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            deployed = deploy_mod.read_deployed(session)
    rows = [{"name": n, "source": f"{s['source']['keyspace']}.{s['source']['table']}",
             "targets": sorted({f"{t['keyspace']}.{t['table']}" for t in s["targets"]}),
             "handler": s.get("handler"), "events": s["events"], "version": s["_version"]}
            for n, s in sorted(deployed.items())]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no flows deployed")
    for r in rows:
        to = ", ".join(r["targets"]) or f"handler {r['handler']}"
        typer.echo(f"{r['name']:<24} {r['source']} -> {to}  events={','.join(r['events'])}")


def _print_status(statuses) -> None:
    header = f"{'flow':<24} {'node':<16} {'pending':>8} {'active':>6} {'completed':>10} {'failed':>6} " \
             f"{'retried':>7} {'oldest_ms':>9} {'workers':>7} {'spilled':>8} {'discarded':>9} " \
             f"{'recovered':>9} {'resumed':>7} {'backlog':>7} {'fanout_rows':>11}"
    typer.echo(header)
    for s in statuses:
        typer.echo(f"{s.flow:<24} {s.node:<16} {s.pending:>8} {s.active:>6} {s.completed:>10} {s.failed:>6} "
                   f"{s.retried:>7} {s.oldest_pending_ms:>9} {s.workers:>7} {s.spilled:>8} {s.discarded:>9} "
                   f"{s.recovered:>9} {s.resumed:>7} {s.backlog:>7} {s.fanout_rows:>11}")


@app.command("status")
@connection_options
def status_cmd(ctx: typer.Context, flow: list[str] = typer.Argument(None),
               watch: bool = typer.Option(False, "--watch", help="Refresh every 2 s until interrupted."),
               as_json: bool = typer.Option(False, "--json")):
    """Pending, active, completed, failed, retried, spilled, discarded, recovered and resumed tasks, live backup
    entries (backlog), fan-out rows written and the oldest pending age, per flow and node."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            while True:
                statuses = status_mod.read(session, flow or None)
                if as_json:
                    typer.echo(json.dumps([s.as_dict() for s in statuses], indent=2))
                else:
                    if watch:
                        typer.echo(f"--- {dt.datetime.now():%H:%M:%S}")
                    _print_status(statuses)
                if not watch:
                    break
                time.sleep(2)


@app.command("wait")
@connection_options
def wait_cmd(ctx: typer.Context, flow: list[str] = typer.Argument(...),
             timeout: float = typer.Option(600, help="Seconds before giving up."),
             as_json: bool = typer.Option(False, "--json")):
    """Wait until every task of the flows is done: no node has one queued, running or in its backup maps.
    A flow that is not deployed fails at once (exit 2)."""
    with errors_to_exit():
        since = dt.datetime.utcnow()
        with connect(ctx.obj) as session:
            deploy_mod.require_deployed(session, flow)
            final = status_mod.wait_drained(session, flow, since, timeout,
                                            progress=(lambda m: None) if as_json else _progress)
        completed, nodes = sum(s.completed for s in final), len({s.node for s in final})
        if as_json:
            typer.echo(json.dumps({"drained": list(flow), "completed": completed, "nodes": nodes}))
        else:
            typer.echo(f"drained: {completed} tasks completed on {nodes} node(s)")


@app.command("drop")
@connection_options
def drop_cmd(ctx: typer.Context, name: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")):
    """Remove a flow; drop the table's trigger when no other flow uses it."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            deploy_mod.drop(session, name, progress=_progress)
        typer.echo(json.dumps({"dropped": name}) if as_json else f"dropped {name}")
