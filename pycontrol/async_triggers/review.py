"""Deploys a user can review: what a deploy would change (``ctl trigger deploy --dry-run``), what is deployed
(``ctl trigger show``) and what was deployed before (``ctl trigger history``).

A plan's statements are all idempotent (``IF NOT EXISTS``, an upsert of the flow's row): each is marked with what it
would do on the cluster as it is now — ``+`` creates or changes something, ``=`` finds it there already — read from
the driver's schema metadata and the deployed specifications. The history is a row per deploy and drop of a flow
in ``async_triggers.deploys``: its revision (1, 2, ...), when, by whom, through which contact point, and the
specification it deployed, so that ``show --revision N`` and a diff of two revisions need nothing but the cluster.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import getpass
import json
import re
import socket
from typing import Mapping, Sequence

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from . import keyspace, render
from .errors import ConfigError
from .spec import FlowSpec

CREATED, PRESENT, CHANGED = "+", "=", "~"

_CREATE_KEYSPACE = re.compile(r'CREATE KEYSPACE IF NOT EXISTS (?P<ks>"(?:[^"]|"")+"|\w+)', re.I)
_CREATE_TABLE = re.compile(r'CREATE TABLE IF NOT EXISTS (?P<ks>"(?:[^"]|"")+"|\w+)\.(?P<t>"(?:[^"]|"")+"|\w+)', re.I)
_ALTER_ADD = re.compile(r'ALTER TABLE (?P<ks>"(?:[^"]|"")+"|\w+)\.(?P<t>"(?:[^"]|"")+"|\w+) ADD', re.I)
_CREATE_INDEX = re.compile(r'CREATE CUSTOM INDEX IF NOT EXISTS (?P<i>"(?:[^"]|"")+"|\w+) ON '
                           r'(?P<ks>"(?:[^"]|"")+"|\w+)\.(?P<t>"(?:[^"]|"")+"|\w+)', re.I)
_DROP_INDEX = re.compile(r'DROP INDEX IF EXISTS (?P<ks>"(?:[^"]|"")+"|\w+)\.(?P<i>"(?:[^"]|"")+"|\w+)', re.I)
_CREATE_TRIGGER = re.compile(r'CREATE TRIGGER IF NOT EXISTS (?P<i>"(?:[^"]|"")+"|\w+) ON '
                             r'(?P<ks>"(?:[^"]|"")+"|\w+)\.(?P<t>"(?:[^"]|"")+"|\w+)', re.I)
_DROP_TABLE = re.compile(r'DROP TABLE IF EXISTS (?P<ks>"(?:[^"]|"")+"|\w+)\.(?P<t>"(?:[^"]|"")+"|\w+)', re.I)
_INSERT_FLOW = re.compile(r'INSERT INTO \S+\."flows"', re.I)


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _table(metadata, ks: str, table: str):
    keyspace_meta = metadata.keyspaces.get(_unquote(ks))
    return keyspace_meta.tables.get(_unquote(table)) if keyspace_meta is not None else None


def effect(metadata, deployed: Mapping[str, dict], statement: render.Statement) -> str:
    """What ``statement`` would do on the cluster whose schema is ``metadata``, with ``deployed`` the flows deployed
    now: CREATED (it makes or drops something), CHANGED (a flow's new specification), PRESENT (a no-op)."""
    cql = statement.cql
    if m := _CREATE_KEYSPACE.search(cql):
        return PRESENT if _unquote(m["ks"]) in metadata.keyspaces else CREATED
    if m := _CREATE_TABLE.search(cql):
        return PRESENT if _table(metadata, m["ks"], m["t"]) is not None else CREATED
    if m := _CREATE_INDEX.search(cql):
        table = _table(metadata, m["ks"], m["t"])
        return PRESENT if table is not None and _unquote(m["i"]) in table.indexes else CREATED
    if m := _DROP_INDEX.search(cql):
        keyspace_meta = metadata.keyspaces.get(_unquote(m["ks"]))
        there = keyspace_meta is not None and _unquote(m["i"]) in keyspace_meta.indexes
        return CREATED if there else PRESENT
    if m := _DROP_TABLE.search(cql):
        return CREATED if _table(metadata, m["ks"], m["t"]) is not None else PRESENT
    if m := _CREATE_TRIGGER.search(cql):
        table = _table(metadata, m["ks"], m["t"])
        return PRESENT if table is not None and _unquote(m["i"]) in table.triggers else CREATED
    if _INSERT_FLOW.search(cql):
        name, spec_text = statement.values[0], statement.values[3]
        if name not in deployed:
            return CREATED
        return PRESENT if _comparable(deployed[name]) == json.loads(spec_text) else CHANGED
    if _ALTER_ADD.search(cql):
        return CREATED   # rendered only for a column the table lacks
    return CREATED


def _comparable(spec: Mapping | FlowSpec) -> dict:
    """The document of a spec, as it is stored and compared."""
    return dict(FlowSpec.parse(spec).doc)


def spec_diff(before: Mapping | None, after: Mapping, name: str, labels: tuple[str, str] = ("deployed", "this deploy")
              ) -> list[str]:
    """A unified diff of a flow's specification, deployed (``before``; None: not deployed) against ``after``;
    ``labels`` name the two sides."""
    old = render.spec_json(_comparable(before)).splitlines() if before is not None else []
    new = render.spec_json(_comparable(after)).splitlines()
    return list(difflib.unified_diff(old, new, fromfile=f"{name} ({labels[0]})" if before is not None else "/dev/null",
                                     tofile=f"{name} ({labels[1]})", lineterm=""))


def flow_change(deployed: Mapping[str, FlowSpec], spec: Mapping) -> tuple[str, list[str]]:
    """What a deploy does to one flow: ("new" | "changed" | "unchanged", its specification's diff)."""
    name = FlowSpec.parse(spec).name
    diff = spec_diff(deployed.get(name), spec, name)
    return ("new" if name not in deployed else "changed" if diff else "unchanged"), diff


def dry_run_lines(metadata, deployed: Mapping[str, FlowSpec], specs: Sequence[dict],
                  statements: Sequence[render.Statement], companions: Sequence[str] = (),
                  held: Sequence[str] = ()) -> list[str]:
    """The report of a dry run: each flow's specification against the deployed one, then each statement marked
    with its effect (``+`` changes the cluster, ``~`` replaces a flow's specification, ``=`` is there already)."""
    out = []
    for spec in specs:
        name = FlowSpec.parse(spec).name
        state, diff = flow_change(deployed, spec)
        out.append(f"flow {name}: {state}" if state == "new" else
                   f"flow {name}: {state} (deployed {describe_version(FlowSpec.parse(deployed[name]).version)})")
        out += ["  " + line for line in diff]
        if name in held:
            out.append(f"  deployed paused: its following fan-out's table has rows to copy first "
                       f"(ctl trigger backfill {name})")
    for companion in companions:
        out.append(f"flow {companion}: dropped (its flow no longer follows its fan-out table)")
    marks = [effect(metadata, deployed, st) for st in statements]
    changes = sum(1 for m in marks if m != PRESENT)
    out.append(f"CQL: {len(statements)} statement(s), {changes} would change the cluster "
               f"(+ creates or drops, ~ replaces a flow's specification, = already there)")
    for mark, st in zip(marks, statements):
        lines = st.cql.splitlines()
        out.append(f"{mark} {lines[0]}")
        out += [f"  {line}" for line in lines[1:]]
    return out


def describe_version(version) -> str:
    """A deploy version (the epoch milliseconds the plugin orders by) as a reader's time."""
    if version is None:
        return "at an unknown time"
    when = dt.datetime.fromtimestamp(int(version) / 1000, tz=dt.timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


# --- history ---------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Revision:
    flow: str
    revision: int
    version: int
    action: str          # "deploy" or "drop"
    at: dt.datetime
    by: str
    via: str
    spec: dict | None

    def line(self) -> str:
        what = "dropped" if self.action == "drop" else "deployed"
        return f"{self.flow:<24} revision {self.revision:<3} {what} {describe_version(self.version)} by {self.by} on {self.via}"

    def as_dict(self) -> dict:
        return {"flow": self.flow, "revision": self.revision, "version": self.version, "action": self.action,
                "at": describe_version(self.version), "by": self.by, "via": self.via}


def _deploys_table() -> str:
    return f"{render.ident(keyspace.KEYSPACE)}.{render.ident(keyspace.DEPLOYS.name)}"


def _kept(session) -> bool:
    """Whether the cluster has the history table (a deploy by an older ctl made none; the next deploy makes it)."""
    metadata = session.cluster.metadata.keyspaces.get(keyspace.KEYSPACE)
    return metadata is not None and keyspace.DEPLOYS.name in metadata.tables


def history(session, flow: str | None = None) -> list[Revision]:
    """The flow's deploys and drops, newest first (empty for a flow deployed before the history was kept); with no
    flow, every flow's, by flow."""
    if not _kept(session):
        return []
    where, values = ('WHERE "flow" = %s', (flow,)) if flow is not None else ("", ())
    rows = session.execute(SimpleStatement(
        f'SELECT "flow", "revision", "version", "action", "by", "via", "spec" FROM {_deploys_table()} {where}',
        consistency_level=ConsistencyLevel.LOCAL_QUORUM), values)
    out = []
    for r in rows:
        out.append(Revision(r.flow, r.revision, r.version, r.action,
                            dt.datetime.fromtimestamp(r.version / 1000, tz=dt.timezone.utc), r.by, r.via,
                            json.loads(r.spec) if r.spec else None))
    return sorted(out, key=lambda r: (r.flow, -r.revision))


def record(session, flow: str, action: str, version: int, spec: Mapping | None) -> int:
    """Add a deploy or drop of ``flow`` to its history; returns its revision (one more than the last; 0 on a
    cluster without the history table)."""
    if not _kept(session):
        return 0
    past = history(session, flow)
    revision = (past[0].revision if past else 0) + 1
    session.execute(SimpleStatement(
        f'INSERT INTO {_deploys_table()} ("flow", "revision", "version", "action", "by", "via", "spec") '
        f'VALUES (%s, %s, %s, %s, %s, %s, %s)', consistency_level=ConsistencyLevel.LOCAL_QUORUM),
        (flow, revision, version, action, who(), target(session), render.spec_json(_comparable(spec)) if spec is not None else None))
    return revision


def target(session) -> str:
    """The cluster a session acts on and the contact point(s) it was given: "cluster 'Test' via 127.0.0.1:9042"."""
    cluster = session.cluster
    points = ", ".join(f"{p}:{cluster.port}" if ":" not in str(p) else str(p) for p in cluster.contact_points)
    return f"cluster '{cluster.metadata.cluster_name}' via {points}"


def who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def revision_of(session, flow: str, revision: int) -> Revision:
    """One revision of a flow from its history; ConfigError naming the revisions it has when it has no such one."""
    past = history(session, flow)
    for one in past:
        if one.revision == revision:
            return one
    have = ", ".join(str(p.revision) for p in reversed(past)) or "none recorded"
    raise ConfigError(f"flow '{flow}' has no revision {revision} (its revisions: {have})")
