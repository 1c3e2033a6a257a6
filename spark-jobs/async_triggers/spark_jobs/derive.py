"""What a flow derives: from its specification and the source and fan-out tables, the rows its targets get.

The one home of that computation: ``verify`` compares these rows with the target tables, ``backfill`` writes them
(with each source row's own timestamp and TTL carried alongside), so the two can never disagree on what a flow
produces. Pure functions of DataFrames; nothing here talks to Cassandra. They read the flow's typed specification
(``async_triggers.spec.FlowSpec``: the jobs' entry points parse the document once and hand the typed form down).
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Mapping, Sequence, Union

from async_triggers.errors import DeriveError
from async_triggers.spec import FlowSpec, Keyed, Table, Target

_SOURCE, _ROW = "source", "row"


# --- the spec --------------------------------------------------------------------------------------------------

def parse_ref(expr: str) -> tuple[str, str]:
    """``"source.author_id"`` -> ``("source", "author_id")``; the spec's only expression forms."""
    scope, sep, column = str(expr).partition(".")
    if not sep or scope not in (_SOURCE, _ROW) or not column:
        raise DeriveError(f"expression must be source.<column> or row.<column>, found: {expr!r}")
    return scope, column


@dataclasses.dataclass(frozen=True)
class AggregateTable(Keyed):
    """An aggregate table (docs/design.md, "Aggregates") in a target's shape: its key, the columns it computes
    (``columns``: column to ``aggregate.<kind>``) and the members target it totals (``members``)."""
    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]
    columns: Mapping[str, str]
    members: Target


Written = Union[Target, AggregateTable]   # what a table of targets_by_table groups


def primary_key(target: Target | AggregateTable | Table) -> list[str]:
    return list(target.key)


def targets_by_table(spec: FlowSpec) -> "OrderedDict[str, list[Written]]":
    """The spec's targets grouped by the table they write, in the order of first appearance; an aggregate table
    (:func:`aggregate_tables`) is a group of its own."""
    if spec.handler:
        raise DeriveError(f"flow '{spec.name}' runs the Java handler {spec.handler}: its target rows "
                          "cannot be derived from the specification")
    if not spec.targets:
        raise DeriveError(f"flow '{spec.name}' has no targets to verify")
    grouped: OrderedDict[str, list[Written]] = OrderedDict()
    for t in spec.targets:
        grouped.setdefault(t.qualified, []).append(t)
    for name, table in aggregate_tables(spec).items():
        grouped[name] = [table]
    for name, group in grouped.items():
        keys = {t.key for t in group}
        if len(keys) > 1:
            raise DeriveError(f"flow '{spec.name}': targets writing {name} disagree on its primary key")
    return grouped


def aggregate_tables(spec: FlowSpec) -> "OrderedDict[str, AggregateTable]":
    """Per aggregate table, its :class:`AggregateTable`."""
    out: OrderedDict[str, AggregateTable] = OrderedDict()
    for t in spec.targets:
        a = t.aggregate
        if a is None:
            continue
        columns = {c: "aggregate.key" for c in a.partition_key + a.clustering}
        if a.count:
            columns[a.count] = "aggregate.count"
        for kind in ("sum", "min", "max"):
            columns.update({c: f"aggregate.{kind}" for c in getattr(a, kind)})
        out[a.qualified] = AggregateTable(a.keyspace, a.table, a.partition_key, a.clustering, columns, t)
    return out


def is_aggregate(target: Written) -> bool:
    return isinstance(target, AggregateTable)


