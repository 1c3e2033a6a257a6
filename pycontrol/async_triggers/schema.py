"""A snapshot of the live schema, as validation needs it: keyspaces, tables, key columns, column types."""
from __future__ import annotations

import dataclasses
from typing import Mapping


@dataclasses.dataclass(frozen=True)
class TableSchema:
    keyspace: str
    name: str
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]
    columns: Mapping[str, str]          # column -> CQL type, as the server prints it
    static: frozenset[str] = frozenset()    # the static columns

    @property
    def primary_key(self) -> tuple[str, ...]:
        return self.partition_key + self.clustering

    @property
    def qualified(self) -> str:
        return f"{self.keyspace}.{self.name}"


@dataclasses.dataclass(frozen=True)
class Schema:
    tables: Mapping[tuple[str, str], TableSchema]
    keyspaces: frozenset[str]

    def table(self, keyspace: str, name: str) -> TableSchema | None:
        return self.tables.get((keyspace, name))

    def tables_of(self, keyspace: str) -> list[str]:
        return sorted(t for (ks, t) in self.tables if ks == keyspace)


def from_driver_metadata(metadata) -> Schema:
    """Build a Schema from ``cassandra.cluster.Cluster.metadata`` (the driver keeps it in sync with the server)."""
    tables = {}
    for ks_name, ks in metadata.keyspaces.items():
        for t_name, t in ks.tables.items():
            tables[(ks_name, t_name)] = TableSchema(
                keyspace=ks_name, name=t_name,
                partition_key=tuple(c.name for c in t.partition_key),
                clustering=tuple(c.name for c in t.clustering_key),
                columns={c.name: c.cql_type for c in t.columns.values()},
                static=frozenset(c.name for c in t.columns.values() if c.is_static),
            )
    return Schema(tables=tables, keyspaces=frozenset(metadata.keyspaces))


def of(*tables: TableSchema) -> Schema:
    """A schema of the given tables (for tests and for rendering without a cluster)."""
    return Schema(tables={(t.keyspace, t.name): t for t in tables},
                  keyspaces=frozenset(t.keyspace for t in tables))
