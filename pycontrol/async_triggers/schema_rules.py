"""The rules a flow's tables and columns follow against the schema, shared by the validation of writes
(validate.py), aggregates (aggregates.py) and following fan-outs (follows.py): which tables a flow may name, the
names the plugin keeps for its own tables, how column types compare, and the backup map beside a source."""
from __future__ import annotations

import re

from . import backup_map
from .errors import ValidationError
from .flows import Flow, Ref
from .keyspace import KEYSPACE as RESERVED_KEYSPACE   # the plugin's own tables
from .schema import Schema, TableSchema

MEMBERS_PREFIX = "async_members_"   # an aggregate's members table (aggregates.py)
JOIN_PREFIX = "async_join_"         # a following fan-out's join index (follows.py)
COPY_PREFIX = "async_follows_"      # a following fan-out's copy of its fan-out table (follows.py)

TYPE_ALIASES = {"varchar": "text"}


def is_system(keyspace: str) -> bool:
    return keyspace.startswith("system")


def norm_type(cql_type: str) -> str:
    t = cql_type.replace(" ", "").lower()
    return TYPE_ALIASES.get(t, t)


def table(flow: Flow, schema: Schema, keyspace: str, table: str, role: str) -> TableSchema:
    qualified = f"{keyspace}.{table}"
    if is_system(keyspace):
        raise ValidationError(flow.name, f"{role} '{qualified}' is in a system keyspace; "
                                         "flows may not read from or write into system keyspaces")
    if keyspace == RESERVED_KEYSPACE:
        raise ValidationError(flow.name, f"{role} '{qualified}' is in the keyspace '{RESERVED_KEYSPACE}', "
                                         "which is reserved for the plugin")
    if backup_map.is_backup_map(table):
        raise ValidationError(flow.name, f"{role} '{qualified}' is named like a backup map: tables named "
                                         f"'{backup_map.PREFIX}<table>' are reserved for the plugin")
    for prefix, what, of in ((MEMBERS_PREFIX, "an aggregate's members table", "table"),
                             (JOIN_PREFIX, "a following fan-out's join index", "flow"),
                             (COPY_PREFIX, "a following fan-out's copy of its table", "flow")):
        if table.startswith(prefix):
            raise ValidationError(flow.name, f"{role} '{qualified}' is named like {what}: tables named "
                                             f"'{prefix}<{of}>' are reserved for the plugin")
    if keyspace not in schema.keyspaces:
        raise ValidationError(flow.name, f"keyspace '{keyspace}' of {role} '{qualified}' does not exist")
    found = schema.table(keyspace, table)
    if found is None:
        have = ", ".join(schema.tables_of(keyspace)) or "none"
        raise ValidationError(flow.name, f"{role} '{qualified}' does not exist (tables in '{keyspace}': {have})")
    return found


NATIVE_TYPES = frozenset({"ascii", "bigint", "blob", "boolean", "counter", "date", "decimal", "double", "duration",
                          "float", "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid",
                          "varint"})


def multi_cell(cql_type: str) -> bool:
    """Whether a column of this type holds one cell per element: a non-frozen collection or user-defined type."""
    t = norm_type(cql_type)
    if t.startswith(("set<", "list<", "map<")):
        return True
    return "<" not in t and t not in NATIVE_TYPES     # a UDT's name; a frozen one prints as frozen<name>


def check_same_type(flow: Flow, table: TableSchema, column: str, ref: Ref, ref_type: str) -> None:
    column_type = table.columns[column]
    element = re.match(r"^(?:frozen<)?(?:set|list)<(.*)>>?$", norm_type(ref_type))
    if column in table.primary_key and element and norm_type(column_type) == element.group(1):
        raise ValidationError(flow.name, f"column '{column}' of '{table.qualified}' is keyed by the elements of "
                                         f"'{ref}' ({ref_type}): a flow derives one row per source row, not one per "
                                         "element; key the target by the whole value (a frozen collection column), or "
                                         "keep the elements in a table of their own and index that")
    if norm_type(column_type) != norm_type(ref_type):
        raise ValidationError(flow.name, f"type mismatch for column '{column}' of '{table.qualified}': it is "
                                         f"{column_type}, but '{ref}' is {ref_type}")


def check_backup_map(flow: Flow, schema: Schema, src: TableSchema) -> None:
    """The backup map ``deploy`` creates beside the source must fit Cassandra's limits and, if a table of its
    name exists already, be one: same partition key types in the same order (else its rows would not live on
    the source rows' replicas), same columns."""
    name = backup_map.table_name(src.name)
    if len(name) > backup_map.MAX_TABLE_NAME:
        raise ValidationError(flow.name, f"the name of source table '{src.qualified}' is too long for its backup "
                                         f"map: '{name}' would have {len(name)} characters, Cassandra allows "
                                         f"{backup_map.MAX_TABLE_NAME} (so a source table name may have at most "
                                         f"{backup_map.MAX_TABLE_NAME - len(backup_map.PREFIX)})")
    existing = schema.table(src.keyspace, name)
    if existing is None:
        return
    want = [norm_type(src.columns[c]) for c in src.partition_key]
    have = [norm_type(existing.columns[c]) for c in existing.partition_key]
    if have != want:
        raise ValidationError(flow.name, f"the table '{existing.qualified}' exists but is not the backup map of "
                                         f"'{src.qualified}': its partition key types are ({', '.join(have)}), "
                                         f"the source's are ({', '.join(want)}); drop or rename it, the deploy "
                                         "creates the backup map")
    expected = {c: norm_type(t) for c, t in backup_map.columns(want)}
    found = {c: norm_type(t) for c, t in existing.columns.items()}
    if (found != expected or list(existing.partition_key) != [c for c, _ in backup_map.key_columns(want)]
            or tuple(existing.clustering) != backup_map.CLUSTERING):
        layout = lambda cols: ", ".join(f"{c} {t}" for c, t in sorted(cols.items()))
        raise ValidationError(flow.name, f"the table '{existing.qualified}' exists but is not the backup map of "
                                         f"'{src.qualified}': it has columns ({layout(found)}), a backup map has "
                                         f"({layout(expected)}) with primary key "
                                         f"(({', '.join(c for c, _ in backup_map.key_columns(want))}), "
                                         f"{', '.join(backup_map.CLUSTERING)}); drop or rename it, the deploy "
                                         "creates the backup map")
