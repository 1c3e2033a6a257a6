"""Following fan-outs (``FanOut(..., follow=True)``): validation against the schema, and what they compile to.

A following fan-out's target T keeps its rows when the fan-out table changes too: a row added to it (a follow) writes
T's rows of every source row that matches it, a row removed (an unfollow) deletes them. It compiles to:

- T as a lineage target, its ``fanout`` naming (``follow``) the position of its join index and the copy of the
  fan-out table;
- the *join index*, a lineage target right before T: one row per source row in ``<T's keyspace>.async_join_<flow>``,
  partitioned by the match value (``m0``, ...), clustered by the source's primary key (``k0``, ...), holding the
  other source columns T copies (``v0``, ...), so a follow finds the source rows of its match value;
- a *companion* flow, ``<flow>_follows``, whose source is the fan-out table and which has no targets of its own: its
  ``follows`` names the main flow, its source, the join index and T. The plugin keeps from it a copy of the fan-out
  table with a change counter per row (``<T's keyspace>.async_follows_<flow>``) and derives T's rows of the rows of
  the join index that match the changed row.

The deploy creates both tables; dropping the main flow drops the companion. Every shape that could not be kept exact
is refused here, naming the flow, the table and the column.
"""
from __future__ import annotations

import copy
from collections import Counter
from typing import Iterable, Mapping, Sequence

from . import backup_map, schema_rules
from .errors import ValidationError
from .flows import FanOut, Flow, Ref, Write
from .schema import Schema, TableSchema
from .spec import FlowSpec, column_of

JOIN_PREFIX = schema_rules.JOIN_PREFIX
COPY_PREFIX = schema_rules.COPY_PREFIX
COMPANION_SUFFIX = "_follows"
# beside m*, k*, v*: the version a row was derived (or left) at, and whether it left (kept as gone for a while)
INDEX_COLUMNS = (("async_version", "bigint"), ("async_gone", "boolean"))
# beside the fan-out table's columns: a row's change number, its expiry, whether it went (kept as gone for a while)
COPY_COLUMNS = (("async_n", "bigint"), ("async_expires", "bigint"), ("async_gone", "boolean"))
COMPANION_EVENTS = ["delete", "insert", "update"]
COPIED_OPTIONS = ("read_consistency", "write_consistency", "queue", "page_size", "start_delay_ms", "retry",
                  "overflow", "backup")


def join_table(flow: str) -> str:
    """The join index of the flow's following fan-out (in its target's keyspace)."""
    return JOIN_PREFIX + flow


def copy_table(flow: str) -> str:
    """The copy of the fan-out table the flow's companion keeps (in the target's keyspace)."""
    return COPY_PREFIX + flow


def companion_name(flow: str) -> str:
    return flow + COMPANION_SUFFIX


def main_of(spec: Mapping | FlowSpec | None) -> str | None:
    """The main flow of a companion spec; None for any other spec (and for none)."""
    if spec is None:
        return None
    follows = FlowSpec.parse(spec).follows
    return follows.flow if follows else None


def companions_of(deployed: Mapping[str, Mapping | FlowSpec], names: Iterable[str]) -> list[str]:
    """The deployed companions of the flows ``names`` (what waiting for, pausing or resuming those flows covers too)."""
    wanted = set(names)
    return sorted(n for n, s in deployed.items() if main_of(s) in wanted)


def _typed(schema_table: TableSchema, column: str) -> str:
    return schema_rules.norm_type(schema_table.columns[column])


def _refuse_single_cell(flow: Flow, table: TableSchema, ref: Ref, into: str, where: str) -> None:
    """A following fan-out copies one cell per value: refuse a static column or a non-frozen collection or UDT."""
    cql_type = table.columns[ref.column]
    if ref.column in table.static:
        what = "a static column"
    elif schema_rules.multi_cell(cql_type):
        what = f"a non-frozen collection or user-defined type ({cql_type})"
    else:
        return
    raise ValidationError(flow.name, f"the following fan-out over '{where}' copies '{ref}' into {into}, "
                                     f"{what} of '{table.qualified}': a following fan-out copies single-cell values "
                                     "(keep it in a frozen or a regular column, or drop follow=True)")


