"""The replica backup map of a source table (docs/design.md, "Replica backup maps"): its name and layout.

The map lives in the source's keyspace and has the source's partition key types in the same order, so its
rows have the source rows' tokens and live on exactly the source row's replicas: each replica writes there the
entries of the tasks of a write as it applies the write (the capture index), and the node that executes a task
deletes its entry on every replica.
"""
from __future__ import annotations

from typing import Sequence

PREFIX = "async_backup_"
# Cassandra 5.0 (SchemaConstants.TABLE_NAME_LENGTH): 255 characters of a file name, less the table id's 32 hex
# digits and a dash, which make the table's data directory name
MAX_TABLE_NAME = 222
GC_GRACE_SECONDS = 10_800   # 3 h, the hint window: hints carry a completion delete to a replica that was down
COMPACTION = {"class": "SizeTieredCompactionStrategy", "tombstone_threshold": "0.05",
              "tombstone_compaction_interval": "300", "unchecked_tombstone_compaction": "true"}
CLUSTERING = ("flow", "id")
KEY_COLUMN = "key_{i}"   # the i-th partition key column of the source
# id: the task's id, the same on every replica (a name-based UUID of the flow, the source key and the write's
# timestamp); captured: when this replica captured it (the safety net's age)
VALUE_COLUMNS = (("flow", "text"), ("id", "uuid"), ("task", "blob"), ("captured", "timestamp"), ("resume", "blob"))


def table_name(source_table: str) -> str:
    """The name of the backup map of the source table ``source_table`` (same keyspace)."""
    return PREFIX + source_table


def is_backup_map(table: str) -> bool:
    return table.startswith(PREFIX)


def key_columns(partition_key_types: Sequence[str]) -> list[tuple[str, str]]:
    """The map's partition key: key_0, key_1, ... with the source's partition key types, in order."""
    return [(KEY_COLUMN.format(i=i), t) for i, t in enumerate(partition_key_types)]


def columns(partition_key_types: Sequence[str]) -> list[tuple[str, str]]:
    """Every column of the map with its CQL type, partition key first."""
    return key_columns(partition_key_types) + list(VALUE_COLUMNS)


def comment(keyspace: str, source_table: str) -> str:
    return f"async triggers: backup map of the tasks of {keyspace}.{source_table}"
