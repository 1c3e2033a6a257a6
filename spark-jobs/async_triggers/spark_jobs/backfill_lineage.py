"""The last step of a backfill (and of a repair) of a flow with lineage targets: the images it recorded that the source
rows no longer have are deleted, with their rows (docs/design.md, "Backfill").

The plugin's task records an image before it takes its row's version, and deletes every other recorded image of the
row, so a backfilled image is deleted by the next task of its row when that task reads the entries after the backfill
recorded it. One recorded after (a row changed while the backfill ran) would stay: so after its last range the backfill
reads ``async_triggers.lineage`` (the flow's entries), then the source again at ALL, and an entry whose image the row
no longer has (or whose row is gone) has its rows deleted at the entry's own timestamp, then the entry: that shadows
exactly what was written with it (the backfill's rows at the source row's write time, a task's at its version), and
never a task's rows of a newer version. The entries are read before the source: an entry recorded later belongs to a
task whose own read of the row came after it.

Spark finds the stale entries (a join of the two scans); they are few, and the driver deletes their rows with the
Python driver, recomputing a fan-out from the image's values as the plugin does.
"""
from __future__ import annotations

import time
from typing import Callable, Mapping

from async_triggers.spec import FlowSpec, Target

from . import derive, follows, ring


def stale_entries(lineage_df, fresh_entries, flow: str):
    """The entries of ``flow`` (``source_key``, ``target_key``, ``at``: the timestamp its rows were written at) that
    ``fresh_entries`` (the entries the source rows' images give now: ``source_key``, ``target_key``) lack."""
    from pyspark.sql import functions as F

    entries = lineage_df.where((F.col("flow") == flow) & F.col("target_key").isNotNull()).select(
        "source_key", "target_key", F.greatest(F.col("ts"), F.coalesce(F.col("written"), F.col("ts"))).alias("at"))
    return entries.join(fresh_entries.select("source_key", "target_key"), on=["source_key", "target_key"], how="left_anti")


def _values(spec: FlowSpec, target: Target, source_key: bytes, image: list[bytes]) -> dict:
    """The source row as far as a lineage entry knows it: its key and the image (driver values)."""
    types = spec.source.columns
    values = {c: ring.deserialize(b, types[c]) for c, b in zip(spec.source.key, ring.decode_key(source_key))}
    values.update({c: ring.deserialize(b, types[c]) for c, b in zip(target.lineage_columns, image)})
    return values


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _fanout_rows(session, target: Target, values: Mapping) -> list[dict]:
    fan = target.fanout
    if fan is None:
        return [{}]
    match = list(fan.match.items())
    bound = [values.get(derive.parse_ref(e)[1]) for _, e in match]
    if any(v is None or v in ("", b"") for v in bound):
        return []   # a fan-out table's partition key is never null or empty
    where = " AND ".join(f"{_quoted(c)} = %s" for c, _ in match)
    # a fan-out that follows its table: every row of its copy, gone or not (as the plugin deletes a former image's)
    table = fan.follow or fan
    cql = f"SELECT * FROM {_quoted(table.keyspace)}.{_quoted(table.table)} WHERE {where}"
    return [r._asdict() for r in session.execute(_quorum(cql), bound)]


