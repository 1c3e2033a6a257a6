"""How the jobs' writes are grouped into unlogged batches, and how large a batch may be (``source_rows.write_rows``).

A batch changes no cell: each row keeps its own USING TIMESTAMP and TTL, and Cassandra merges the rows of a partition
as it would apply them one by one. What it saves is a request per row. Cassandra 5.0 checks only a batch of several
partitions (``BatchStatement.verifyBatchSize``/``verifyBatchType``): it logs every one whose data is past
``batch_size_warn_threshold`` (5 KiB), refuses one past ``batch_size_fail_threshold`` (50 KiB, "Batch too large"),
and logs once a minute one of more than ``unlogged_batch_across_partitions_warn_threshold`` (10) partitions. Its data
size counts more than the values the connector counts: each cell's timestamp and expiry, and a null, which is a
tombstone cell of no value. So a batch of several partitions is bounded here by rows, from an upper estimate of a row's
size by its columns, and only rows whose values are known to be small go in one.
"""
from __future__ import annotations

from typing import Sequence

WARN_PARTITIONS = 10
WARN_BYTES = 5 * 1024
SMALL_ROW_BYTES = 256     # a row binding more than this goes in a request of its own
CELL_BYTES = 24           # a cell's data beyond its value, at most: timestamp, TTL, expiry, flags (or a tombstone's)
ROW_BYTES = 64            # a row's own: its liveness, deletion, clustering prefix
FIXED_BYTES = 17          # a value of a fixed-size type, at most (decimal and varint in Spark's DecimalType: 17)


def _column(name: str):
    """A column by its name, whatever its characters (source_rows.quoted's form; source_rows imports this module)."""
    from pyspark.sql import functions as F
    return F.col("`" + name.replace("`", "``") + "`")


def rows_per_batch(columns: int) -> int:
    """Rows of at most ``SMALL_ROW_BYTES`` of values and ``columns`` cells in one batch of several partitions, so that
    Cassandra counts it under four fifths of ``WARN_BYTES`` and under ``WARN_PARTITIONS`` partitions (1: no batch)."""
    per_row = SMALL_ROW_BYTES + CELL_BYTES * columns + ROW_BYTES
    return max(1, min(WARN_PARTITIONS, (WARN_BYTES * 4 // 5) // per_row))


def replica_set_options(rows: int) -> dict[str, str]:
    """The connector's options for batches of ``rows`` rows whose partitions have the same replicas."""
    return {"spark.cassandra.output.batch.grouping.key": "replica_set",
            "spark.cassandra.output.batch.size.rows": str(rows)}


def value_bytes(df):
    """A Spark column: an upper bound of the bytes a row of ``df`` binds; None when a column's size is not known
    from its type (a collection, a UDT, a tuple)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType, StructType

    total = F.lit(0)
    for field in df.schema.fields:
        kind = field.dataType
        if isinstance(kind, (ArrayType, MapType, StructType)):
            return None
        column = _column(field.name)
        if isinstance(kind, StringType):
            total = total + F.coalesce(F.octet_length(column), F.lit(0))
        elif isinstance(kind, BinaryType):
            total = total + F.coalesce(F.length(column), F.lit(0))
        else:
            total = total + F.lit(FIXED_BYTES)
    return total


def by_partition(df, partition_key: Sequence[str]):
    """``df`` with the rows of each partition together in one Spark task, next to each other (the connector's
    grouping by partition only sees the rows in its buffer), in as many tasks as it came in; ``df`` as it is when a
    key column's Spark type cannot be hashed or sorted (a map)."""
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    if any("map<" in types.get(c, "") for c in partition_key):
        return df
    columns = [_column(c) for c in partition_key]
    return df.repartition(max(1, df.rdd.getNumPartitions()), *columns).sortWithinPartitions(*columns)
