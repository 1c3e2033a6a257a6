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

CLASS = "org.asynctriggers.CaptureIndex"
PREFIX = "async_capture_"


def captured_columns(spec: Mapping) -> list[str] | None:
    """The non-key source columns a flow's tasks carry: those its targets map and its fan-outs match on. None for a
    flow with a Java handler, which gets every column. A task carries no other value: a column the flow does not use
    only tells, empty, that the write set it (docs/design.md, "Write shapes"). A following fan-out's companion:
    the non-key columns of the fan-out table its target uses."""
    if spec.get("handler"):
        return None
    if spec.get("follows"):
        return follows.captured_columns(spec)
    source = spec["source"]
    key = set(source["partition_key"]) | set(source.get("clustering") or [])
    used: set[str] = set()
    for target in spec.get("targets") or []:
        exprs = list(target["columns"].values()) + list(((target.get("fanout") or {}).get("match") or {}).values())
        for expr in exprs:
            scope, _, column = str(expr).partition(".")
            if scope == "source" and column not in key:
                used.add(column)
        used.update(c for c in target.get("lineage_columns") or [] if c not in key)
    return sorted(used)


def options_json(specs: Iterable[Mapping]) -> str:
    """The 'flows' option: each flow on the table with the events it handles, whether it keeps backup entries, and
    the columns its tasks carry."""
    flows = {}
    for s in specs:
        flow = {"events": sorted(s["events"]), "backup": bool(s.get("backup", {}).get("enabled", True))}
        columns = captured_columns(s)
        if columns is not None:
            flow["columns"] = columns
        flows[s["name"]] = flow
    return json.dumps(flows, sort_keys=True, separators=(",", ":"))


def name(keyspace: str, table: str, options: str) -> str:
    """The index name: one per (table, options), within Cassandra's 48 characters."""
    digest = hashlib.sha1(f"{keyspace}.{table}\n{options}".encode()).hexdigest()[:16]
    return PREFIX + digest


def is_capture_index(options: Mapping[str, str]) -> bool:
    """An index of system_schema.indexes (its options) that is one of ours."""
    return options.get("class_name") == CLASS
