"""The capture index of a source table (docs/design.md, "Capture"): Cassandra's replica-side hook.

``CREATE CUSTOM INDEX <name> ON ks.t () USING 'org.asynctriggers.CaptureIndex' WITH OPTIONS = {'flows': '<json>'}``
makes every replica of the table capture the tasks of the flows named in its options as it applies a write. The
options are part of the schema, so a node knows them when it replays its commit log at boot. A deploy that changes
the flows of a table creates the index of the new set (its name is a hash of table and options) before it drops the
old one: both capture meanwhile, and the same write gives the same task ids, so nothing is missed or doubled.
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, Mapping

from . import follows
from .spec import FlowSpec, column_of

CLASS = "org.asynctriggers.CaptureIndex"
PREFIX = "async_capture_"


def captured_columns(spec: Mapping | FlowSpec) -> list[str] | None:
    """The non-key source columns a flow's tasks carry: those its targets map and its fan-outs match on. None for a
    flow with a Java handler, which gets every column. A task carries no other value: a column the flow does not use
    only tells, empty, that the write set it (docs/design.md, "Write shapes"). A following fan-out's companion:
    the non-key columns of the fan-out table its target uses."""
    typed = FlowSpec.parse(spec)
    if typed.handler:
        return None
    if typed.follows is not None:
        return follows.captured_columns(typed)
    key = set(typed.source.key)
    used: set[str] = set()
    for target in typed.targets:
        exprs = list(target.columns.values()) + list(target.fanout.match.values() if target.fanout else [])
        for expr in exprs:
            scope, column = column_of(expr)
            if scope == "source" and column not in key:
                used.add(column)
        used.update(c for c in target.lineage_columns if c not in key)
    return sorted(used)


def options_json(specs: Iterable[Mapping | FlowSpec]) -> str:
    """The 'flows' option: each flow on the table with the events it handles, whether it keeps backup entries, and
    the columns its tasks carry."""
    flows = {}
    for s in map(FlowSpec.parse, specs):
        flow = {"events": sorted(s.events), "backup": s.keeps_backup_entries}
        columns = captured_columns(s)
        if columns is not None:
            flow["columns"] = columns
        flows[s.name] = flow
    return json.dumps(flows, sort_keys=True, separators=(",", ":"))


def name(keyspace: str, table: str, options: str) -> str:
    """The index name: one per (table, options), within Cassandra's 48 characters."""
    digest = hashlib.sha1(f"{keyspace}.{table}\n{options}".encode()).hexdigest()[:16]
    return PREFIX + digest


def is_capture_index(options: Mapping[str, str]) -> bool:
    """An index of system_schema.indexes (its options) that is one of ours."""
    return options.get("class_name") == CLASS
