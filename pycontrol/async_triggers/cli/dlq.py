"""`ctl trigger dlq ...`: list, show, retry and purge dead letters."""
from __future__ import annotations

import json

import typer

from .. import dlq
from .exit_codes import errors_to_exit
from .options import acting_on, confirm, connection_options
from ..cql import connect

app = typer.Typer(help="Dead letters: tasks whose retries ran out.", no_args_is_help=True)

IDS = typer.Argument(None)
ALL = typer.Option(False, "--all", help="Every dead letter of the flow.")


@app.command("list")
@connection_options
def list_cmd(ctx: typer.Context, flow: str = typer.Argument(None, help="Only this flow."),
             limit: int = typer.Option(100, help="At most this many."),
             as_json: bool = typer.Option(False, "--json")):
    """Dead letters, newest first per flow."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            letters = dlq.list_letters(session, flow, limit)
    if as_json:
        typer.echo(json.dumps([d.as_dict() for d in letters], indent=2))
        return
    if not letters:
        typer.echo("no dead letters")
    for d in letters:
        when = d.failed_at.strftime("%Y-%m-%d %H:%M:%S") if d.failed_at else "?"
        typer.echo(f"{d.flow:<20} {d.id}  {when}  {d.op:<6} attempts={d.attempts} node={d.node}  {d.error[:80]}")


@app.command("show")
@connection_options
def show_cmd(ctx: typer.Context, flow: str = typer.Argument(...), letter_id: str = typer.Argument(...),
             as_json: bool = typer.Option(False, "--json")):
    """One dead letter, whole: its flow, node, operation, write timestamp, source key, attempts and error."""
    with errors_to_exit():
        with connect(ctx.obj) as session:
            letter = dlq.show(session, flow, letter_id)
    if as_json:
        typer.echo(json.dumps(letter.as_dict(), indent=2))
        return
    for key, value in letter.as_dict().items():
        typer.echo(f"{key + ':':<11} {value}")


@app.command("retry")
@connection_options
def retry_cmd(ctx: typer.Context, flow: str = typer.Argument(...), ids: list[str] = IDS, everything: bool = ALL,
              as_json: bool = typer.Option(False, "--json")):
    """Queue the tasks again on the nodes that gave up on them, or on a live node when that one is not up (a letter
    goes once its task is queued)."""
    with errors_to_exit():
        with acting_on(ctx.obj, f"dlq retry {flow}") as session:
            sent = dlq.retry(session, flow, ids or (), everything)
    moved = [(d, node) for d, node in sent if node != d.node]
    if as_json:
        typer.echo(json.dumps({"flow": flow, "retried": [d.id for d, _ in sent],
                               "sent_elsewhere": [{"id": d.id, "gave_up_on": d.node, "sent_to": node}
                                                  for d, node in moved]}, default=str))
    else:
        typer.echo(f"asked to retry {len(sent)} dead letter(s) of {flow}")
        for gone in sorted({d.node for d, _ in moved}):
            to = sorted({node for d, node in moved if d.node == gone})
            typer.echo(f"  {sum(1 for d, _ in moved if d.node == gone)} of them gave up on {gone}, which is not up: "
                       f"sent to {', '.join(to)}")


@app.command("purge")
@connection_options
def purge_cmd(ctx: typer.Context, flow: str = typer.Argument(...), ids: list[str] = IDS, everything: bool = ALL,
              yes: bool = typer.Option(False, "--yes", help="Do not ask (scripts)."),
              as_json: bool = typer.Option(False, "--json")):
    """Delete dead letters (their tasks are then never retried; asks first)."""
    with errors_to_exit():
        with acting_on(ctx.obj, f"dlq purge {flow}") as session:
            held = dlq.count(session, flow) if everything else 0
            if held:
                confirm(f"Delete all {held} dead letter(s) of {flow}? Their tasks will never run.", yes)
            elif ids:
                confirm(f"Delete {len(ids)} dead letter(s) of {flow}? Their tasks will never run.", yes)
            n = dlq.purge(session, flow, ids or (), everything)
    typer.echo(json.dumps({"flow": flow, "purged": n}) if as_json else f"purged {n} dead letter(s) of {flow}")
