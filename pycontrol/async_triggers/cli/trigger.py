"""`ctl trigger ...`: render, deploy, list, status, pause, resume, wait for and drop flows; their dead letters in
`ctl trigger dlq` (dlq.py), their backfill in `ctl trigger backfill` (backfill.py), their metrics drawn by
`ctl trigger dashboard` (dashboard.py), `show`, `history` and `deploy --dry-run` in review.py."""
from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Sequence

import typer

from .. import aggregates, deploy as deploy_mod, dlq, follows, keyspace, pause as pause_mod, render, \
    replication as replication_mod, review, status as status_mod, validate
from ..cql_schema import parse_cql_file, schema_file_of
from . import backfill as cli_backfill, dashboard as cli_dashboard, dlq as cli_dlq, review as cli_review
from .exit_codes import errors_to_exit
from .options import acting_on, confirm, connection_options
from ..cql import connect
from ..flow_file import load_flow_file

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
               replication: str = typer.Option("3", "--replication", "--rf",
                                               help="The async_triggers keyspace's replication (NetworkTopologyStrategy): "
                                                    "N in every data center, or dc1:3,dc2:3."),
               as_json: bool = typer.Option(False, "--json", help="Print the specifications and the CQL as JSON.")):
    """Print (or write) the plugin configuration and the CQL a deploy would run."""
    with errors_to_exit():
        flows = load_flow_file(file)
        factors = replication_mod.parse(replication)
        status_columns: set[str] = set()
        flows_columns: set[str] = set()
        if live:
            with connect(ctx.obj) as session:
                specs = deploy_mod.plan(session, flows)
                status_columns = deploy_mod.flow_status_columns(session)
                flows_columns = deploy_mod.table_columns(session, keyspace.FLOWS)
        else:
            specs = validate.compile_all(flows, parse_cql_file(schema_file_of(file)))
        script = render.deploy_script(specs, factors, version=0, flow_status_columns=status_columns,
                                      flows_columns=flows_columns)
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
               replication: str = typer.Option(None, "--replication",
                                               help="The async_triggers keyspace's replication if deploy creates it: "
                                                    "dc1:3,dc2:3, or N in every data center (default: the per-DC "
                                                    "replication of the flows' source keyspaces)."),
               skip_plugin_check: bool = typer.Option(False, "--skip-plugin-check",
                                                      help="Deploy even if a node does not answer that it runs the "
                                                           "plugin (its replicas would not record tasks)."),
               as_json: bool = typer.Option(False, "--json"),
               backfill: bool = typer.Option(False, "--backfill", help="Then backfill each deployed flow "
                                                                       "(ctl trigger backfill) with Spark."),
               master: str = typer.Option("local[*]", help="Spark master of the backfill."),
               dry_run: bool = typer.Option(False, "--dry-run", help="Change nothing: print each flow's specification "
                                                                     "against the deployed one and the CQL the deploy "
                                                                     "would run, each statement marked with what it "
                                                                     "would do on the cluster as it is.")):
    """Check that every node runs the plugin, validate the flows against the live schema, then create what the
    plugin needs, the capture and the triggers, and record each flow's revision (ctl trigger history); with
    --backfill, then apply them to the rows already there."""
    with errors_to_exit():
        flows = load_flow_file(file)
        factors = replication_mod.parse(replication) if replication else None
        if dry_run:
            cli_review.dry_run(ctx, flows, factors, not skip_plugin_check, as_json)
            return
        if backfill:
            cli_backfill.refuse_handlers(flows)   # before the cluster changes
        with connect(ctx.obj) as session:   # deploy() names the cluster once the flows are valid, before it acts
            result = deploy_mod.deploy(session, flows, progress=_progress, replication=factors,
                                       check_plugin=not skip_plugin_check)
        if as_json:
            typer.echo(json.dumps({"deployed": result.flows, "version": result.version,
                                   "revisions": result.revisions}))
        else:
            revisions = ", ".join(f"{n} revision {r}" if r else n for n, r in result.revisions.items())
            typer.echo(f"deployed {revisions} ({review.describe_version(result.version)})")
    if backfill:
        for name in [f.name for f in flows]:   # a following fan-out's companion has no targets to backfill
            cli_backfill.run(ctx, name, master)


app.command("backfill")(cli_backfill.backfill)
app.command("show")(cli_review.show)
app.command("history")(cli_review.history)
app.command("dashboard")(cli_dashboard.dashboard)


