"""Aggregate steps (docs/design.md, "Aggregates"): validation against the schema, and the target they compile to.

An ``Aggregate`` compiles to a lineage target, its *members*: one row per source row in a table the deploy creates
beside the aggregate's (``async_members_<table>``), partitioned by the group (columns ``g0``, ``g1``, ...), clustered
by the source's primary key (``k0``, ...), holding each aggregated source column (``v0``, ...). The plugin recomputes
a group's row of the aggregate table from its members partition after each task that changed it. Every choice that
could not be exact is refused here, naming the flow, the table and the column.
"""
from __future__ import annotations

from typing import Mapping

from . import backup_map, follows, schema_rules
from .errors import ValidationError
from .flows import Aggregate, Flow, Ref
from .schema import Schema, TableSchema
from .spec import FlowSpec, column_of

PREFIX = schema_rules.MEMBERS_PREFIX
COUNT_TYPES = ("bigint", "varint")
# the type a sum of each source type is kept in: an integer sum is exact in bigint up to 2^32 rows of int values, and
# in varint always; a sum of float or double would depend on the order of the additions
SUM_TYPES = {"tinyint": ("bigint", "varint"), "smallint": ("bigint", "varint"), "int": ("bigint", "varint"),
             "bigint": ("varint",), "varint": ("varint",), "decimal": ("decimal",)}
# types whose order is the same in Cassandra and in Spark (which verifies): numbers, text, times, booleans
ORDERED_TYPES = frozenset({"tinyint", "smallint", "int", "bigint", "varint", "decimal", "float", "double", "text",
                           "ascii", "timestamp", "date", "time", "boolean"})


def members_table(table: str) -> str:
    """The name of the members table of the aggregate table ``table`` (same keyspace)."""
    return PREFIX + table


def is_members_table(table: str) -> bool:
    return table.startswith(PREFIX)


def _source_type(flow: Flow, src: TableSchema, ref: object, where: str) -> str:
    if not isinstance(ref, Ref) or ref.scope != "source":
        raise ValidationError(flow.name, f"{where} must be source.<column>, found: {ref!r}")
    if ref.column not in src.columns:
        raise ValidationError(flow.name, f"'{ref}' ({where}): column '{ref.column}' does not exist in table "
                                         f"'{src.qualified}' (columns: {', '.join(sorted(src.columns))})")
    return schema_rules.norm_type(src.columns[ref.column])


def _column(flow: Flow, target: TableSchema, column: object, role: str) -> str:
    if not isinstance(column, str) or column not in target.columns:
        raise ValidationError(flow.name, f"the {role} column {column!r} does not exist in aggregate table "
                                         f"'{target.qualified}' (columns: {', '.join(sorted(target.columns))})")
    if column in target.primary_key:
        raise ValidationError(flow.name, f"the {role} column '{column}' of '{target.qualified}' is a key column: "
                                         "the key is the group (group_by)")
    return schema_rules.norm_type(target.columns[column])


def compile_aggregate(flow: Flow, schema: Schema, src: TableSchema, step: Aggregate) -> dict:
    """The members target of one aggregate step, its ``aggregate`` naming the table and what it computes."""
    ks, name = step.target_table
    target = schema_rules.table(flow, schema, ks, name, "aggregate table")
    missing = [e for e in ("insert", "update", "delete") if e not in flow.events]
    if missing:
        raise ValidationError(flow.name, f"the aggregate into '{target.qualified}' needs every event: without "
                                         f"{', '.join(missing)} its totals would count rows that changed or went")
    group_by = step.group_by   # a mapping: flow_types checked its shape
    if set(group_by) != set(target.primary_key):
        raise ValidationError(flow.name, f"the aggregate into '{target.qualified}' must group by exactly its primary "
                                         f"key ({', '.join(target.primary_key)}), found: "
                                         f"{', '.join(map(str, group_by)) or 'nothing'}")
    columns: dict[str, str] = {}
    types: dict[str, str] = {}
    group: dict[str, str] = {}
    for i, key in enumerate(target.primary_key):
        ref = group_by[key]
        ref_type = _source_type(flow, src, ref, f"group_by of column '{key}' of '{target.qualified}'")
        schema_rules.check_same_type(flow, target, key, ref, ref_type)
        group[key] = f"g{i}"
        columns[f"g{i}"], types[f"g{i}"] = str(ref), ref_type
    for j, key in enumerate(src.primary_key):
        columns[f"k{j}"], types[f"k{j}"] = f"source.{key}", schema_rules.norm_type(src.columns[key])
    values: dict[str, str] = {}      # source column -> members column

    def member(ref: Ref) -> str:
        if ref.column not in values:
            values[ref.column] = f"v{len(values)}"
            columns[values[ref.column]], types[values[ref.column]] = str(ref), schema_rules.norm_type(src.columns[ref.column])
        return values[ref.column]

    written: set[str] = set()
    computed: dict[str, dict[str, str]] = {"sum": {}, "min": {}, "max": {}}
    for kind in ("sum", "min", "max"):
        for column, ref in getattr(step, kind).items():
            where = f"{kind} into column '{column}' of '{target.qualified}'"
            ref_type = _source_type(flow, src, ref, where)
            column_type = _column(flow, target, column, kind)
            if column in written:
                raise ValidationError(flow.name, f"the aggregate writes column '{column}' of '{target.qualified}' twice")
            written.add(column)
            if kind == "sum":
                allowed = SUM_TYPES.get(ref_type)
                if allowed is None:
                    raise ValidationError(flow.name, f"'{ref}' ({where}) is {ref_type}: an aggregate sums tinyint, "
                                                     "smallint, int, bigint, varint and decimal (a sum of float or double "
                                                     "depends on the order of its additions: keep the values as decimal)")
                if column_type not in allowed:
                    raise ValidationError(flow.name, f"column '{column}' of '{target.qualified}' is {column_type}, but a "
                                                     f"sum of {ref_type} ('{ref}') is kept in {' or '.join(allowed)}")
            else:
                if ref_type not in ORDERED_TYPES:
                    raise ValidationError(flow.name, f"'{ref}' ({where}) is {ref_type}: an aggregate takes the {kind} of "
                                                     f"{', '.join(sorted(ORDERED_TYPES))}")
                if column_type != ref_type:
                    raise ValidationError(flow.name, f"type mismatch for column '{column}' of '{target.qualified}': it is "
                                                     f"{column_type}, but the {kind} of '{ref}' is {ref_type}")
            computed[kind][column] = member(ref)
    if step.count is not None:
        count_type = _column(flow, target, step.count, "count")
        if step.count in written:
            raise ValidationError(flow.name, f"the aggregate writes column '{step.count}' of '{target.qualified}' twice")
        if count_type not in COUNT_TYPES:
            raise ValidationError(flow.name, f"the count column '{step.count}' of '{target.qualified}' is {count_type}: "
                                             f"a count is kept in {' or '.join(COUNT_TYPES)}")
    elif not values:
        raise ValidationError(flow.name, f"the aggregate into '{target.qualified}' computes nothing: give count=, "
                                         "sum=, min= or max=")
    _check_members(flow, schema, ks, name, types, len(group), len(src.primary_key))
    moving = sorted({group_by[k].column for k in target.primary_key} - set(src.primary_key))
    return {
        "keyspace": ks, "table": members_table(name),
        "partition_key": list(group.values()), "clustering": [f"k{j}" for j in range(len(src.primary_key))],
        "columns": columns, "fanout": None, "mode": "lineage", "lineage_columns": moving,
        "aggregate": {"keyspace": ks, "table": name, "partition_key": list(target.partition_key),
                      "clustering": list(target.clustering), "group": group, "count": step.count, **computed},
    }


