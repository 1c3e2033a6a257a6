"""The last step of a backfill of a flow with lineage targets: the plugin's convergence (execute/Lineage.converge),
run once over every source key of the flow after the backfill's own entries are written.

Per (source key, target), every entry older than the newest has the rows derived from its image deleted, and the
entry too: at the newest timestamp minus one when the newest entry is an image (its own rows, at the newest
timestamp, survive even where the old image derives the same row), at the newest timestamp when it is a sentinel (a
deleted source row, or one without an image). The backfill reads after all of its writes, so whichever of it and a
live task read last sees both entries: an image the backfill read before a live update propagated cannot survive.

Spark finds the stale entries (a scan of ``async_triggers.lineage``, one flow's partitions kept); they are few (a
source row updated while its backfill ran), and the driver deletes their rows with the Python driver, recomputing a
fan-out from the image's values as the plugin does.
"""
from __future__ import annotations

from typing import Callable, Mapping

from . import derive, ring

SENTINEL_LENGTH = 8     # KeyCodec of the target's index alone: a 4-byte length and a 4-byte int
# a target's floor (execute/LineagePartition): the newest deletion of one of its images' rows, which a return to that
# image writes its older cells above; under the target index 2**31 - 1 - index, and no entry of a target
FLOORS = 2**31 - 1 - 0xFFFF


def floor_key(index: int, spared: list[bytes] | tuple = ()) -> bytes:
    """The floor's ``target_key``; a fan-out's deletion that spared the newest image's rows records it under that
    image (execute/LineagePartition.floorExcept): a task of that image need not write above it."""
    return ring.encode_key([(2**31 - 1 - index).to_bytes(4, "big")] + [bytes(c) for c in spared])


