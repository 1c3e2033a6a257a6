"""The Twitter example the benchmarks run on: its schema and flow files, and a cluster with that schema and empty
tables (the small benchmarks' setup)."""
from __future__ import annotations

from typing import Callable

from async_triggers import cluster as cluster_mod, config
from async_triggers.cql_script import run_file

TWITTER_SCHEMA = config.REPO_ROOT / "examples" / "twitter" / "schema.cql"
TWITTER_FLOWS = config.REPO_ROOT / "examples" / "twitter" / "flows.py"


def cluster_settings(name: str, nodes: int, progress: Callable[[str], None]) -> config.Settings:
    """The cluster ``name`` with ``nodes`` nodes, up (made if missing); settings that connect to it."""
    settings = config.load(cluster_name=name)
    info = cluster_mod.up(settings, nodes=nodes, name=name, progress=progress)
    return settings.with_hosts(info.contact_points)


def empty_twitter(session, tables=("tweets", "timeline", "followers")) -> None:
    """The Twitter schema, and ``tables`` of it emptied."""
    run_file(session, TWITTER_SCHEMA)
    for table in tables:
        session.execute(f"TRUNCATE twitter.{table}")
