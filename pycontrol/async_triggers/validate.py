"""Validation of flows against a schema snapshot, and compilation into the plugin's flow specification.

Pure functions: nothing here touches a cluster. Every error names the flow and the culprit.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping

from . import aggregates, flow_types, follows
from .errors import ValidationError
from .flows import FanOut, Flow, Ref, Write
from .schema import Schema, TableSchema
from .schema_rules import check_backup_map, check_same_type, multi_cell, norm_type, table as find_table
from .spec import FlowSpec


def _ref_type(flow: Flow, ref: Ref, where: str, src: TableSchema, fan: TableSchema | None) -> str:
    if not isinstance(ref, Ref):
        raise ValidationError(flow.name, f"{where} must be source.<column> or row.<column>, found: {ref!r}")
    if ref.scope == "source":
        table = src
    elif fan is None:
        raise ValidationError(flow.name, f"'{ref}' ({where}) needs a fan-out: a direct write can only use "
                                         "source.<column>")
    else:
        table = fan
    if ref.column not in table.columns:
        raise ValidationError(flow.name, f"'{ref}' ({where}): column '{ref.column}' does not exist in "
                                         f"table '{table.qualified}' (columns: {', '.join(sorted(table.columns))})")
    return table.columns[ref.column]


def _compile_write(flow: Flow, schema: Schema, src: TableSchema, fanout: FanOut | None, write: Write) -> dict:
    ks, name = write.target_table
    target = find_table(flow, schema, ks, name, "target table")
    fan = None
    fanout_spec = None
    if fanout is not None:
        fks, fname = fanout.fanout_table
        fan = find_table(flow, schema, fks, fname, "fan-out table")
        if set(fanout.match) != set(fan.partition_key):
            raise ValidationError(flow.name, f"the fan-out over '{fan.qualified}' must match its whole partition "
                                             f"key ({', '.join(fan.partition_key)}), found: "
                                             f"{', '.join(fanout.match) or 'nothing'}")
        for column, ref in fanout.match.items():
            where = f"match of column '{column}' of fan-out table '{fan.qualified}'"
            if isinstance(ref, Ref) and ref.scope != "source":
                raise ValidationError(flow.name, f"'{ref}' ({where}): a fan-out matches on source.<column>")
            check_same_type(flow, fan, column, ref, _ref_type(flow, ref, where, src, None))
        used = sorted({r.column for r in write.columns.values() if isinstance(r, Ref) and r.scope == "row"})
        fanout_spec = {"keyspace": fks, "table": fname,
                       "match": {c: str(r) for c, r in fanout.match.items()}, "columns": used}
    for column, ref in write.columns.items():
        if column not in target.columns:
            raise ValidationError(flow.name, f"column '{column}' does not exist in target table "
                                             f"'{target.qualified}' (columns: {', '.join(sorted(target.columns))})")
        where = f"for column '{column}' of '{target.qualified}'"
        check_same_type(flow, target, column, ref, _ref_type(flow, ref, where, src, fan))
    unset = [c for c in target.primary_key if c not in write.columns]
    if unset:
        raise ValidationError(flow.name, f"the write to '{target.qualified}' does not set its primary key "
                                         f"column(s): {', '.join(unset)}")
    # A target key (or the fan-out it comes from) that depends on a non-key source column moves when that
    # column changes, and cannot be computed from a delete: the plugin keeps lineage of those columns.
    key_refs = [write.columns[c] for c in target.primary_key] + list(fanout.match.values() if fanout else ())
    moving = sorted({r.column for r in key_refs if r.scope == "source" and r.column not in src.primary_key})
    _check_derivable(flow, src, target, write)
    return {
        "keyspace": ks, "table": name,
        "partition_key": list(target.partition_key), "clustering": list(target.clustering),
        "columns": {c: str(r) for c, r in write.columns.items()},
        "fanout": fanout_spec,
        "mode": "lineage" if moving or _rederived(flow, src, target, fanout, write) else "direct",
        "lineage_columns": moving,
    }


def _rederived(flow: Flow, src: TableSchema, target: TableSchema, fanout: FanOut | None, write: Write) -> bool:
    """Whether a target whose key does not move is still derived whole by each task, as a lineage target
    (docs/design.md, "Lineage"), rather than mirroring its write's cells: one that copies a static column (a static
    value is a cell of every row of its partition, set or deleted apart from the row, and belongs to none) or a
    non-frozen collection or UDT (elements added, removed and expiring one by one, a list's positions chosen by the
    coordinator that wrote them); one that leaves out a regular source column (a source row made by UPDATE lives
    through its cells alone: when the ones left out go, the row is gone, which no cell of the target says), or that
    copies a value of its fan-out's row (it would keep a derived row alive after its source row went); and, where
    the source has clustering columns and the flow handles deletes, one whose partition key comes from a source
    clustering column (a range or partition deletion names no value of it: its rows are found through the lineage's
    list of the source partition's rows)."""
    if any(r.scope == "source" and (r.column in src.static or multi_cell(src.columns[r.column]))
           for r in write.columns.values()):
        return True   # a static value, or a collection (or UDT) whose elements each have a timestamp and TTL
    mapped = {r.column for r in write.columns.values() if r.scope == "source"}
    if any(c not in mapped and c not in src.primary_key and c not in src.static for c in src.columns):
        return True   # a row alive through a column it leaves out (made by UPDATE) goes when that column goes
    if any(r.scope == "row" for c, r in write.columns.items() if c not in target.primary_key):
        return True   # a fan-out row's value would keep a derived row alive after its source row went
    if not src.clustering or "delete" not in flow.events:
        return False
    partition_sources = [write.columns[c] for c in target.partition_key]
    if fanout is not None and any(r.scope == "row" for r in partition_sources):
        partition_sources += list(fanout.match.values())
    return any(r.scope == "source" and r.column in src.clustering for r in partition_sources)


def _check_derivable(flow: Flow, src: TableSchema, target: TableSchema, write: Write) -> None:
    """Refuse the targets whose rows the flow could not keep equal to the source's (docs/design.md, "Write shapes"):
    one whose primary key leaves out a source key column (two source rows would derive one target row, and deleting
    either would delete it)."""
    keyed_by = {write.columns[c].column for c in target.primary_key if write.columns[c].scope == "source"}
    left_out = [c for c in src.primary_key if c not in keyed_by]
    if left_out:
        raise ValidationError(flow.name, f"the write to '{target.qualified}' does not carry the source's primary key "
                                         f"column(s) {', '.join(left_out)} of '{src.qualified}' in its own primary key: "
                                         "two source rows would derive one target row, and deleting either would "
                                         "delete it; add them to the target's primary key")


def compile_flow(flow: Flow, schema: Schema) -> dict:
    """Validate one flow against the schema and return its specification (docs/design.md)."""
    flow_types.check([flow])
    ks, name = flow.source_table
    src = find_table(flow, schema, ks, name, "source table")
    counters = sorted(c for c, t in src.columns.items() if norm_type(t) == "counter")
    if counters:
        raise ValidationError(flow.name, f"source table '{src.qualified}' is a counter table (column(s) "
                                         f"{', '.join(counters)}): a counter's value is the sum of increments held "
                                         "apart on each replica, and no write carries it; write the events to a table "
                                         "of their own and derive from that")
    check_backup_map(flow, schema, src)
    writes = flow.writes()
    targets = [_compile_write(flow, schema, src, fanout, write) for fanout, write in writes]
    follows.compile_follow(flow, schema, src, writes, targets)   # lineage, with its join index: before the loop below
    targets += [aggregates.compile_aggregate(flow, schema, src, step) for step in flow.aggregates()]
    # the rows of a table that a lineage target writes may be another target's too (an author's own timeline row is a
    # follower's row of another author): every target of that table is derived whole, under one version
    lineage_tables = {(t["keyspace"], t["table"]) for t in targets if t["mode"] == "lineage"}
    for t in targets:
        if (t["keyspace"], t["table"]) in lineage_tables:
            t["mode"] = "lineage"
    return {
        "name": flow.name,
        "source": {"keyspace": ks, "table": name, "partition_key": list(src.partition_key),
                   "clustering": list(src.clustering), "columns": dict(src.columns)},
        "events": list(flow.events),
        "read_consistency": flow.read_consistency,
        "write_consistency": flow.write_consistency,
        "queue": {"capacity": flow.queue.capacity, "workers": flow.queue.workers},
        "page_size": flow.page_size,
        "start_delay_ms": flow.start_delay_ms,
        "retry": dataclasses.asdict(flow.retry),
        "overflow": {"policy": flow.overflow.policy, "block_timeout_ms": flow.overflow.block_timeout_ms,
                     "max_workers": flow.overflow.max_workers or flow.queue.workers},
        "backup": {"enabled": flow.backup.enabled, "safety_net_ms": flow.backup.safety_net_ms},
        "handler": flow.handler,
        "targets": targets,
    }


def check_cycles(specs: Iterable[Mapping]) -> None:
    """Reject flows whose source -> target edges form a cycle (the report assumes an acyclic data flow)."""
    edges: dict[str, set[str]] = {}
    by_edge: dict[tuple[str, str], str] = {}
    for spec in map(FlowSpec.parse, specs):
        src = spec.source.qualified
        for dst in aggregates.written_tables(spec):
            edges.setdefault(src, set()).add(dst)
            by_edge.setdefault((src, dst), spec.name)
    state: dict[str, int] = {}  # 1 on the DFS stack, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                names = sorted({by_edge[(a, b)] for a, b in zip(cycle, cycle[1:])})
                raise ValidationError(names[0], f"flows form a cycle: {' -> '.join(cycle)} "
                                                f"(flows: {', '.join(names)})")
            if state.get(nxt) is None:
                visit(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(edges):
        if state.get(start) is None:
            visit(start, [start])


def compile_all(flows: Iterable[Flow], schema: Schema, deployed: Mapping[str, Mapping] | None = None) -> list[dict]:
    """Compile the given flows and check that, together with the deployed ones they do not replace, they are
    acyclic. Raises ValidationError before anything is changed."""
    flows = list(flows)
    flow_types.check(flows)   # every value of the right shape, or every problem at once
    names = {getattr(f, "name", None) for f in flows}
    # a deployed companion goes with its flow: replaced, or dropped when the flow no longer follows
    others = [s for name, s in (deployed or {}).items() if name not in names and (follows.main_of(s) or name) not in names]
    check_cycles(others + [e for e in map(_edges, flows) if e is not None])   # a cycle first: the plainest reason
    specs = [s for f in flows for s in follows.with_companion(compile_flow(f, schema), schema)]
    follows.check_companion_names(specs, deployed or {})
    check_cycles(others + specs)
    check_one_flow_per_target(others + specs)
    return specs


def check_one_flow_per_target(specs: Iterable[Mapping]) -> None:
    """Refuse two flows writing one table (docs/design.md, "Write shapes"). A derived row is the image of one source
    row under one flow's meaning; two flows keep their rows by their own tasks, timestamps and lineage, so a change in
    one source would delete, at its timestamp, the other flow's equal row, and neither flow's verify could tell the
    other's rows from strays. Several targets of one flow may share a table: they derive from the same source rows;
    so may a flow and its own companion (a following fan-out's)."""
    writers: dict[str, list[str]] = {}
    owners: dict[str, set[str]] = {}
    for spec in map(FlowSpec.parse, specs):
        for table in aggregates.written_tables(spec):
            writers.setdefault(table, []).append(spec.name)
            owners.setdefault(table, set()).add(follows.main_of(spec) or spec.name)
    for table, names in sorted(writers.items()):
        if len(owners[table]) > 1:
            first, *rest = sorted(names)
            raise ValidationError(first, f"the target table '{table}' is also written by flow(s) "
                                         f"{', '.join(repr(n) for n in rest)}: a table is derived by one flow, whose "
                                         "tasks alone decide its rows; give each flow a table of its own, or write "
                                         "both sources' rows from one source table (a cascade into one flow)")


def _edges(flow: Flow) -> dict | None:
    """A flow's source and target tables, as check_cycles reads a spec; None when the flow is too malformed to tell
    (compile_flow then says why)."""
    try:
        ks, name = flow.source_table
        targets = [dict(zip(("keyspace", "table"), write.target_table)) for _, write in flow.writes()]
        targets += [dict(zip(("keyspace", "table"), step.target_table)) for step in flow.aggregates()]
    except Exception:  # noqa: BLE001 - any malformed part is compile_flow's to report, with its own message
        return None
    return {"name": flow.name, "source": {"keyspace": ks, "table": name}, "targets": targets}