def _quorum(cql: str):
    """Fan-out reads and derived deletes: a quorum of the local data center (the plugin's flows are DC-local)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return SimpleStatement(cql, consistency_level=ConsistencyLevel.LOCAL_QUORUM)


def delete_rows(session, spec: FlowSpec, index: int, source_key: bytes, target_key: bytes, delete_at: int) -> int:
    """Deletes the rows an image of target ``index`` derived, at ``delete_at``: the full key, or its longest known
    prefix of a known partition key (as the plugin's delete). Returns the number of DELETEs sent."""
    image = ring.decode_key(target_key)[1:]
    targets = spec.targets
    if not 0 <= index < len(targets) or targets[index].mode != "lineage" \
            or len(image) != len(targets[index].lineage_columns):
        return 0     # an entry this version does not trace (or a former plugin's sentinel or floor) is only dropped
    target = targets[index]
    values = _values(spec, target, source_key, image)
    if spec.following_target is not None:
        # the rows of a version are stamped within it (follows.SPACING): all of them go, no newer version's
        version = (delete_at // follows.SPACING) * follows.SPACING
        delete_at = version + follows.SPACING - 1
        if target.join_index:
            return _mark_gone(session, target, values, version + follows.SPACING)
    sent = 0
    for fan_row in _fanout_rows(session, target, values):
        columns, bound = [], []
        for column in derive.primary_key(target):
            scope, ref = derive.parse_ref(target.columns[column])
            value = (values if scope == "source" else fan_row).get(ref)
            if value is None:
                break
            columns.append(column)
            bound.append(value)
        if len(columns) < len(target.partition_key) or any(v in ("", b"") for v in bound[:len(target.partition_key)]):
            continue
        where = " AND ".join(f"{_quoted(c)} = %s" for c in columns)
        session.execute(_quorum(f"DELETE FROM {_quoted(target.keyspace)}.{_quoted(target.table)} "
                                f"USING TIMESTAMP {int(delete_at)} WHERE {where}"), bound)
        sent += 1
    return sent


def _mark_gone(session, index: Target, values: Mapping, version: int) -> int:
    """A join index row the source row left is kept as gone at ``version`` (the plugin's Lineage.markGone)."""
    key = []
    for column in derive.primary_key(index):
        value = values.get(derive.parse_ref(index.columns[column])[1])
        if value is None or (column in index.partition_key and value in ("", b"")):
            return 0
        key.append(value)
    cql, bound = follows.gone_statement(index, version)
    session.execute(_quorum(cql), bound + key)
    return 1


def converge(spark, session, spec: FlowSpec, progress: Callable[[str], None], label: str | None = None,
             fresh_source: Callable[[], object] | None = None) -> int:
    """Deletes every recorded image of ``spec`` that its source row no longer has, and its rows; returns how many.
    ``fresh_source`` reads the source again (default ``source_rows.read_images``, at ALL); ``label`` starts the progress
    line (default: ``backfill <flow>``)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    from async_triggers import keyspace

    from . import source_rows
    from .session import read_table

    started = time.monotonic()
    lineage = read_table(spark, keyspace.KEYSPACE, keyspace.LINEAGE.name,
                         ["flow", "source_key", "target_key", "ts", "written"]).persist()
    try:
        lineage.count()   # the entries first: one recorded after this read belongs to a task that reads the row later
        # the images the rows give now: their key and image columns at ALL, without the other columns and any
        # cell's write time and TTL, which the images do not need
        source = (fresh_source() if fresh_source else source_rows.read_images(
            spark, spec, {"spark.cassandra.input.consistency.level": "ALL"})).persist()
        fresh = None
        for index, target in enumerate(spec.targets):
            if target.mode == "lineage":
                rows = source_rows.lineage_rows(spec, index, source).select("source_key", "target_key")
                fresh = rows if fresh is None else fresh.union(rows)
        try:
            stale = stale_entries(lineage, fresh, spec.name).collect() if fresh is not None else []
        finally:
            source.unpersist()
    finally:
        lineage.unpersist()
    if fresh is None:
        return 0
    delete_entry = SimpleStatement(
        f"DELETE FROM {_quoted(keyspace.KEYSPACE)}.{_quoted(keyspace.LINEAGE.name)} USING TIMESTAMP %s "
        'WHERE "flow" = %s AND "source_key" = %s AND "target_key" = %s',
        consistency_level=ConsistencyLevel.EACH_QUORUM)   # as the plugin's lineage writes: seen from either DC
    for entry in stale:
        source_key, target_key, at = bytes(entry["source_key"]), bytes(entry["target_key"]), int(entry["at"])
        index = int.from_bytes(ring.decode_key(target_key)[0], "big", signed=True) if ring.decode_key(target_key) else -1
        delete_rows(session, spec, index, source_key, target_key, at)
        session.execute(delete_entry, (at, spec.name, source_key, target_key))
    progress(f"{label or 'backfill ' + spec.name}: lineage converged, {len(stale)} image(s) the source no longer "
             f"has and their rows removed, in {time.monotonic() - started:.1f} s")
    return len(stale)