def compile_follow(flow: Flow, schema: Schema, src: TableSchema, writes: Sequence[tuple[FanOut | None, Write]],
                   targets: list[dict]) -> None:
    """Turn the compiled target of the flow's following fan-out (if any) into a following one, in place: force it to
    lineage, give its ``fanout`` the ``follow``, and insert the join index target right before it. ``writes`` and
    ``targets`` are parallel (compile_flow's, before the aggregates)."""
    for fanout, write in writes:
        if fanout is not None and fanout.recent is not None and not fanout.follow:
            raise ValidationError(flow.name, f"the fan-out over '{fanout.table}' into '{write.target}' has a recency "
                                             "bound (recent=) but does not follow its table: the bound is kept for a "
                                             "fan-out with follow=True")
    following = [i for i, (fanout, _) in enumerate(writes) if fanout is not None and fanout.follow]
    if not following:
        return
    if len(following) > 1:
        where = ", ".join(f"'{writes[i][0].table}' into '{writes[i][1].target}'" for i in following)
        raise ValidationError(flow.name, f"a flow has at most one following fan-out (follow=True), found {len(following)}: "
                                         f"{where}; follow in one flow per fan-out")
    [i] = following
    fanout, write = writes[i]
    target = targets[i]
    fks, fname = fanout.fanout_table
    fan = schema_rules.table(flow, schema, fks, fname, "fan-out table")
    where = fan.qualified
    counters = sorted(c for c in fan.columns if _typed(fan, c) == "counter")
    if counters:
        raise ValidationError(flow.name, f"the following fan-out's table '{where}' is a counter table (column(s) "
                                         f"{', '.join(counters)}): no write to it carries its rows' values to follow")
    for column, ref in write.columns.items():
        table = src if ref.scope == "source" else fan
        _refuse_single_cell(flow, table, ref, f"column '{column}' of '{write.target}'", where)
    for column in target["partition_key"] + target["clustering"]:
        scope, _, name = str(write.columns.get(column, "")).partition(".")
        if scope == "row" and name not in fan.primary_key:
            raise ValidationError(flow.name, f"the key column '{column}' of '{write.target}' comes from '{scope}.{name}', "
                                             f"a non-key column of the following fan-out's table '{where}': an unfollow "
                                             "names its row by its key alone; key the target by the fan-out table's key")
    _check_shared_table(flow, targets, i)
    table = (target["keyspace"], target["table"])
    if any(step.target_table == table for step in flow.aggregates()):
        raise ValidationError(flow.name, f"an aggregate of the flow writes '{write.target}', which its following "
                                         "fan-out writes: a table holds one step's rows; give the aggregate a table "
                                         "of its own")
    schema_rules.check_backup_map(flow, schema, fan)     # the companion's tasks are backed up beside the fan-out table
    ks = target["keyspace"]
    index, types = _index_target(flow, src, fan, fanout, write, ks)
    _check_table(flow, schema, ks, join_table(flow.name), {**types, **dict(INDEX_COLUMNS)},
                 (index["partition_key"], index["clustering"]), "join index")
    fan_key = list(fan.primary_key)
    kept = [c for c in target["fanout"]["columns"] if c not in fan_key]
    copy_types = {c: _typed(fan, c) for c in fan_key + kept}
    clash = sorted(set(copy_types) & {c for c, _ in COPY_COLUMNS})
    if clash:
        raise ValidationError(flow.name, f"the following fan-out's table '{where}' has column(s) {', '.join(clash)}, "
                                         f"which its copy '{ks}.{copy_table(flow.name)}' keeps for itself")
    _check_table(flow, schema, ks, copy_table(flow.name), {**copy_types, **dict(COPY_COLUMNS)},
                 (list(fan.partition_key), list(fan.clustering)), "copy of the fan-out table")
    target["mode"] = "lineage"
    target["fanout"]["follow"] = {"index": i, "keyspace": ks, "table": copy_table(flow.name)}
    if fanout.recent is not None:
        target["fanout"]["follow"]["recent"] = _recent(flow, src, fanout, write, target)
    targets.insert(i, index)


RECENT_TYPES = ("timeuuid", "timestamp")


def _recent(flow: Flow, src: TableSchema, fanout: FanOut, write: Write, target: Mapping) -> dict:
    """The recency bound's spec: the source's time key column (and its type), the target's key column holding it,
    the seconds a row stays."""
    column = fanout.recent.by.column
    where = f"the recency bound of the fan-out over '{fanout.table}'"
    if column not in src.primary_key or _typed(src, column) not in RECENT_TYPES:
        found = "not a column of it" if column not in src.columns else f"{_typed(src, column)}" + (
            "" if column in src.primary_key else ", not in its primary key")
        raise ValidationError(flow.name, f"{where} counts from source.{column}, which must be a timeuuid or timestamp "
                                         f"column of the primary key of '{src.qualified}' (found: {found}): a row's "
                                         "time must never change, so that every write of its rows ends at one time")
    held = [c for c in target["partition_key"] + target["clustering"] if write.columns.get(c) == fanout.recent.by]
    if not held:   # a lineage target's key holds the source's (validate refuses one that does not): a safeguard
        raise ValidationError(flow.name, f"{where} counts from source.{column}, which no primary key column of "
                                         f"'{write.target}' holds: map it into the target's key (as a timeline holds "
                                         "tweet_id), so a row's age can be read from the target too")
    return {"column": column, "type": _typed(src, column), "target_column": held[0],
            "seconds": fanout.recent.seconds}