def _check_members(flow: Flow, schema: Schema, ks: str, name: str, types: Mapping[str, str], groups: int,
                   keys: int) -> None:
    """The members table ``deploy`` creates must fit Cassandra's limits and, if a table of its name exists, be one."""
    members = members_table(name)
    if len(members) > backup_map.MAX_TABLE_NAME:
        raise ValidationError(flow.name, f"the name of aggregate table '{ks}.{name}' is too long for its members "
                                         f"table '{members}' ({len(members)} characters, Cassandra allows "
                                         f"{backup_map.MAX_TABLE_NAME})")
    existing = schema.table(ks, members)
    if existing is None:
        return
    found = {c: schema_rules.norm_type(t) for c, t in existing.columns.items()}
    layout = (list(existing.partition_key), list(existing.clustering))
    want = ([f"g{i}" for i in range(groups)], [f"k{j}" for j in range(keys)])
    if found != dict(types) or layout != want:
        raise ValidationError(flow.name, f"the table '{existing.qualified}' exists but is not the members table this "
                                         f"aggregate needs (columns {found}, expected {dict(types)}); drop it, the "
                                         "deploy creates it (a changed aggregate starts from a backfill)")


def written_tables(spec: Mapping | FlowSpec) -> list[str]:
    """Every table a flow writes, once each, in order: its targets' (a following fan-out's join index included) and
    its aggregates'; for a following fan-out's companion, its target's and its copy of the fan-out table."""
    tables = []
    for t in FlowSpec.parse(spec).targets:
        tables.append(t.qualified)
        if t.aggregate is not None:
            tables.append(t.aggregate.qualified)
    return list(dict.fromkeys(tables + follows.written_tables(spec)))


def kept_tables(spec: Mapping | FlowSpec) -> list[tuple[str, str]]:
    """The tables the plugin keeps for a flow and a backfill rebuilds, as (keyspace, table): its aggregates' members
    tables, its following fan-out's join index and its copy of the fan-out table (a companion's copy too). They
    say what the flow saw while it ran: a drop removes them, and a deploy removes those an earlier deploy left."""
    typed = FlowSpec.parse(spec)
    out = []
    for t in typed.targets:
        if t.aggregate is not None or t.join_index:
            out.append((t.keyspace, t.table))
        if t.follows:
            out.append((t.fanout.follow.keyspace, t.fanout.follow.table))
    if typed.follows is not None:
        copied = typed.follows.target.fanout.follow
        out.append((copied.keyspace, copied.table))
    return list(dict.fromkeys(out))


def members_tables(specs) -> list[dict]:
    """The members tables of the flows' aggregates as the deploy template creates them."""
    out = []
    for spec in map(FlowSpec.parse, specs):
        for t in spec.targets:
            if t.aggregate is None:
                continue
            typed = {c: spec.source.columns[column_of(e)[1]] for c, e in t.columns.items()}
            out.append({"keyspace": t.keyspace, "table": t.table, "aggregate": t.aggregate.qualified,
                        "columns": typed, "partition_key": list(t.partition_key), "clustering": list(t.clustering)})
    return out
