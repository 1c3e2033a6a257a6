"""The tables of the ``async_triggers`` keyspace and of the backup maps: the one home of their layout.

A deploy creates them from here (templates/cql/deploy.cql.jinja); ``ctl trigger status``, ``ctl trigger dlq`` and the
chaos evidence read them by these names. The plugin writes and reads the same tables; its JUnit test
``KeyspaceContractTest`` checks every table and column it names against tests/golden/contract/keyspace.json, which
``contract()`` renders (tests/unit/test_contract.py keeps the file equal to it).
"""
from __future__ import annotations

import dataclasses
from typing import Collection

from . import backup_map

KEYSPACE = "async_triggers"


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]      # (name, CQL type), in the order of the CREATE TABLE
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...] = ()
    options: str = ""                         # the WITH clause, if any

    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    def primary_key(self) -> tuple[str, ...]:
        return self.partition_key + self.clustering


# ``paused``: set by ``ctl trigger pause``/``resume`` only (a deploy's INSERT leaves it as it is); null is running.
FLOWS = Table("flows", (("name", "text"), ("source_keyspace", "text"), ("source_table", "text"), ("spec", "text"),
                        ("version", "bigint"), ("paused", "boolean")), partition_key=("name",))

# Each node's plugin writes a row per flow every few seconds (with a TTL); ``ctl trigger status`` reads them.
FLOW_STATUS = Table("flow_status", (
    ("flow", "text"), ("node", "text"),
    ("pending", "bigint"), ("active", "bigint"), ("completed", "bigint"), ("failed", "bigint"),
    ("retried", "bigint"), ("oldest_pending_ms", "bigint"), ("workers", "int"), ("capacity", "int"),
    ("spilled", "bigint"), ("discarded", "bigint"),
    ("recovered", "bigint"), ("resumed", "bigint"), ("fanout_rows", "bigint"),
    ("backlog", "bigint"), ("last_capture", "timestamp"), ("last_scan", "timestamp"),
    ("paused", "boolean"),
    ("updated", "timestamp"),
), partition_key=("flow",), clustering=("node",))

# The images a lineage target's rows were derived from, per source row (docs/design.md, "Lineage"), each recorded at
# the version of the task that recorded it (``ts``; ``written``: the same, kept for the rows of a former plugin).
LINEAGE = Table("lineage", (("flow", "text"), ("source_key", "blob"), ("target_key", "blob"), ("ts", "bigint"),
                            ("written", "bigint")),
                partition_key=("flow", "source_key"), clustering=("target_key",))

# The source keys that have lineage entries, per source partition: a range or partition deletion of a source with
# clustering columns finds through it the rows whose derived rows it deletes (docs/design.md, "Write shapes").
LINEAGE_KEYS = Table("lineage_keys", (("flow", "text"), ("source_partition", "blob"), ("source_key", "blob")),
                     partition_key=("flow", "source_partition"), clustering=("source_key",))

# Each source row's lineage version: the timestamp of the rows its lineage targets' last task wrote, taken by a
# compare-and-set (Paxos) so that the task with the newest version read the row after every other had taken its own.
LINEAGE_VERSIONS = Table("lineage_versions", (("flow", "text"), ("source_key", "blob"), ("version", "bigint")),
                         partition_key=("flow", "source_key"))

# An aggregate's recomputes due when one of its members expires (docs/design.md, "Aggregates"): one partition per
# flow and hour of the due time (seconds); the first live replica of a partition fires its timers once due.
AGGREGATE_TIMERS = Table("aggregate_timers", (("flow", "text"), ("hour", "bigint"), ("due", "bigint"), ("target", "int"),
                                              ("group_key", "blob")),
                         partition_key=("flow", "hour"), clustering=("due", "target", "group_key"),
                         options="WITH gc_grace_seconds = 10800")   # a fired timer brought back only recomputes again

