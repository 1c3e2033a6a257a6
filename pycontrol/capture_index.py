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

CLASS = "org.asynctriggers.CaptureIndex"
PREFIX = "async_capture_"


def options_json(specs: Iterable[Mapping]) -> str:
    """The 'flows' option: each flow on the table with the events it handles and whether it keeps backup entries."""
    flows = {s["name"]: {"events": sorted(s["events"]), "backup": bool(s.get("backup", {}).get("enabled", True))}
             for s in specs}
    return json.dumps(flows, sort_keys=True, separators=(",", ":"))


def name(keyspace: str, table: str, options: str) -> str:
    """The index name: one per (table, options), within Cassandra's 48 characters."""
    digest = hashlib.sha1(f"{keyspace}.{table}\n{options}".encode()).hexdigest()[:16]
    return PREFIX + digest


def is_capture_index(options: Mapping[str, str]) -> bool:
    """An index of system_schema.indexes (its options) that is one of ours."""
    return options.get("class_name") == CLASS
