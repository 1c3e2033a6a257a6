"""Rendering of the plugin's configuration (flow specifications, JSON) and of the CQL that deploys it.

One Jinja2 environment, built here. The same template gives the script a person reads (values as CQL
literals) and the statements ``deploy`` runs (values bound as ``?`` markers, never formatted into CQL).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Collection, Mapping, Sequence

import jinja2
from cassandra.encoder import Encoder

from . import aggregates, backup_map, capture_index, cql_script, follows, keyspace, replication as replication_mod
from .errors import ConfigError
from .spec import FlowSpec

TRIGGER_NAME = "async_triggers"
TRIGGER_CLASS = "org.asynctriggers.AsyncTrigger"   # back pressure on the coordinator (the block policy)

_encoder = Encoder()


def environment(loader: jinja2.BaseLoader | None = None) -> jinja2.Environment:
    """The project's one Jinja2 environment; ``loader``: another package's templates (the cluster's)."""
    return jinja2.Environment(
        loader=loader or jinja2.PackageLoader("async_triggers", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def ident(name: str) -> str:
    """A quoted CQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
    """A CQL literal (for the human-readable script and for the class name of CREATE TRIGGER)."""
    return _encoder.cql_encode_all_types(value)


def spec_json(spec: Mapping | FlowSpec) -> str:
    """The flow specification as the plugin reads it (stable key order, so re-deploys compare equal)."""
    return json.dumps(spec.doc if isinstance(spec, FlowSpec) else spec, indent=2, sort_keys=True)


@dataclasses.dataclass(frozen=True)
class Statement:
    cql: str
    values: tuple


def _render(template: str, bound: bool, **context) -> tuple[str, list]:
    values: list = []

    def bind(value: Any) -> str:
        if bound:
            values.append(value)
            return "?"
        return literal(value)

    try:
        text = environment().get_template(template).render(ident=ident, literal=literal, bind=bind, **context)
    except jinja2.UndefinedError as e:
        raise ConfigError(f"template {template}: {e.message}") from e
    return text, values


def column_alters(table: keyspace.Table, existing: Collection[str]) -> list[str]:
    """The statements that add to an existing table of our keyspace the columns it lacks (a table made by an older
    deploy). ``existing``: its columns now; empty when there is no such table (CREATE TABLE makes it whole)."""
    return [f"ALTER TABLE {ident(keyspace.KEYSPACE)}.{ident(table.name)} ADD IF NOT EXISTS {ident(column)} {cql_type}"
            for column, cql_type in keyspace.missing_columns(table, existing)]


def flow_status_alters(existing: Collection[str]) -> list[str]:
    return column_alters(keyspace.FLOW_STATUS, existing)


def _keyspace_tables(existing_columns: Mapping[str, Collection[str]]) -> list[dict]:
    """The tables of our keyspace (keyspace.TABLES) as the template writes their CREATE TABLE, each with the ALTERs
    that bring a table made by an older deploy up to date (``existing_columns``: table name to its columns now)."""
    out = []
    for t in keyspace.TABLES:
        partition = ", ".join(ident(c) for c in t.partition_key)
        key = ", ".join([f"({partition})" if len(t.partition_key) > 1 else partition]
                        + [ident(c) for c in t.clustering])
        out.append({"name": t.name, "columns": ",\n  ".join(f"{ident(c)} {cql_type}" for c, cql_type in t.columns),
                    "primary_key": key, "options": f" {t.options}" if t.options else "",
                    "alters": column_alters(t, existing_columns.get(t.name, ()))})
    return out


def _backup_maps(specs: Sequence[dict]) -> list[dict]:
    """One backup map per source table of the flows, in the order the flows name them."""
    out, seen = [], set()
    for source in (FlowSpec.parse(s).source for s in specs):
        ks, table = source.keyspace, source.table
        if (ks, table) in seen:
            continue
        seen.add((ks, table))
        keys = backup_map.key_columns([source.columns[c] for c in source.partition_key])
        out.append({
            "keyspace": ks, "table": backup_map.table_name(table), "source": f"{ks}.{table}",
            "key_definitions": ", ".join(f"{ident(c)} {t}" for c, t in keys),
            "value_definitions": ", ".join(f"{ident(c)} {t}" for c, t in backup_map.VALUE_COLUMNS),
            "partition_key": ", ".join(ident(c) for c, _ in keys),
            "clustering": ", ".join(ident(c) for c in backup_map.CLUSTERING),
            "gc_grace_seconds": backup_map.GC_GRACE_SECONDS,
            "compaction": backup_map.COMPACTION,
            "comment": backup_map.comment(ks, table),
        })
    return out


def _members_tables(specs: Sequence[dict]) -> list[dict]:
    """The members table of each aggregate of the flows (docs/design.md, "Aggregates")."""
    return [{"keyspace": m["keyspace"], "table": m["table"], "aggregate": m["aggregate"], **_layout(m)}
            for m in aggregates.members_tables(specs)]


def _follow_tables(specs: Sequence[dict]) -> list[dict]:
    """The join index and the copy of the fan-out table of each following fan-out of the flows."""
    return [{"keyspace": t["keyspace"], "table": t["table"], "comment": t["comment"], **_layout(t)}
            for t in follows.tables(specs)]


def _layout(table: Mapping) -> dict:
    """A table the deploy creates (``columns``: name to CQL type, ``partition_key``, ``clustering``) as its CREATE
    TABLE writes them: the column definitions and the primary key."""
    partition = ", ".join(ident(c) for c in table["partition_key"])
    return {"columns": ",\n  ".join(f"{ident(c)} {cql_type}" for c, cql_type in table["columns"].items()),
            "primary_key": ", ".join([f"({partition})"] + [ident(c) for c in table["clustering"]])}


def capture_indexes(specs: Sequence[dict], others: Sequence[dict] = (),
                    existing: Mapping[tuple[str, str], Collection[str]] | None = None) -> list[dict]:
    """The capture index of each source table of ``specs``, over every flow on it (``others``: flows already
    deployed that stay), and the capture indexes it replaces (``existing``: table to its capture indexes now)."""
    by_table: dict[tuple[str, str], dict[str, FlowSpec]] = {}
    for s in map(FlowSpec.parse, list(others) + list(specs)):
        by_table.setdefault((s.source.keyspace, s.source.table), {})[s.name] = s
    out = []
    for s in map(FlowSpec.parse, specs):
        key = (s.source.keyspace, s.source.table)
        if key not in by_table:
            continue
        flows = by_table.pop(key)
        options = capture_index.options_json(flows[n] for n in sorted(flows))
        name = capture_index.name(*key, options)
        out.append({"keyspace": key[0], "table": key[1], "name": name, "options": options,
                    "flows": sorted(flows), "drop": sorted(set((existing or {}).get(key, ())) - {name})})
    return out


def _deploy_context(specs: Sequence[dict], replication: Mapping[str, int] | int, version: int,
                    flow_status_columns: Collection[str], others: Sequence[dict],
                    existing_capture_indexes: Mapping[tuple[str, str], Collection[str]] | None,
                    flows_columns: Collection[str] = (), held: Collection[str] = ()) -> dict:
    flows = [{"spec": s, "json": spec_json(s), "hold": s.name in held,
              "targets": sorted(aggregates.written_tables(s)) or ["handler " + str(s.handler)]}
             for s in map(FlowSpec.parse, specs)]
    existing = {keyspace.FLOW_STATUS.name: flow_status_columns, keyspace.FLOWS.name: flows_columns}
    return dict(keyspace=keyspace.KEYSPACE, keyspace_tables=_keyspace_tables(existing),
                replication=replication_mod.cql_map(replication),
                version=version, flows=flows,
                trigger_name=TRIGGER_NAME, trigger_class=TRIGGER_CLASS, backup_maps=_backup_maps(specs),
                members_tables=_members_tables(specs), follow_tables=_follow_tables(specs),
                capture_class=capture_index.CLASS,
                capture_indexes=capture_indexes(specs, others, existing_capture_indexes))


def deploy_script(specs: Sequence[dict], replication: Mapping[str, int] | int, version: int,
                  flow_status_columns: Collection[str] = (), others: Sequence[dict] = (),
                  existing_capture_indexes: Mapping[tuple[str, str], Collection[str]] | None = None,
                  flows_columns: Collection[str] = ()) -> str:
    """The deploy CQL as a script a person can read or feed to cqlsh. ``flow_status_columns``, ``flows_columns``:
    the columns of an existing async_triggers.flow_status, async_triggers.flows (the script then adds those they
    lack); ``others``: flows deployed already (their tables' capture indexes name them too);
    ``existing_capture_indexes``: the capture indexes the new ones replace."""
    text, _ = _render("cql/deploy.cql.jinja", bound=False,
                      **_deploy_context(specs, replication, version, flow_status_columns, others,
                                        existing_capture_indexes, flows_columns))
    return text


def deploy_statements(specs: Sequence[dict], replication: Mapping[str, int] | int, version: int,
                      flow_status_columns: Collection[str] = (), others: Sequence[dict] = (),
                      existing_capture_indexes: Mapping[tuple[str, str], Collection[str]] | None = None,
                      flows_columns: Collection[str] = (), held: Collection[str] = ()) -> list[Statement]:
    """The deploy CQL as statements with bound values, in order (the arguments: see deploy_script; ``held``: the
    flows deployed paused, whose following fan-out's table must be copied first)."""
    text, values = _render("cql/deploy.cql.jinja", bound=True,
                           **_deploy_context(specs, replication, version, flow_status_columns, others,
                                             existing_capture_indexes, flows_columns, held))
    return split_statements(text, values)


def split_statements(text: str, values: list) -> list[Statement]:
    """Split a rendered script into statements and give each its bound values, counted by its ``?`` markers."""
    out, pos = [], 0
    for cql in cql_script.statements(text, "rendered CQL"):
        n = cql_script.bind_markers(cql)
        out.append(Statement(cql, tuple(values[pos:pos + n])))
        pos += n
    if pos != len(values):
        raise ConfigError(f"rendered CQL has {pos} bind markers for {len(values)} values")
    return out