@app.command("list")
@connection_options
def list_cmd(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")):
    """The deployed flows."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            deployed = deploy_mod.read_deployed(session)
            paused = status_mod.paused_flows(session)
    rows = [{"name": n, "source": s.source.qualified, "targets": sorted(aggregates.written_tables(s)),
             "handler": s.handler, "events": list(s.events), "version": s.version,
             "deployed_at": review.describe_version(s.version), "paused": n in paused}
            for n, s in sorted(deployed.items())]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no flows deployed")
    for r in rows:
        to = ", ".join(r["targets"]) or f"handler {r['handler']}"
        typer.echo(f"{r['name']:<24} {r['source']} -> {to}  events={','.join(r['events'])}  "
                   f"deployed {r['deployed_at']}" + ("  PAUSED" if r["paused"] else ""))


def _status_sample(session, names: Sequence[str], previous: dict | None,
                   summary: bool = True) -> tuple[list, list, dict]:
    """One read of the flows' reports: (the summary's lines, empty unless ``summary`` (it counts each flow's dead
    letters: a read per flow), the per-node rows, the sample the next rate starts from)."""
    from .. import status_view
    deployed = deploy_mod.require_deployed(session, names)
    flows = sorted(names or deployed)
    now = dt.datetime.utcnow()
    statuses, hosts = status_mod.read(session, flows), status_view.hosts_of(session)
    lines = status_view.summarize(flows, statuses, hosts, {f: dlq.count(session, f) for f in flows}, now,
                                  previous, {f: deployed[f].version for f in flows if deployed[f].version}
                                  ) if summary else []
    return (lines, status_view.node_rows(flows, statuses, hosts, now),
            {f: (now, status_view.completed_by_node(f, statuses, now)) for f in flows})


def _status_out(items: list, nodes: bool, as_json: bool) -> list[str]:
    from .. import status_view
    if as_json:
        return [json.dumps([i if nodes else i.as_dict() for i in items])]
    return status_view.node_text(items) if nodes else status_view.summary_text(items)


@app.command("status")
@connection_options
def status_cmd(ctx: typer.Context, flow: list[str] = typer.Argument(None),
               nodes: bool = typer.Option(False, "--nodes", help="A line per flow and node, with its data center "
                                                                 "and rack; a node that stopped reporting says so."),
               watch: bool = typer.Option(False, "--watch", help="Refresh every 2 s until interrupted (with "
                                                                 "--json: one JSON line per refresh)."),
               as_json: bool = typer.Option(False, "--json")):
    """A line per flow: state, pending (queued and running), backlog (live backup entries), lag (the oldest
    queued task's age), completions per second (with --watch), dead letters, and nodes reporting out of those the
    ring has, per data center. A flow not deployed is an error (exit 2)."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            previous = None
            while True:
                lines, rows, previous = _status_sample(session, flow or [], previous, summary=not nodes)
                items = rows if nodes else lines
                if watch and not as_json:
                    typer.echo(f"--- {dt.datetime.now():%H:%M:%S}")
                for line in _status_out(items, nodes, as_json):
                    typer.echo(line)
                if not watch:
                    break
                time.sleep(2)


@app.command("top")
@connection_options
def top_cmd(ctx: typer.Context, flow: list[str] = typer.Argument(None),
            interval: float = typer.Option(2.0, "--interval", help="Seconds between refreshes."),
            iterations: int = typer.Option(0, "--iterations", help="Stop after this many refreshes (0: until "
                                                                    "interrupted)."),
            as_json: bool = typer.Option(False, "--json")):
    """A live view, like `nodetool tpstats` refreshed: the flows with their completions per second, then every
    node's share. The screen is redrawn on a terminal; elsewhere each refresh follows the last."""
    import sys
    with errors_to_exit():
        with connect(ctx.obj) as session:
            previous, done = None, 0
            while True:
                lines, rows, previous = _status_sample(session, flow or [], previous)
                if as_json:
                    out = [json.dumps({"flows": [x.as_dict() for x in lines], "nodes": rows})]
                else:
                    out = [f"ctl trigger top  {dt.datetime.now():%H:%M:%S}  every {interval:g}s", ""]
                    out += _status_out(lines, False, False) + [""] + _status_out(rows, True, False)
                    if sys.stdout.isatty():
                        typer.echo("\x1b[2J\x1b[H", nl=False)
                for line in out:
                    typer.echo(line)
                done += 1
                if iterations and done >= iterations:
                    break
                time.sleep(interval)


@app.command("wait")
@connection_options
def wait_cmd(ctx: typer.Context, flow: list[str] = typer.Argument(...),
             timeout: float = typer.Option(600, help="Seconds before giving up."),
             as_json: bool = typer.Option(False, "--json")):
    """Wait until every task of the flows is done: no node has one queued, running or in its backup maps.
    A flow that is not deployed fails at once (exit 2), a paused one too (exit 1): its tasks wait until it is resumed."""
    with errors_to_exit():
        since = dt.datetime.utcnow()
        with connect(ctx.obj) as session:
            deploy_mod.require_deployed(session, flow)
            # a flow whose fan-out follows its table is done when its companion (the follows) is too
            flow = list(flow) + [c for c in follows.companions_of(deploy_mod.read_deployed(session), flow) if c not in flow]
            final = status_mod.wait_drained(session, flow, since, timeout,
                                            progress=(lambda m: None) if as_json else _progress)
        completed, nodes = sum(s.completed for s in final), len({s.node for s in final})
        if as_json:
            typer.echo(json.dumps({"drained": list(flow), "completed": completed, "nodes": nodes}))
        else:
            typer.echo(f"drained: {completed} tasks completed on {nodes} node(s)")


def _set_paused(ctx: typer.Context, name: str, paused: bool, timeout: float, as_json: bool) -> None:
    with errors_to_exit():
        with acting_on(ctx.obj, f"{'pause' if paused else 'resume'} {name}") as session:
            result = pause_mod.set_paused(session, name, paused, timeout=timeout, progress=_progress)
            # the follows of a flow whose fan-out follows its table pause and resume with it
            for companion in follows.companions_of(deploy_mod.read_deployed(session), [name]):
                pause_mod.set_paused(session, companion, paused, timeout=timeout, progress=_progress)
    word = "paused" if paused else "resumed"
    if as_json:
        typer.echo(json.dumps({"flow": result.flow, "state": "paused" if paused else "running", "nodes": result.nodes}))
    elif result.nodes:
        typer.echo(f"{word} {name} on {len(result.nodes)} node(s): {', '.join(result.nodes)}")
    else:
        typer.echo(f"{word} {name} in async_triggers.flows (nodes apply it within 2 s)")


_WAIT_HELP = "Seconds to wait for every live node to report the new state (0: do not wait)."


@app.command("pause")
@connection_options
def pause_cmd(ctx: typer.Context, name: str = typer.Argument(..., help="A deployed flow."),
              timeout: float = typer.Option(30, "--timeout", help=_WAIT_HELP),
              as_json: bool = typer.Option(False, "--json")):
    """Stop running the flow's tasks on every node; they are still captured and wait in the backup maps (durable:
    a node that restarts stays paused; a redeploy keeps it paused)."""
    _set_paused(ctx, name, True, timeout, as_json)


@app.command("resume")
@connection_options
def resume_cmd(ctx: typer.Context, name: str = typer.Argument(..., help="A paused flow."),
               timeout: float = typer.Option(30, "--timeout", help=_WAIT_HELP),
               as_json: bool = typer.Option(False, "--json")):
    """Run the flow again: each node queues the tasks that waited in its backup maps (`ctl trigger wait` then waits
    for them)."""
    _set_paused(ctx, name, False, timeout, as_json)


@app.command("drop")
@connection_options
def drop_cmd(ctx: typer.Context, name: str = typer.Argument(...),
             drain: bool = typer.Option(False, "--drain", help="Wait until the flow's tasks are done, then drop it."),
             discard_pending: bool = typer.Option(False, "--discard-pending",
                                                  help="Drop it with its unfinished tasks and dead letters (says how "
                                                       "many; asks first)."),
             yes: bool = typer.Option(False, "--yes", help="Do not ask (scripts)."),
             timeout: float = typer.Option(600, "--timeout", help="Seconds --drain waits."),
             as_json: bool = typer.Option(False, "--json")):
    """Remove a flow; drop the table's trigger and backup map when no other flow uses it. Refused while the flow
    still has unfinished tasks or dead letters (they would go with its backup map), unless --drain or
    --discard-pending. A flow with a following fan-out goes with its companion flow (<flow>_follows), under the
    same rule; the companion alone is refused."""
    from .. import drop_guard
    with errors_to_exit():
        with acting_on(ctx.obj, f"drop {name}") as session:
            deployed = deploy_mod.require_deployed(session, [name])
            deploy_mod.refuse_companion(deployed, name)
            companion = deploy_mod.companion_of(deployed, name)
            held = {}
            for flow in [name] + ([companion] if companion else []):
                held[flow] = drop_guard.read_holdings(session, flow)
                if not held[flow].empty and drain and (held[flow].tasks or held[flow].uncounted):
                    held[flow] = drop_guard.drain_then_check(session, flow, timeout, progress=_progress)
            pending = [h for h in held.values() if not h.empty]
            what = "; ".join(h.describe() if h.flow == name else f"(its companion '{h.flow}') {h.describe()}"
                             for h in pending)
            if pending:
                if not discard_pending:
                    raise drop_guard.refusal(pending[0])
                confirm(f"Drop flow '{name}' and discard {what}?", yes)
            deploy_mod.drop(session, name, progress=_progress)
            for h in pending:   # after the drop: a drop that fails keeps its letters
                if h.dead_letters:
                    dlq.purge(session, h.flow, everything=True)
        out = {"dropped": name, "discarded": held[name].as_dict() if not held[name].empty else None}
        if companion:
            out["companion"] = {"dropped": companion,
                                "discarded": held[companion].as_dict() if not held[companion].empty else None}
        if as_json:
            typer.echo(json.dumps(out))
        else:
            typer.echo(f"dropped {name}" + (f" and its companion {companion}" if companion else "")
                       + (f" (discarded {what})" if pending else ""))
