"""Asking the plugin to recompute groups of an aggregate (docs/design.md, "Aggregates"): the backfill of a flow with an
aggregate, and the repair of an aggregate table, do not write totals themselves. A total written from outside would
race the plugin's recomputes, which take a version of the group by compare-and-set and read its members after every
member write before theirs; so the job writes, per group, a timer due now in ``async_triggers.aggregate_timers``, the
node that executes the timers' partition recomputes the group by that same protocol within a control cycle, and the
job waits until every timer it wrote is gone.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Mapping, Sequence

from async_triggers.spec import FlowSpec, column_of

from . import ring

TIMER_TTL_SECONDS = 10 * 24 * 3600   # the plugin's AggregateTotals.TIMER_GRACE_SECONDS
WRITE_CONSISTENCY = "EACH_QUORUM"    # the lineage level: a quorum read in any data center meets it
Progress = Callable[[str], None]


def members_index(spec: FlowSpec, aggregate_table: str) -> int:
    """The index in the spec of the members target of ``aggregate_table`` (``keyspace.table``)."""
    for i, t in enumerate(spec.targets):
        if t.aggregate is not None and t.aggregate.qualified == aggregate_table:
            return i
    raise KeyError(aggregate_table)


def group_types(spec: FlowSpec, index: int) -> list[str]:
    """The CQL types of the members partition key (the group), in order."""
    members = spec.targets[index]
    return [spec.source.columns[column_of(members.columns[g])[1]] for g in members.partition_key]


def group_of_row(spec: FlowSpec, index: int, row: Mapping) -> tuple:
    """The group (members partition key values, in order) of a row of the aggregate table, by its key columns."""
    members = spec.targets[index]
    by_member = {m: c for c, m in members.aggregate.group.items()}
    return tuple(row[by_member[g]] for g in members.partition_key)


def _hour(seconds: int) -> int:
    return seconds // 3600


def request(session, spec: FlowSpec, index: int, groups: Iterable[Sequence]) -> int:
    """Writes a timer due now for each group; returns how many."""
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    types = group_types(spec, index)
    now = int(time.time())
    insert = session.prepare('INSERT INTO async_triggers.aggregate_timers ("flow", "hour", "due", "target", "group_key") '
                             "VALUES (?, ?, ?, ?, ?) USING TTL ?")
    insert.consistency_level = getattr(ConsistencyLevel, WRITE_CONSISTENCY)
    args = [(spec.name, _hour(now), now, index, ring.encode_key([ring.serialize(v, t) for v, t in zip(g, types)]),
             TIMER_TTL_SECONDS) for g in groups]
    for ok, result in execute_concurrent_with_args(session, insert, args, concurrency=64, raise_on_first_error=False):
        if not ok:
            raise result
    return len(args)


def pending(session, spec: FlowSpec) -> int:
    """The flow's timers due by now, of this hour and the one before (those ``request`` writes)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    now = int(time.time())
    count = 0
    for hour in (_hour(now) - 1, _hour(now)):
        st = SimpleStatement('SELECT "due" FROM async_triggers.aggregate_timers WHERE "flow" = %s AND "hour" = %s '
                             'AND "due" <= %s', consistency_level=ConsistencyLevel.LOCAL_QUORUM)
        count += sum(1 for _ in session.execute(st, (spec.name, hour, now)))
    return count


def recompute(session, spec: FlowSpec, index: int, groups: Iterable[Sequence], progress: Progress, label: str,
              timeout: float = 600) -> int:
    """Requests the groups' recomputes and waits until the plugin has made them all; returns how many groups."""
    n = request(session, spec, index, groups)
    if not n:
        return 0
    table = spec.targets[index].aggregate.qualified
    progress(f"{label}: {n} group(s) of {table} to recompute (the plugin recomputes each, as a task does)")
    deadline = time.monotonic() + timeout
    while True:
        left = pending(session, spec)
        if not left:
            return n
        if time.monotonic() > deadline:
            raise TimeoutError(f"{label}: {left} recompute(s) of {table} still due after {timeout:.0f} s: is the "
                               "plugin running and the flow not paused? (ctl trigger status)")
        time.sleep(1)


def recompute_all(spark, session, spec: FlowSpec, source, fanout_dfs: Mapping[str, object], progress: Progress) -> int:
    """After a backfill wrote the members, every group of each aggregate is recomputed by the plugin: the groups the
    source rows have, and those the aggregate table holds (a group whose rows went while the flow was not deployed)."""
    from . import derive
    from .session import read_table

    done = 0
    for name, table in derive.aggregate_tables(spec).items():
        index = members_index(spec, name)
        members = table.members
        groups = derive.target_rows(members, source, fanout_dfs, list(members.partition_key)).distinct().collect()
        found = read_table(spark, table.keyspace, table.table, derive.primary_key(table)).collect()
        wanted = {tuple(r) for r in groups} | {group_of_row(spec, index, r.asDict()) for r in found}
        done += recompute(session, spec, index, sorted(wanted, key=repr), progress, f"backfill {spec.name}")
    return done
