"""The rows a backfill, a verification and its repair read and write, as Spark transforms: a source read with each
row's write time and TTL (the connector's writetime()/ttl()), its token and source key, its lineage entries, and
derived rows written at a given timestamp and TTL. Shared by backfill.py, backfill_lineage.py, follows.py,
verify_run.py and repair.py; it imports none of them. Each reads the flow's typed specification (``FlowSpec``).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from async_triggers.spec import FlowSpec

from . import derive, ring

# the columns the connector binds to USING TIMESTAMP / USING TTL; bind markers start with a letter, hence no "__"
WRITETIME, TTL = "backfill_writetime", "backfill_ttl"
# what the jobs carry instead of a TTL: when the row expires, in epoch seconds (0: never). A TTL counts from its
# write, so it is reckoned from this only as each row is handed to the connector (:func:`write_rows`): a row derived
# now and written later (after a shuffle, a count, the lineage entries) still expires with its source
EXPIRES = "backfill_expires"
# a verification's repair carries it (repair_confirm): the write time of each simple dated cell of a source row
CELLS = "backfill_cells"
TOKEN, SOURCE_KEY = "backfill_token", "backfill_source_key"


def source_key_columns(spec: FlowSpec) -> list[str]:
    return list(spec.source.key)


def timestamp_columns(spec: FlowSpec | Mapping) -> list[str]:
    """The non-key source columns whose cells date a row: the ones the flow reads, else every non-key column the
    spec knows (WRITETIME is undefined on key columns). ``spec``: a FlowSpec, or a document (parsed here)."""
    spec = FlowSpec.parse(spec)
    key = source_key_columns(spec)
    read = [c for c in derive.source_columns(spec) if c not in key]
    return read or [c for c in spec.source.columns if c not in key]


def simple_timestamp_columns(spec: FlowSpec) -> list[str]:
    """:func:`timestamp_columns` without the non-frozen collections (CQL gives them no single WRITETIME)."""
    types = spec.source.columns
    return [c for c in timestamp_columns(spec)
            if not str(types.get(c, "")).lower().startswith(("list<", "set<", "map<"))]


def now_seconds():
    """The wall clock in whole epoch seconds as a Spark column read anew for each row when it is computed (``reflect``
    is nondeterministic: Spark neither folds it into a constant nor computes it once per query)."""
    from pyspark.sql import functions as F
    return F.floor(F.expr("CAST(reflect('java.lang.System', 'currentTimeMillis') AS BIGINT)") / 1000).cast("long")


def with_write_options(df, fallback_micros: int):
    """``df`` (key and read columns plus ``wt_<i>``/``ttl_<i>`` per timestamp column) with the row's
    ``backfill_writetime`` (newest cell, else ``fallback_micros``) and ``backfill_expires``: when its first cell with
    a TTL expires (the least remaining TTL from the clock as the row is read; 0: none expires). Cassandra reckons a
    remaining TTL at the read's own second, a moment before: the expiry is that or at most about a second later."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    # a collection's (or non-frozen UDT's) WRITETIME and TTL are its elements': the newest write, the least TTL
    arrays = {f.name for f in df.schema.fields if isinstance(f.dataType, ArrayType)}
    wts = [F.array_max(c) if c in arrays else F.col(c) for c in df.columns if c.startswith("wt_")]
    ttls = [F.array_min(c) if c in arrays else F.col(c) for c in df.columns if c.startswith("ttl_")]
    newest = (wts[0] if len(wts) == 1 else F.greatest(*wts)) if wts else F.lit(None)
    least = (ttls[0] if len(ttls) == 1 else F.least(*ttls)) if ttls else F.lit(None)
    least = F.coalesce(least.cast("long"), F.lit(0))
    return (df.withColumn(WRITETIME, F.coalesce(newest.cast("long"), F.lit(fallback_micros)))
              .withColumn(EXPIRES, F.when(least > 0, now_seconds() + least).otherwise(F.lit(0).cast("long")))
              .drop(*[c for c in df.columns if c.startswith(("wt_", "ttl_"))]))


def token_udf(types: Sequence[str]):
    from pyspark.sql import functions as F
    return F.udf(lambda *values: ring.token(values, types), "long")


def _source_key_udf(types: Sequence[str]):
    from pyspark.sql import functions as F
    return F.udf(lambda *values: ring.source_key(values, types), "binary")


def _lineage_key_udf(index: int, types: Sequence[str]):
    from pyspark.sql import functions as F
    return F.udf(lambda *values: ring.lineage_key(index, values, types), "binary")


def with_ring_columns(df, spec: FlowSpec):
    """Adds each row's partition token and, for flows with lineage targets, its lineage ``source_key``."""
    from pyspark.sql import functions as F

    types = spec.source.columns
    pk = list(spec.source.partition_key)
    df = df.withColumn(TOKEN, token_udf([types[c] for c in pk])(*[F.col(c) for c in pk]))
    if any(t.mode == "lineage" for t in spec.targets):
        key = source_key_columns(spec)
        df = df.withColumn(SOURCE_KEY, _source_key_udf([types[c] for c in key])(*[F.col(c) for c in key]))
    return df


def token_in(token_range: Sequence[int]):
    """Whether a row's token falls in ``token_range`` (``(start, end]``), as a Spark column."""
    from pyspark.sql import functions as F
    return (F.col(TOKEN) > F.lit(token_range[0])) & (F.col(TOKEN) <= F.lit(token_range[1]))


def in_range(df, token_range: Sequence[int]):
    return df.where(token_in(token_range))


LINEAGE_WRITE_CONSISTENCY = "EACH_QUORUM"   # the plugin's Lineage.writeLevel for flows below ALL
LINEAGE_TTL_GRACE_SECONDS = 10 * 24 * 3600  # the plugin's Lineage.EXPIRED_ROW_GRACE_SECONDS


def lineage_rows(spec: FlowSpec, index: int, part):
    """The lineage entries the plugin records for target ``index`` of each source row of ``part``: its image at the
    row's timestamp. A row without an image (a null lineage column, or a target without a fan-out whose key is null or
    has an empty partition key value) derives nothing: no entry."""
    from pyspark.sql import functions as F

    target, types = spec.targets[index], spec.source.columns
    cols = list(target.lineage_columns)
    known = F.lit(True)
    for c in cols:
        known = known & F.col(c).isNotNull()
    if target.fanout is None:
        for k in derive.primary_key(target):
            c = derive.parse_ref(target.columns[k])[1]
            known = known & F.col(c).isNotNull()
            if k in target.partition_key:
                known = known & (F.length(F.col(c)) > 0)
    key = _lineage_key_udf(index, [types[c] for c in cols])(*[F.col(c) for c in cols])
    # a TTL'd row's entry outlives its rows by the grace the plugin gives it (a late older image stays away)
    entry_expires = F.when(F.col(EXPIRES) > 0, F.col(EXPIRES) + LINEAGE_TTL_GRACE_SECONDS) \
        .otherwise(F.lit(0).cast("long")).alias(EXPIRES)
    return part.where(known).select(F.lit(spec.name).alias("flow"), F.col(SOURCE_KEY).alias("source_key"),
                                    key.alias("target_key"), F.col(WRITETIME).alias("ts"), F.col(WRITETIME),
                                    entry_expires)


def lineage_key_rows(spec: FlowSpec, part):
    """The rows of ``async_triggers.lineage_keys`` the plugin records for each source row of ``part`` (a clustered
    source with lineage targets): its key under its partition, at the row's timestamp."""
    from pyspark.sql import functions as F

    types = spec.source.columns
    pk = list(spec.source.partition_key)
    partition = F.udf(lambda *values: ring.source_key(values, [types[c] for c in pk]), "binary")
    return part.select(F.lit(spec.name).alias("flow"), partition(*[F.col(c) for c in pk]).alias("source_partition"),
                       F.col(SOURCE_KEY).alias("source_key"), F.col(WRITETIME))


# --- against Cassandra -----------------------------------------------------------------------------------------

def quoted(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def read_source(spark, spec: FlowSpec, fallback_micros: int, options: Mapping[str, str] | None = None,
                cells: bool = False):
    """The source table: its key columns, the columns the flow reads, their write options and ring columns.
    ``options``: more reader options (a verification's consistency level). ``cells``: also ``backfill_cells``, the
    write time of each of :func:`simple_timestamp_columns` (null for a null cell), in that order."""
    from pyspark.sql import functions as F

    from .session import read_table

    key = source_key_columns(spec)
    table = read_table(spark, spec.source.keyspace, spec.source.table, options=options)
    # every column of the table, not only the flow's: a row is there when SELECT * returns it, and a select of some
    # columns leaves out a row whose marker expired and whose live cells are all in the others (a cached frame
    # keeps the scan from being narrowed to the columns used downstream)
    columns = list(dict.fromkeys(key + derive.source_columns(spec) + list(table.columns)))
    dated = timestamp_columns(spec)
    exprs = [quoted(c) for c in columns]
    exprs += [f"writetime({quoted(c)}) AS wt_{i}" for i, c in enumerate(dated)]
    exprs += [f"ttl({quoted(c)}) AS ttl_{i}" for i, c in enumerate(dated)]
    df = table.selectExpr(*exprs)
    if cells:
        simple = set(simple_timestamp_columns(spec))
        times = [F.col(f"wt_{i}").cast("long") for i, c in enumerate(dated) if c in simple]
        df = df.withColumn(CELLS, F.array(*(times or [F.lit(None).cast("long")])))   # [null]: no such column
    return with_ring_columns(with_write_options(df, fallback_micros), spec)


def with_ttl(df):
    """``df`` with each row's ``backfill_ttl`` reckoned from its ``backfill_expires`` at this moment, that column
    dropped, and the rows that expired meanwhile left out (they derive nothing; TTL 0 would mean none). Computed row
    by row as the connector takes it, after any shuffle: Cassandra counts the TTL from its own clock, which is at or
    past the one read here, so a written row expires when ``backfill_expires`` says or within the second after."""
    from pyspark.sql import functions as F

    left = F.col(EXPIRES) - now_seconds()
    ttl = F.when(F.col(EXPIRES) > 0, left).otherwise(F.lit(0)).cast("int")
    return df.withColumn(TTL, ttl).where((F.col(EXPIRES) == 0) | (F.col(TTL) > 0)).drop(EXPIRES)


def image_columns(spec: FlowSpec) -> list[str]:
    """The source columns :func:`lineage_rows` reads: the key, each lineage target's lineage columns and, for one
    without a fan-out, the columns its key comes from."""
    columns = source_key_columns(spec)
    for target in spec.targets:
        if target.mode != "lineage":
            continue
        columns += list(target.lineage_columns)
        if target.fanout is None:
            columns += [derive.parse_ref(target.columns[k])[1] for k in derive.primary_key(target)]
    return list(dict.fromkeys(columns))


def read_images(spark, spec: FlowSpec, options: Mapping[str, str] | None = None):
    """The source rows as far as :func:`lineage_rows` needs them to give each row's images now: the
    :func:`image_columns` and the ring columns, without write times (their write options are left 0). A row the
    read leaves out has no live cell in those columns, so it has no image either."""
    from pyspark.sql import functions as F

    from .session import read_table

    df = read_table(spark, spec.source.keyspace, spec.source.table, image_columns(spec), options)
    df = df.withColumn(WRITETIME, F.lit(0).cast("long")).withColumn(EXPIRES, F.lit(0).cast("long"))
    return with_ring_columns(df, spec)


def write_rows(df, keyspace: str, table: str, ttl: bool = True, consistency: str | None = None,
               concurrency: int | None = None, partition_key: Sequence[str] = (), by_replicas: bool = False) -> None:
    """Appends ``df`` with each row's own USING TIMESTAMP (and TTL) from its option columns (the connector's
    per-row ``writetime``/``ttl`` write options name a column, which it binds instead of writing it). ``ttl``: the
    rows carry ``backfill_expires``, turned into a TTL as each is written (:func:`with_ttl`).
    ``consistency``: this write's level instead of the session's (spark.cassandra.output.consistency.level);
    ``concurrency``: writes in flight per Spark task instead of the session's.

    Batches (``batches``; the driver retries a batch that timed out as it does a row, the session taking every
    request as idempotent: ``session.IDEMPOTENT_WRITES``): ``partition_key``, the table's partition key columns when
    several rows share a partition: the rows of a partition are brought together and the connector sends them in
    single-partition batches (its default grouping, up to 1 KB of values each): one mutation for many rows.
    ``by_replicas``, when each row is its own partition: rows of small values (``batches.SMALL_ROW_BYTES``) whose
    partitions have the same replicas go a few to a request (``batches.rows_per_batch``), the others one by one.
    """
    from .session import CASSANDRA_FORMAT

    from . import batches

    options = {"keyspace": keyspace, "table": table, "writetime": WRITETIME}
    if ttl:
        options["ttl"] = TTL
    if consistency:
        options["spark.cassandra.output.consistency.level"] = consistency
    if concurrency:
        options["spark.cassandra.output.concurrent.writes"] = str(concurrency)

    def append(frame, more: Mapping[str, str] | None = None) -> None:
        if ttl:
            frame = with_ttl(frame)
        frame.write.format(CASSANDRA_FORMAT).options(**options, **(more or {})).mode("append").save()

    size, rows = (batches.value_bytes(df), batches.rows_per_batch(len(df.columns))) if by_replicas else (None, 1)
    if partition_key:
        append(batches.by_partition(df, partition_key))
    elif size is None or rows == 1:
        append(df)
    else:
        df = df.persist()   # read twice: the small rows, then the others
        try:
            append(df.where(size <= batches.SMALL_ROW_BYTES), batches.replica_set_options(rows))
            append(df.where(size > batches.SMALL_ROW_BYTES))
        finally:
            df.unpersist()