def aggregate_rows(table: AggregateTable, source_df, fanout_dfs: Mapping[str, object]):
    """The rows an aggregate table should hold: its members (:func:`target_rows` of the members target, which leaves
    out a source row with a null or empty group value) grouped by group, each group's count, sums, least and greatest
    values (nulls left out), on :func:`compared_columns`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, LongType

    members = table.members
    a = members.aggregate
    names = list(members.columns)
    rows = renamed(target_rows(members, source_df, fanout_dfs, names), "m")
    col = {name: F.col(f"m{i}") for i, name in enumerate(names)}
    types = dict(zip(names, (f.dataType for f in rows.schema.fields)))
    group = [col[g].alias(f"q{i}") for i, g in enumerate(members.partition_key)]
    output = compared_columns([table])
    computed = []
    for j, column in enumerate(output):
        kind = table.columns[column].split(".", 1)[1]
        if kind == "key":
            continue
        if kind == "count":
            computed.append(F.count(F.lit(1)).alias(f"a{j}"))
            continue
        value = col[getattr(a, kind)[column]]
        if kind == "sum" and isinstance(types[getattr(a, kind)[column]], LongType):
            value = value.cast(DecimalType(38, 0))     # a sum of bigint is kept in varint: no overflow
        computed.append({"sum": F.sum, "min": F.min, "max": F.max}[kind](value).alias(f"a{j}"))
    totals = rows.groupBy(*group).agg(*computed)
    by_position = [F.col(f"q{members.partition_key.index(a.group[c])}") if c in a.group else F.col(f"a{j}")
                   for j, c in enumerate(output)]
    return totals.select(*by_position).toDF(*output)


def compared_columns(targets: Sequence[Written]) -> list[str]:
    """Primary key first, then the value columns every target of the table maps (in the first one's order)."""
    key = primary_key(targets[0])
    common = [c for c in targets[0].columns if all(c in t.columns for t in targets)]
    missing_key = [c for c in key if c not in common]
    if missing_key:
        raise DeriveError(f"the targets writing {targets[0].qualified} do not all set its key column(s) "
                          f"{', '.join(missing_key)}")
    return key + [c for c in common if c not in key]


def source_columns(spec: FlowSpec) -> list[str]:
    """The source columns the flow reads (mapped values and fan-out matches), in a stable order."""
    cols: list[str] = []
    for t in spec.targets:
        exprs = list(t.columns.values()) + (list(t.fanout.match.values()) if t.fanout else [])
        for expr in exprs:
            scope, col = parse_ref(expr)
            if scope == _SOURCE and col not in cols:
                cols.append(col)
    return cols


def fanout_columns(spec: FlowSpec) -> "OrderedDict[str, list[str]]":
    """Per fan-out table, the columns the flow reads from it (match columns and ``row.*`` references)."""
    out: OrderedDict[str, list[str]] = OrderedDict()
    for t in spec.targets:
        fan = t.fanout
        if fan is None:
            continue
        cols = out.setdefault(fan.qualified, [])
        used = list(fan.match) + [parse_ref(e)[1] for e in t.columns.values() if parse_ref(e)[0] == _ROW]
        for c in used:
            if c not in cols:
                cols.append(c)
    return out


# --- pure transforms -------------------------------------------------------------------------------------------
#
# Every column is addressed by its position, never resolved by name inside Spark: a target column named like a
# source column (``status`` -> ``status``), a fan-out column named like a source column, names with dots or spaces,
# and quoted names that differ only in case (Spark resolves names case-insensitively) all stay distinct.

def position(df, column: str, what: str) -> int:
    """The index of ``column`` (exact, case-sensitive) among ``df``'s columns; a DeriveError naming it otherwise."""
    try:
        return list(df.columns).index(column)
    except ValueError:
        raise DeriveError(f"{what} has no column {column!r} (columns: {', '.join(df.columns)})") from None


def renamed(df, prefix: str):
    """``df`` with its columns renamed by position: ``<prefix>0``, ``<prefix>1``, ..."""
    return df.toDF(*[f"{prefix}{i}" for i in range(len(df.columns))])


def target_rows(target: Target, source_df, fanout_dfs: Mapping[str, object], columns: Sequence[str] | None = None,
                carry: Sequence[str] = ()):
    """The rows one target should hold: the source rows (joined with the fan-out table on ``match`` if the
    target has a fan-out) mapped through the target's ``columns``, restricted to rows with a non-null primary
    key and a non-empty partition key (Cassandra refuses an empty one, so such a row derives nothing). ``columns``
    selects and orders the output columns (default: all mapped columns). ``carry`` names source columns passed
    through unchanged after them (the backfill's write timestamp and TTL of each source row)."""
    from pyspark.sql import functions as F

    fan = target.fanout
    fan_df = name = None
    if fan:
        name = fan.qualified
        if name not in fanout_dfs:
            raise DeriveError(f"no DataFrame given for the fan-out table {name}")
        fan_df = fanout_dfs[name]

    def ref(scope: str, column: str) -> str:   # source columns are s0, s1, ...; fan-out columns r0, r1, ...
        if scope == _SOURCE:
            return f"s{position(source_df, column, 'the source')}"
        return f"r{position(fan_df, column, f'the fan-out table {name}')}"

    src = renamed(source_df, "s")
    if fan:
        cond = None
        for fan_col, expr in fan.match.items():
            scope, src_col = parse_ref(expr)
            if scope != _SOURCE:
                raise DeriveError(f"a fan-out matches on source.<column>, found: {expr!r}")
            c = F.col(ref(_ROW, fan_col)) == F.col(ref(_SOURCE, src_col))
            cond = c if cond is None else cond & c
        joined = src.join(renamed(fan_df, "r"), on=cond, how="inner")
    else:
        joined = src
    wanted = list(columns) if columns is not None else list(target.columns)
    projected = []
    for i, col in enumerate(wanted):
        if col not in target.columns:
            raise DeriveError(f"{target.qualified} maps no column {col!r}")
        scope, ref_col = parse_ref(target.columns[col])
        if scope == _ROW and not fan:
            raise DeriveError(f"{target.qualified}.{col} = {target.columns[col]} needs a fan-out")
        projected.append(F.col(ref(scope, ref_col)).alias(f"o{i}"))
    projected.extend(F.col(ref(_SOURCE, c)).alias(f"c{i}") for i, c in enumerate(carry))
    # The connector answers a null test on a key column itself (CQL keys are never null) and Spark drops it from the
    # plan; but a partition holding only its static row reads with null clustering columns, which derive no row.
    # A filter that also reads a nondeterministic column (rand() is never negative) stays above the scan.
    barrier = f"b{len(projected)}"
    kept = F.col(barrier) >= 0
    for i, col in enumerate(wanted):
        if col in primary_key(target):
            kept = kept & F.col(f"o{i}").isNotNull()
        if col in target.partition_key:   # Cassandra refuses an empty partition key: such a row derives nothing
            kept = kept & (F.length(F.col(f"o{i}")) > 0)
    out = joined.select(*projected, F.rand().alias(barrier)).where(kept).drop(barrier)
    return out.toDF(*wanted, *carry)


def expected_rows(spec: FlowSpec, source_df, fanout_dfs: Mapping[str, object],
                  carry: Sequence[str] = (), since_s: float | None = None) -> "OrderedDict[str, object]":
    """Per target table (``"keyspace.table"``), the distinct rows the flow should have written: the union of
    :func:`target_rows` over the targets writing that table, on :func:`compared_columns` (then ``carry``).

    ``source_df`` holds the source table (at least :func:`source_columns`); ``fanout_dfs`` maps each fan-out
    table's qualified name to its DataFrame (at least :func:`fanout_columns`). A following fan-out with a recency
    bound keeps the rows within it at ``since_s`` (epoch seconds; default: now), less a slack (recent.within_bound).
    """
    import time

    from . import recent
    since_s = time.time() if since_s is None else since_s
    out: OrderedDict[str, object] = OrderedDict()
    for name, group in targets_by_table(spec).items():
        if is_aggregate(group[0]):
            continue   # aggregate_rows: a group's total comes from the whole source, never a token range of it
        cols = compared_columns(group)
        df = None
        for t in group:
            part = recent.within_bound(t, target_rows(t, source_df, fanout_dfs, cols, carry), since_s)
            df = part if df is None else df.union(part)     # by position: the parts have the same columns
        out[name] = distinct(df)
    return out


def map_columns(df) -> list[int]:
    """The positions of ``df``'s map columns (a CQL map, a non-frozen one included): Spark cannot compare them."""
    from pyspark.sql.types import MapType
    return [i for i, f in enumerate(df.schema.fields) if isinstance(f.dataType, MapType)]


def comparable(column):
    """A map column as a value Spark can compare (``=``, ``DISTINCT``, ``GROUP BY``): its entries, sorted by key."""
    from pyspark.sql import functions as F
    return F.sort_array(F.map_entries(column))


def distinct(df):
    """``df.distinct()``, also with map columns (compared as their sorted entries)."""
    maps = map_columns(df)
    if not maps:
        return df.distinct()
    from pyspark.sql import functions as F
    names = list(df.columns)
    positional = renamed(df, "m")
    flat = positional.select(*[comparable(F.col(f"m{i}")).alias(f"m{i}") if i in maps else F.col(f"m{i}")
                               for i in range(len(names))]).distinct()
    return flat.select(*[F.map_from_entries(F.col(f"m{i}")).alias(f"m{i}") if i in maps else F.col(f"m{i}")
                         for i in range(len(names))]).toDF(*names)


def trace_columns(spec: FlowSpec, targets: Sequence[Written]) -> list[str] | None:
    """The target primary key columns that carry the source partition key, in its order: for each source partition
    key column, a key column every target of the table maps from it. From them, a target row gives the token of the
    source row it derives from (so a token range of the source is compared with exactly the target rows it
    derives). None when the table's key does not carry the whole source partition key."""
    key = primary_key(targets[0])
    out = []
    for p in spec.source.partition_key:
        found = [c for c in key if all(t.columns.get(c) == f"{_SOURCE}.{p}" for t in targets)]
        if not found:
            return None
        out.append(found[0])
    return out