DEAD_LETTERS = Table("dead_letters", (
    ("flow", "text"), ("id", "timeuuid"), ("node", "text"), ("op", "text"), ("ts", "bigint"), ("source_key", "blob"),
    ("task", "blob"), ("error", "text"), ("attempts", "int"), ("failed_at", "timestamp"),
), partition_key=("flow",), clustering=("id",), options='WITH CLUSTERING ORDER BY ("id" DESC)')

# ``ctl trigger dlq retry`` asks a node to re-queue dead letters: one row per (node, flow, letter).
DEAD_LETTER_RETRIES = Table("dead_letter_retries", (("node", "text"), ("flow", "text"), ("id", "timeuuid")),
                            partition_key=("node",), clustering=("flow", "id"))

# ``ctl trigger backfill``: one row per token range a backfill run completed (the run is its start time), so a rerun
# after a crash skips the ranges done; ``ranges`` is the run's number of ranges, ``rows`` the derived rows written.
BACKFILL_PROGRESS = Table("backfill_progress", (
    ("flow", "text"), ("run", "timestamp"), ("range_start", "bigint"), ("range_end", "bigint"), ("ranges", "int"),
    ("source_rows", "bigint"), ("rows", "bigint"), ("done_at", "timestamp"),
), partition_key=("flow",), clustering=("run", "range_start"),
    options='WITH CLUSTERING ORDER BY ("run" DESC, "range_start" ASC)')

# ``ctl verify --ranges N``: one row per unit (token range) a verification run compared, and repaired with --repair;
# ``result`` is that unit's comparison as JSON; a rerun resumes an incomplete run started for the same mode,
# consistency level and specification (``spec_hash``).
VERIFY_PROGRESS = Table("verify_progress", (
    ("flow", "text"), ("run", "timestamp"), ("range_start", "bigint"), ("range_end", "bigint"), ("ranges", "int"),
    ("mode", "text"), ("consistency", "text"), ("spec_hash", "text"), ("result", "text"), ("done_at", "timestamp"),
), partition_key=("flow",), clustering=("run", "range_start"),
    options='WITH CLUSTERING ORDER BY ("run" DESC, "range_start" ASC)')

# ``ctl trigger deploy``/``drop`` add a row per flow they deploy or drop (review.py): its revision (1, 2, ...), the
# deploy's version (the epoch milliseconds the plugin orders by), who, through which contact point, and the
# specification deployed; ``ctl trigger history`` and ``show --revision`` read them. The plugin never does.
DEPLOYS = Table("deploys", (
    ("flow", "text"), ("revision", "int"), ("version", "bigint"), ("action", "text"), ("by", "text"), ("via", "text"),
    ("spec", "text"),
), partition_key=("flow",), clustering=("revision",), options='WITH CLUSTERING ORDER BY ("revision" DESC)')

TABLES = (FLOWS, FLOW_STATUS, LINEAGE, LINEAGE_KEYS, LINEAGE_VERSIONS, AGGREGATE_TIMERS, DEAD_LETTERS,
          DEAD_LETTER_RETRIES, BACKFILL_PROGRESS, VERIFY_PROGRESS, DEPLOYS)


def missing_columns(table: Table, existing: Collection[str]) -> list[tuple[str, str]]:
    """The columns of ``table`` an existing table lacks (one made by an older deploy), key columns left out (a key
    column cannot be added). ``existing``: its columns now; empty when there is no such table."""
    if not existing:
        return []
    return [(c, t) for c, t in table.columns if c not in existing and c not in table.primary_key()]


def flow_status_missing(existing: Collection[str]) -> list[tuple[str, str]]:
    return missing_columns(FLOW_STATUS, existing)


def contract() -> dict:
    """The layout as tests/golden/contract/keyspace.json holds it, for the plugin's test to check against."""
    return {
        "keyspace": KEYSPACE,
        "tables": {t.name: {"columns": dict(t.columns), "partition_key": list(t.partition_key),
                            "clustering": list(t.clustering)} for t in TABLES},
        "backup_map": {"prefix": backup_map.PREFIX, "key_column": backup_map.KEY_COLUMN,
                       "columns": dict(backup_map.VALUE_COLUMNS), "clustering": list(backup_map.CLUSTERING)},
    }
