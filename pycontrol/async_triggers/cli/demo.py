"""`ctl demo`: the Twitter example end to end (async_triggers.examples.twitter.demo)."""
from __future__ import annotations

import dataclasses
import json
import time

import typer

from .exit_codes import errors_to_exit


def demo(ctx: typer.Context,
         nodes: int = typer.Option(2, help="Cassandra nodes."),
         users: int = typer.Option(20_000, help="Users in the follower graph."),
         tweets: int = typer.Option(1_000, help="Tweets to write."),
         follows: int = typer.Option(300, help="Follows made between the tweets (one in ten of the celebrity)."),
         unfollows: int = typer.Option(100, help="Unfollows made between the tweets."),
         deletes: int = typer.Option(50, help="Tweets deleted after the last is written."),
         min_celebrity: int = typer.Option(10_000, help="Followers of the most-followed user, at least."),
         master: str = typer.Option("local[2]", help="Spark master for loading and verifying."),
         name: str = typer.Option("demo", help="Cluster name."),
         as_json: bool = typer.Option(False, "--json", help="The result as one JSON object (progress on stderr).")):
    """Start a cluster, load a follower graph, deploy and backfill the Twitter example, write tweets while users follow
    and unfollow, delete some, verify every timeline row and tweet count."""
    from async_triggers.examples.twitter import demo as demo_mod
    started = time.monotonic()
    with errors_to_exit():
        settings = dataclasses.replace(ctx.obj, cluster_name=name)
        report = demo_mod.run(settings, nodes=nodes, users=users, tweets=tweets, new_follows=follows,
                              unfollows=unfollows, deletes=deletes, min_celebrity=min_celebrity, master=master,
                              progress=lambda m: typer.echo(f"-- {m}", err=True))
    if as_json:
        typer.echo(json.dumps({**dataclasses.asdict(report), "ok": report.ok, "cluster": name,
                               "seconds": round(time.monotonic() - started, 1)}))
    else:
        typer.echo("\n".join(report.lines()))
    typer.echo(f"demo finished in {time.monotonic() - started:.0f} s; the cluster '{name}' is still up "
               f"(ctl cluster status --name {name}; ctl cluster down --name {name})", err=as_json)
    if not report.ok:      # anything missing, unexpected or wrong: ctl verify's verdict
        raise typer.Exit(1)