def stale_entries(lineage_df, flow: str):
    """The entries of ``flow`` older than the newest entry of their (source key, target), each with
    ``target`` (its index), ``delete_at`` and ``newest_ts``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = lineage_df.where((F.col("flow") == flow) & F.col("target_key").isNotNull()).withColumn(
        "target", F.conv(F.hex(F.substring("target_key", 5, 4)), 16, 10).cast("int")) \
        .where(F.col("target") < FLOORS)
    # the plugin's newest: the highest ts, the first in clustering order among equals (a sentinel sorts first)
    newest = F.max(F.struct(F.col("ts"), (-F.length("target_key")).alias("neg_len"), F.col("target_key"))) \
        .over(Window.partitionBy("source_key", "target"))
    df = df.withColumn("newest", newest)
    delete_at = F.when(F.col("newest.neg_len") == -SENTINEL_LENGTH, F.col("newest.ts")) \
        .otherwise(F.col("newest.ts") - 1)
    return df.where(F.col("ts") < F.col("newest.ts")).select(
        "source_key", "target_key", "ts", "target", F.col("newest.ts").alias("newest_ts"), delete_at.alias("delete_at"),
        F.col("newest.target_key").alias("newest_key"))


def _values(spec: Mapping, target: Mapping, source_key: bytes, image: list[bytes]) -> dict:
    """The source row as far as a lineage entry knows it: its key and the image (driver values)."""
    types = spec["source"]["columns"]
    key = list(spec["source"]["partition_key"]) + list(spec["source"].get("clustering") or [])
    values = {c: ring.deserialize(b, types[c]) for c, b in zip(key, ring.decode_key(source_key))}
    values.update({c: ring.deserialize(b, types[c]) for c, b in zip(target["lineage_columns"], image)})
    return values


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _fanout_rows(session, target: Mapping, values: Mapping) -> list[dict]:
    fan = target.get("fanout")
    if not fan:
        return [{}]
    match = list(fan["match"].items())
    where = " AND ".join(f"{_quoted(c)} = %s" for c, _ in match)
    cql = f"SELECT * FROM {_quoted(fan['keyspace'])}.{_quoted(fan['table'])} WHERE {where}"
    return [r._asdict() for r in session.execute(_quorum(cql), [values.get(derive.parse_ref(e)[1]) for _, e in match])]


def _quorum(cql: str):
    """Fan-out reads and derived deletes: a quorum of the local data center (the plugin's flows are DC-local)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return SimpleStatement(cql, consistency_level=ConsistencyLevel.LOCAL_QUORUM)


def sparing(spec: Mapping, index: int) -> bool:
    """A lineage fan-out whose table no other target of the flow writes (execute/Lineage.sparesNewest): the deletion
    of its older images' rows spares the newest image's rows, whose cells may keep their own timestamps."""
    targets = spec["targets"]
    if not 0 <= index < len(targets) or targets[index].get("mode") != "lineage" or not targets[index].get("fanout"):
        return False
    table = (targets[index]["keyspace"], targets[index]["table"])
    return not any(i != index and (t["keyspace"], t["table"]) == table for i, t in enumerate(targets))


def derived_keys(session, spec: Mapping, index: int, source_key: bytes, target_key: bytes) -> set[tuple]:
    """The primary keys of the rows an image of target ``index`` derives (its fan-out read now)."""
    image = ring.decode_key(target_key)[1:]
    target = spec["targets"][index]
    if not image or len(image) != len(target.get("lineage_columns") or []):
        return set()
    values = _values(spec, target, source_key, image)
    keys = set()
    for fan_row in _fanout_rows(session, target, values):
        key = tuple((values if scope == "source" else fan_row).get(ref)
                    for scope, ref in (derive.parse_ref(target["columns"][c]) for c in derive.primary_key(target)))
        if None not in key:
            keys.add(key)
    return keys


def delete_rows(session, spec: Mapping, index: int, source_key: bytes, target_key: bytes, delete_at: int,
                spared: set[tuple] = frozenset()) -> int:
    """Deletes the rows an old image of target ``index`` derived, at ``delete_at``, but those whose key is in
    ``spared``: the full key, or its longest known prefix of a known partition key (as the plugin's delete). Returns
    the number of DELETEs sent."""
    image = ring.decode_key(target_key)[1:]
    targets = spec["targets"]
    if not image or not 0 <= index < len(targets) or targets[index].get("mode") != "lineage" \
            or len(image) != len(targets[index].get("lineage_columns") or []):
        return 0     # a sentinel derived nothing; an entry this version does not trace is only dropped
    target = targets[index]
    values = _values(spec, target, source_key, image)
    sent = 0
    for fan_row in _fanout_rows(session, target, values):
        columns, bound = [], []
        for column in derive.primary_key(target):
            scope, ref = derive.parse_ref(target["columns"][column])
            value = (values if scope == "source" else fan_row).get(ref)
            if value is None:
                break
            columns.append(column)
            bound.append(value)
        if len(columns) < len(target["partition_key"]) or tuple(bound) in spared:
            continue
        where = " AND ".join(f"{_quoted(c)} = %s" for c in columns)
        session.execute(_quorum(f"DELETE FROM {_quoted(target['keyspace'])}.{_quoted(target['table'])} "
                                f"USING TIMESTAMP {int(delete_at)} WHERE {where}"), bound)
        sent += 1
    return sent


def converge(spark, session, spec: Mapping, progress: Callable[[str], None], label: str | None = None) -> int:
    """Deletes every stale image of ``spec``'s lineage and its rows; returns how many images it removed.
    ``label`` starts the progress line (default: ``backfill <flow>``)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    from async_triggers import keyspace

    from .session import read_table

    lineage = read_table(spark, keyspace.KEYSPACE, keyspace.LINEAGE.name, ["flow", "source_key", "target_key", "ts"])
    stale = stale_entries(lineage, spec["name"]).collect()
    delete_entry = SimpleStatement(
        f"DELETE FROM {_quoted(keyspace.KEYSPACE)}.{_quoted(keyspace.LINEAGE.name)} USING TIMESTAMP %s "
        'WHERE "flow" = %s AND "source_key" = %s AND "target_key" = %s',
        consistency_level=ConsistencyLevel.EACH_QUORUM)   # as the plugin's lineage writes: seen from either DC
    write_floor = SimpleStatement(
        f"INSERT INTO {_quoted(keyspace.KEYSPACE)}.{_quoted(keyspace.LINEAGE.name)} "
        '("flow", "source_key", "target_key", "ts", "written") VALUES (%s, %s, %s, %s, %s) USING TIMESTAMP %s',
        consistency_level=ConsistencyLevel.EACH_QUORUM)
    targets = spec["targets"]
    for entry in stale:
        index, at = entry["target"], entry["delete_at"]
        source_key, newest_key = bytes(entry["source_key"]), bytes(entry["newest_key"])
        spared, floor = frozenset(), None
        if sparing(spec, index) and len(bytes(entry["target_key"])) > SENTINEL_LENGTH:
            # as the plugin's convergence: the newest image's rows spared (its cells may be older than this
            # deletion), the floor recorded under that image; a sentinel spares none
            if len(newest_key) > SENTINEL_LENGTH:
                spared = derived_keys(session, spec, index, source_key, newest_key)
                floor = floor_key(index, ring.decode_key(newest_key)[1:])
            else:
                floor = floor_key(index)
        elif 0 <= index < len(targets) and not targets[index].get("fanout") \
                and len(bytes(entry["target_key"])) > SENTINEL_LENGTH:
            floor = floor_key(index)
        if floor is not None:
            # a deletion the source did not make: the floor first, as the plugin's convergence raises it
            session.execute(write_floor, (spec["name"], source_key, floor, at, at, at))
        delete_rows(session, spec, index, source_key, bytes(entry["target_key"]), at, spared)
        session.execute(delete_entry, (entry["delete_at"], spec["name"], bytes(entry["source_key"]),
                                       bytes(entry["target_key"])))
    progress(f"{label or 'backfill ' + spec['name']}: lineage converged, {len(stale)} older image(s) and their rows removed")
    return len(stale)
