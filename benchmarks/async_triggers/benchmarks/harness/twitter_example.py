"""The Twitter tables the benchmarks run on, as the report describes them (section 6), and its timeline flow; the
example's schema and flows (examples/twitter), which the backup map's and the join's experiments measure; a cluster
with the example's schema and empty tables (the small benchmarks' setup).

The report's tables differ from the example's in one way that decides what a task costs: "the tweets table stores
all tweets a user has published", so its rows are keyed by their author, and a tweet's author cannot change. The
flow's fan-out is matched on a key column and its targets mirror each write's cells (docs/design.md, "Write
shapes"): a task reads its author's followers and writes their rows. The example keys a tweet by its id alone, so a
write may change its author and move every row derived from it: the flow keeps lineage, a version protocol of about
twice the replica operations per tweet. A timeline row carries its source row's whole key (user, tweet, author), as
the deploy requires of a target, and the time the tweet was made (a target that leaves out a source column is
derived whole)."""
from __future__ import annotations

import dataclasses
from typing import Callable

from async_triggers import cluster as cluster_mod, config
from async_triggers.benchmarks.apps.cassandra import KEYSPACE
from async_triggers.cql_script import run_file
from async_triggers.flow_file import load_flow_file
from async_triggers.flows import FanOut, Flow, Write, row, source

TWITTER_SCHEMA = config.REPO_ROOT / "examples" / "twitter" / "schema.cql"
TWITTER_FLOWS = config.REPO_ROOT / "examples" / "twitter" / "flows.py"
REPORT_FLOW = "twitter_timeline"
REPORT_TABLES = {   # each table's columns and options, after CREATE TABLE <keyspace>.<name>
    "users": "(user_id bigint PRIMARY KEY, name text)",
    "followers": "(user_id bigint, follower_id bigint, PRIMARY KEY (user_id, follower_id))",
    "tweets": "(author_id bigint, tweet_id timeuuid, body text, created_at timestamp, PRIMARY KEY (author_id, tweet_id))",
    "timeline": "(user_id bigint, tweet_id timeuuid, author_id bigint, body text, created_at timestamp, "
                "PRIMARY KEY (user_id, tweet_id, author_id)) WITH CLUSTERING ORDER BY (tweet_id DESC, author_id ASC)",
}


def report_table(table: str, keyspace: str = KEYSPACE, suffix: str = "") -> str:
    """The CREATE TABLE IF NOT EXISTS statement of the report's ``table``, in ``keyspace``, its name + ``suffix``."""
    return f"CREATE TABLE IF NOT EXISTS {keyspace}.{table}{suffix} {REPORT_TABLES[table]}"


def report_tables(session, replication: int, emptied=("tweets", "timeline", "followers", "users")) -> None:
    """The report's tables in :data:`KEYSPACE` at ``replication`` (SimpleStrategy), and ``emptied`` of them emptied."""
    strategy = f"{{'class': 'SimpleStrategy', 'replication_factor': {int(replication)}}}"
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = {strategy}")
    session.execute(f"ALTER KEYSPACE {KEYSPACE} WITH replication = {strategy}")
    for table in REPORT_TABLES:
        session.execute(report_table(table))
    for table in emptied:
        session.execute(f"TRUNCATE {KEYSPACE}.{table}")


def report_flow(name: str, keyspace: str = KEYSPACE, suffix: str = "", **options) -> Flow:
    """The report's flow on the report's tweets and timeline in ``keyspace`` (their names + ``suffix``): a tweet to
    its author's timeline and every follower's (the followers its author has when its task runs, as the synchronous
    and external-queue applications read them). ``options``: the Flow's queue, retries, consistency, backup."""
    tweets, timeline = f"{keyspace}.tweets{suffix}", f"{keyspace}.timeline{suffix}"
    columns = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body,
                   created_at=source.created_at)
    return Flow(name=name, source=tweets, events=("insert",), page_size=1000,
                steps=[Write(timeline, user_id=source.author_id, **columns),
                       FanOut(f"{keyspace}.followers", match={"user_id": source.author_id})
                       .write(timeline, user_id=row.follower_id, **columns)], **options)


def example_timeline() -> list[Flow]:
    """The example's timeline flow on the example's schema, its fan-out not following its table (as the
    synchronous and external-queue applications do not); the example's other flows are left out."""
    timeline = next(f for f in load_flow_file(TWITTER_FLOWS) if f.name == REPORT_FLOW)
    steps = [dataclasses.replace(s, follow=False) if isinstance(s, FanOut) else s for s in timeline.steps]
    return [dataclasses.replace(timeline, steps=steps)]


def cluster_settings(name: str, nodes: int, progress: Callable[[str], None],
                     config_options: dict[str, object] | None = None) -> config.Settings:
    """The cluster ``name`` with ``nodes`` nodes, up (made if missing, with ``config_options`` in its
    cassandra.yaml); settings that connect to it."""
    settings = config.load(cluster_name=name)
    info = cluster_mod.up(settings, nodes=nodes, name=name, progress=progress, config_options=config_options)
    return settings.with_hosts(info.contact_points)


def empty_twitter(session, tables=("tweets", "timeline", "followers")) -> None:
    """The Twitter schema, and ``tables`` of it emptied."""
    run_file(session, TWITTER_SCHEMA)
    for table in tables:
        session.execute(f"TRUNCATE twitter.{table}")
