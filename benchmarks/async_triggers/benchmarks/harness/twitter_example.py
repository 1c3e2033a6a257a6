"""The Twitter example the benchmarks run on: its schema, its timeline flow as the report has it, and a cluster with
that schema and empty tables (the small benchmarks' setup)."""
from __future__ import annotations

import dataclasses
from typing import Callable

from async_triggers import cluster as cluster_mod, config
from async_triggers.cql_script import run_file
from async_triggers.flow_file import load_flow_file
from async_triggers.flows import FanOut, Flow

TWITTER_SCHEMA = config.REPO_ROOT / "examples" / "twitter" / "schema.cql"
TWITTER_FLOWS = config.REPO_ROOT / "examples" / "twitter" / "flows.py"
REPORT_FLOW = "twitter_timeline"


def report_flows() -> list[Flow]:
    """The example's timeline flow as the report measures it: a tweet reaches the followers its author has when its
    task runs (the fan-out does not follow its table, as the synchronous and external-queue applications do not);
    the example's other flows are not the report's."""
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