def _index_target(flow: Flow, src: TableSchema, fan: TableSchema, fanout: FanOut, write: Write,
                  ks: str) -> tuple[dict, dict[str, str]]:
    """The join index target and the types of its columns (those of the source columns they hold)."""
    columns: dict[str, str] = {}
    types: dict[str, str] = {}
    matched: set[str] = set()
    for n, key in enumerate(fan.partition_key):
        ref = fanout.match[key]
        columns[f"m{n}"], types[f"m{n}"] = str(ref), _typed(src, ref.column)
        matched.add(ref.column)
    for j, key in enumerate(src.primary_key):
        columns[f"k{j}"], types[f"k{j}"] = f"source.{key}", _typed(src, key)
    values: list[str] = []
    for ref in write.columns.values():
        if (ref.scope == "source" and ref.column not in src.primary_key and ref.column not in matched
                and ref.column not in values):
            values.append(ref.column)
    for n, column in enumerate(values):
        columns[f"v{n}"], types[f"v{n}"] = f"source.{column}", _typed(src, column)
    moving = sorted(matched - set(src.primary_key))
    return {"keyspace": ks, "table": join_table(flow.name),
            "partition_key": [f"m{n}" for n in range(len(fan.partition_key))],
            "clustering": [f"k{j}" for j in range(len(src.primary_key))],
            "columns": columns, "fanout": None, "mode": "lineage", "lineage_columns": moving,
            "join_index": True}, types


def _check_shared_table(flow: Flow, targets: Sequence[dict], i: int) -> None:
    """Another target of the flow may write the following target's table only with the same columns: a row both
    derive (an author's own timeline row is also a follower's row) is rewritten whole by either, and a follow
    rewrites it by the following target's columns alone."""
    mine = targets[i]
    for n, other in enumerate(targets):
        if n == i or (other["keyspace"], other["table"]) != (mine["keyspace"], mine["table"]):
            continue
        if set(other["columns"]) != set(mine["columns"]):
            table = f"{mine['keyspace']}.{mine['table']}"
            raise ValidationError(flow.name, f"another target of the flow writes '{table}', which its following "
                                             f"fan-out writes, with other columns ({', '.join(sorted(other['columns']))} "
                                             f"instead of {', '.join(sorted(mine['columns']))}): the rows they share "
                                             "would be partly one step's and partly the other's; map the same columns")


def _check_table(flow: Flow, schema: Schema, ks: str, name: str, types: Mapping[str, str],
                 layout: tuple[list[str], list[str]], what: str) -> None:
    """A table ``deploy`` creates must fit Cassandra's limits and, if a table of its name exists, be that table."""
    if len(name) > backup_map.MAX_TABLE_NAME:
        raise ValidationError(flow.name, f"the name of its following fan-out's {what} '{ks}.{name}' is too long "
                                         f"({len(name)} characters, Cassandra allows "
                                         f"{backup_map.MAX_TABLE_NAME}); give the flow a shorter name")
    existing = schema.table(ks, name)
    if existing is None:
        return
    found = {c: schema_rules.norm_type(t) for c, t in existing.columns.items()}
    if found != dict(types) or (list(existing.partition_key), list(existing.clustering)) != layout:
        raise ValidationError(flow.name, f"the table '{existing.qualified}' exists but is not the {what} this "
                                         f"following fan-out needs (columns {found}, primary key "
                                         f"{_key(existing.partition_key, existing.clustering)}; expected columns "
                                         f"{dict(types)}, primary key {_key(*layout)}); drop it, the deploy creates it")


def _key(partition_key: Sequence[str], clustering: Sequence[str]) -> str:
    return "(" + ", ".join([f"({', '.join(partition_key)})", *clustering]) + ")"


def companion(spec: Mapping | FlowSpec, schema: Schema) -> dict | None:
    """The companion spec of a compiled main spec with a following fan-out (None without one)."""
    main = FlowSpec.parse(spec)
    target = main.following_target
    if target is None:
        return None
    at = main.targets.index(target)
    fan = schema.table(target.fanout.keyspace, target.fanout.table)
    out = {"name": companion_name(main.name),
           "source": {"keyspace": fan.keyspace, "table": fan.name, "partition_key": list(fan.partition_key),
                      "clustering": list(fan.clustering), "columns": dict(fan.columns)},
           "events": list(COMPANION_EVENTS)}
    out.update({option: copy.deepcopy(main.doc[option]) for option in COPIED_OPTIONS})
    out.update({"handler": None, "targets": [],
                "follows": copy.deepcopy({"flow": main.name, "source": main.doc["source"],
                                          "index": main.doc["targets"][target.fanout.follow.index],
                                          "target": main.doc["targets"][at]})})
    return out


