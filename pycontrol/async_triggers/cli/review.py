"""`ctl trigger show`, `ctl trigger history` and `ctl trigger deploy --dry-run`: what is deployed, what was, and what
a deploy would change (async_triggers.review)."""
from __future__ import annotations

import json
from typing import Mapping, Sequence

import typer

from .. import aggregates, deploy as deploy_mod, review, status as status_mod
from ..cql import connect
from ..flows import Flow
from ..spec import FlowSpec
from .exit_codes import errors_to_exit
from .options import connection_options


def dry_run(ctx: typer.Context, flows: Sequence[Flow], replication: Mapping[str, int] | None, check_plugin: bool,
            as_json: bool) -> None:
    """Everything a deploy checks, then its report instead of its statements; the cluster is not changed."""
    with connect(ctx.obj) as session:
        plan = deploy_mod.prepare(session, flows, replication, check_plugin)
        metadata = session.cluster.metadata
        target = review.target(session)
        if as_json:
            changes = {FlowSpec.parse(s).name: review.flow_change(plan.deployed, s) for s in plan.specs}
            typer.echo(json.dumps({
                "cluster": target,
                "flows": [{"name": name, "state": state, "diff": diff, "held": name in plan.held}
                          for name, (state, diff) in changes.items()],
                "dropped_companions": plan.companions,
                "statements": [{"effect": review.effect(metadata, plan.deployed, st), "cql": st.cql}
                               for st in plan.statements],
                "notes": plan.notes}, indent=2))
            return
        lines = review.dry_run_lines(metadata, plan.deployed, plan.specs, plan.statements, plan.companions,
                                     plan.held)
    typer.echo(f"dry run on {target}: nothing was changed")
    for note in plan.notes:
        typer.echo(note)
    for line in lines:
        typer.echo(line)


@connection_options
def show(ctx: typer.Context, flow: str = typer.Argument(..., help="A deployed flow (or, with --revision, one that "
                                                                   "was)."),
         revision: int = typer.Option(None, "--revision", help="A revision from its history (ctl trigger history)."),
         diff: int = typer.Option(None, "--diff", help="Print the specification's changes since this revision."),
         as_json: bool = typer.Option(False, "--json")):
    """A flow as deployed: source and targets, revision, when and by whom, paused or running, its capture index,
    its companion, and its specification as the plugin reads it."""
    from ..render import spec_json
    with errors_to_exit():
        with connect(ctx.obj) as session:
            if revision is not None:
                past = review.revision_of(session, flow, revision)
                if past.spec is None:
                    typer.echo(past.line())
                    return
                spec, paused, current = FlowSpec.parse(past.spec), None, past
            else:
                deployed = deploy_mod.require_deployed(session, [flow])
                spec = deployed[flow]
                paused = flow in status_mod.paused_flows(session)
                past = review.history(session, flow)
                current = past[0] if past and past[0].version == spec.version else None
                companion = deploy_mod.companion_of(deployed, flow)
                if companion is not None:
                    companion = f"{companion} (follows {deployed[companion].source.qualified})"
            since = review.revision_of(session, flow, diff) if diff is not None else None
            indexes = deploy_mod.capture_indexes_of(session, [(spec.source.keyspace, spec.source.table)])
    source, handler = spec.source.qualified, spec.handler
    spec = dict(spec.doc)
    shown = f"revision {current.revision}" if current is not None else "deployed"
    changes = review.spec_diff(since.spec, spec, flow, (f"revision {since.revision}", shown)) \
        if since is not None and since.spec is not None else []
    facts = {"name": flow, "source": source, "targets": sorted(_targets(spec)),
             "revision": current.revision if current else None,
             "deployed_at": current.at.strftime("%Y-%m-%d %H:%M:%S UTC") if current else None,
             "by": current.by if current else None, "via": current.via if current else None,
             "paused": paused, "capture_indexes": [i for ix in indexes.values() for i in ix]}
    if revision is None:
        facts["companion"] = companion
    if as_json:
        typer.echo(json.dumps({**facts, "spec": spec, "diff": changes}, indent=2))
        return
    typer.echo(f"flow {flow}: {source} -> {', '.join(facts['targets']) or 'handler ' + str(handler)}")
    if current is not None:
        typer.echo(f"  revision {current.revision}, deployed {facts['deployed_at']} by {current.by} on {current.via}")
    else:
        typer.echo("  deployed before this cluster kept a deploy history")
    if paused is not None:
        typer.echo(f"  state: {'paused' if paused else 'running'}")
    if facts["capture_indexes"]:
        typer.echo(f"  captured by: {', '.join(facts['capture_indexes'])} on {source}")
    if facts.get("companion"):
        typer.echo(f"  companion: {facts['companion']}")
    if diff is not None:
        typer.echo(f"  changes since revision {diff}:" + ("" if changes else " none"))
        for line in changes:
            typer.echo("    " + line)
    typer.echo(spec_json(spec))


def _targets(spec: Mapping) -> set[str]:
    return set(aggregates.written_tables(spec))


@connection_options
def history(ctx: typer.Context, flows: list[str] = typer.Argument(None, help="Flows (default: every flow with a "
                                                                            "history)."),
            as_json: bool = typer.Option(False, "--json")):
    """Each deploy and drop of the flows, newest first: revision, when, by whom, through which cluster and contact
    point (`ctl trigger show FLOW --revision N` prints a revision's specification)."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            revisions = [r for f in flows for r in review.history(session, f)] if flows else review.history(session)
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in revisions], indent=2))
        return
    if not revisions:
        typer.echo("no deploy recorded" + (f" for {', '.join(flows)}" if flows else ""))
    for r in revisions:
        typer.echo(r.line())