def with_companion(spec: dict, schema: Schema) -> list[dict]:
    """A compiled spec, followed by its companion when it has a following fan-out."""
    return [spec] + [c for c in [companion(spec, schema)] if c is not None]


def check_companion_names(specs: Sequence[Mapping], deployed: Mapping[str, Mapping]) -> None:
    """Refuse a companion named like a user flow of the deploy or a deployed one, and a user flow named like a
    deployed flow's companion: either would replace the other's row of async_triggers.flows."""
    check_follow_kept(specs, deployed)
    typed = [FlowSpec.parse(s) for s in specs]
    counts = Counter(s.name for s in typed)
    for spec in typed:
        main, other = main_of(spec), deployed.get(spec.name)
        if main is None and other is not None and main_of(other) is not None:
            raise ValidationError(spec.name, f"a deployed flow of this name is the companion of flow "
                                             f"'{main_of(other)}' (its following fan-out): name this flow "
                                             f"otherwise, or drop '{main_of(other)}' first")
        if main is not None and (counts[spec.name] > 1 or (other is not None and main_of(other) != main)):
            raise ValidationError(main, f"its following fan-out needs a companion flow named '{spec.name}', "
                                        "which is the name of another flow; rename one of them")


def check_follow_kept(specs: Sequence[Mapping], deployed: Mapping[str, Mapping]) -> None:
    """Refuse turning a deployed flow's follow on or off in place: the join index takes a position among its targets,
    which the lineage entries of its rows name, and the copy starts empty; dropped and deployed again, then
    backfilled, the flow starts from what the tables hold."""
    for spec in map(FlowSpec.parse, specs):
        old = deployed.get(spec.name)
        if old is None:
            continue
        old = FlowSpec.parse(old)
        if spec.follows is not None or old.handler or spec.handler:
            continue
        now, before = spec.following_target is not None, old.following_target is not None
        if now != before:
            raise ValidationError(spec.name, f"the deployed flow's fan-out {'does not follow' if now else 'follows'} its "
                                             f"table and this version's {'does' if now else 'does not'}: drop the flow "
                                             f"(ctl trigger drop {spec.name}), deploy it again and backfill it "
                                             "(ctl trigger backfill)")


def to_hold(session, specs: Sequence[Mapping], deployed: Mapping[str, Mapping]) -> list[str]:
    """The flows to deploy paused: a following flow not deployed yet whose fan-out table has rows. Its tasks fan out
    over the copy, so until the backfill has copied those rows a task would leave out fan-out rows that exist, under
    a version newer than the backfill's; paused, the tasks wait in the backup maps until the copy is whole."""
    out = []
    for spec in map(FlowSpec.parse, specs):
        target = spec.following_target
        if target is None or spec.name in deployed:
            continue
        fan = target.fanout
        rows = session.execute(f'SELECT * FROM "{fan.keyspace}"."{fan.table}" LIMIT 1')
        if rows.one() is not None:
            out.append(spec.name)
    return out


def written_tables(spec: Mapping | FlowSpec) -> list[str]:
    """The tables a companion spec writes: its target's and the copy; none for any other spec."""
    follows = FlowSpec.parse(spec).follows
    if follows is None:
        return []
    return [follows.target.qualified, follows.target.fanout.follow.qualified]


def captured_columns(spec: Mapping | FlowSpec) -> list[str]:
    """The columns a companion's tasks carry: the non-key columns of the fan-out table its target uses."""
    typed = FlowSpec.parse(spec)
    key = set(typed.source.key)
    return sorted(c for c in typed.follows.target.fanout.columns if c not in key)


def tables(specs: Iterable[Mapping | FlowSpec]) -> list[dict]:
    """The join index of each main spec and the copy of each companion, as the deploy template creates them."""
    out = []
    for spec in map(FlowSpec.parse, specs):
        for t in spec.targets:
            if t.join_index:
                typed = {c: spec.source.columns[column_of(e)[1]] for c, e in t.columns.items()}
                out.append({"keyspace": t.keyspace, "table": t.table,
                            "comment": f"join index of the following fan-out of flow {spec.name}: a row per "
                                       "source row, partitioned by its match value",
                            "columns": {**typed, **dict(INDEX_COLUMNS)},
                            "partition_key": list(t.partition_key), "clustering": list(t.clustering)})
        if spec.follows is not None:
            source, fanout = spec.source, spec.follows.target.fanout
            key = list(source.key)
            kept = [c for c in fanout.columns if c not in key]
            out.append({"keyspace": fanout.follow.keyspace, "table": fanout.follow.table,
                        "comment": f"copy of {source.qualified} kept by flow {spec.name}: "
                                   "its rows with a change counter each",
                        "columns": {**{c: source.columns[c] for c in key + kept}, **dict(COPY_COLUMNS)},
                        "partition_key": list(source.partition_key), "clustering": list(source.clustering)})
    return out
