"""What Spark does differently for a flow whose fan-out follows its table (docs/design.md, "A fan-out that follows its
table"): the backfill fills the copy of the fan-out table the companion flow keeps, stamps each target's rows as the
plugin does within a version, writes the join index's version, and fans out over the copy read after the join index
was written; verify leaves out the join index rows kept as gone; the lineage convergence marks a join index row gone
and deletes a fan-out's rows through every copy row.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from async_triggers.spec import FlowSpec, Target

from . import recent as recent_mod
from .recent import recent_of  # noqa: F401 (the backfill and verify read it here too)

# the plugin's FlowSpec.Follow.SPACING: a source row's versions are multiples of it in a following flow
SPACING = 1 << 20
VERSION, GONE, CHANGE, EXPIRES = "async_version", "async_gone", "async_n", "async_expires"
GONE_TTL_SECONDS = 10 * 24 * 3600   # the plugin keeps a gone row as long as a lineage entry of an expiring row


def following_target(spec: FlowSpec | Mapping) -> Target | None:
    """The flow's fan-out that follows its table (``spec``: a document or its FlowSpec); None when it has none."""
    return FlowSpec.parse(spec).following_target


def is_companion(spec: FlowSpec) -> bool:
    return spec.follows is not None


def companion_refusal(spec: FlowSpec, what: str) -> str | None:
    """Why ``what`` (verify, backfill, repair) does not apply to ``spec``; None when it does."""
    if is_companion(spec):
        return (f"flow '{spec.name}' is the companion of flow '{spec.follows.flow}' (its fan-out that follows "
                f"its table): {what} flow '{spec.follows.flow}', which covers it")
    return None


def base(column):
    """The version a write time falls in (a Spark column)."""
    from pyspark.sql import functions as F
    return (F.floor(column / SPACING) * SPACING).cast("long")


def stamped(target: Target, rows, writetime: str):
    """``rows`` of ``target`` (carrying ``writetime``, already the version) with the plugin's stamp within it: the
    change number 0 of a copied fan-out row for the following fan-out, the version's last stamp but one for the join
    index (which also gets its version), the last stamp for every other target."""
    from pyspark.sql import functions as F

    if target.join_index:   # a row kept as gone comes back (the plugin's own write of it clears the mark too)
        return rows.withColumn(VERSION, F.col(writetime)).withColumn(GONE, F.lit(None).cast("boolean")) \
            .withColumn(writetime, F.col(writetime) + SPACING - 2)
    if target.follows:
        return rows
    return rows.withColumn(writetime, F.col(writetime) + SPACING - 1)


def copy_frame(spark, target: Target):
    """The copy of the fan-out table as it is now, without the rows kept as gone, standing for the fan-out table."""
    from pyspark.sql import functions as F

    from .session import read_table

    follow = target.fanout.follow
    df = read_table(spark, follow.keyspace, follow.table, None,
                    {"spark.cassandra.input.consistency.level": "LOCAL_QUORUM"})
    return df.where(F.col(GONE).isNull() | ~F.col(GONE))


def following_rows(spark, target: Target, part, writetime: str, expires: str, at_change: bool = False):
    """The following fan-out's rows of the source rows of ``part``, over the copy as it is now (read after the join
    index rows of ``part`` were written), each ending no later than its fan-out row (the copy's expiry): ``expires``
    (epoch seconds, 0: never, as ``source_rows.with_write_options`` gives it) the first of the source row's, the
    fan-out row's and the recency bound's. ``at_change``: each row's ``writetime`` (the version) plus its fan-out
    row's change number, the stamp its fan-out row's last task wrote it at (a repair); else the version, below any
    task's stamp (a backfill)."""
    from pyspark.sql import functions as F

    from . import derive
    from .source_rows import now_seconds

    cap, change = "backfill_follow_expires", "backfill_follow_change"
    extended = dataclasses.replace(target, columns={**target.columns, cap: f"row.{EXPIRES}", change: f"row.{CHANGE}"})
    rows = derive.target_rows(extended, part, {target.fanout.qualified: copy_frame(spark, target)},
                              list(target.columns) + [cap, change], carry=(writetime, expires))
    if at_change:
        rows = rows.withColumn(writetime, F.col(writetime) + F.coalesce(F.col(change), F.lit(0)).cast("long"))
    rows = rows.drop(change)
    recent = recent_of(target)
    if recent is not None:   # the recency bound ends a row too: the earlier of the two ends
        ends = F.floor(recent_mod.time_millis(recent.target_column, recent.type) / 1000).cast("long") \
            + recent.seconds
        rows = rows.withColumn(cap, F.when(F.col(cap) > 0, F.least(F.col(cap), ends)).otherwise(ends))
    own, other = F.col(expires), F.coalesce(F.col(cap), F.lit(0)).cast("long")
    first = F.when(own == 0, other).when(other == 0, own).otherwise(F.least(own, other))
    # a fan-out row expired since the copy was read, or a row past the recency bound, derives nothing (the write
    # leaves out what expires before it, too: source_rows.with_ttl)
    return rows.withColumn(expires, first).where((F.col(expires) == 0) | (F.col(expires) > now_seconds())).drop(cap)


def repair_rows(spec: FlowSpec, table: str, part, fanouts: Mapping, writetime: str, expires: str):
    """What a repair writes into ``table`` for the source rows of ``part`` (``writetime`` already their version):
    each target's rows at the stamp the plugin gives them within the version, the following fan-out's over the copy
    at its fan-out rows' change numbers; per key the row with the newest stamp (the author's own row and a follow of
    oneself derive one key: the newer stamp holds in the table too)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from . import derive

    group = derive.targets_by_table(spec)[table]
    frames = []
    for target in group:
        if target.follows:
            rows = following_rows(part.sparkSession, target, part, writetime, expires, at_change=True)
        else:
            rows = derive.target_rows(target, part, fanouts, list(target.columns), carry=(writetime, expires))
        frames.append(stamped(target, rows, writetime))
    rows = frames[0]
    for more in frames[1:]:
        rows = rows.unionByName(more)
    newest = Window.partitionBy(*[F.col(f"`{c}`") for c in derive.primary_key(group[0])]).orderBy(F.col(writetime).desc())
    return rows.withColumn("repair_rank", F.row_number().over(newest)).where(F.col("repair_rank") == 1) \
        .drop("repair_rank")


def at_versions(spec: FlowSpec, part, writetime: str, consistency: str):
    """``part`` (source rows with their write times) with ``writetime`` the version the plugin holds for each source
    row: its join index row's (one not kept as gone) where there is one, else the version its write time falls in,
    as the backfill writes it. A repair's stamps are then the plugin's own, also for a source row whose write time
    CQL cannot read (a row of key columns only gets the run's start)."""
    from pyspark.sql import functions as F

    from . import derive
    from .session import read_table

    index = next(t for t in spec.targets if t.join_index)
    keys = [derive.parse_ref(index.columns[c])[1] for c in index.clustering]
    held = read_table(part.sparkSession, index.keyspace, index.table, None,
                      {"spark.cassandra.input.consistency.level": consistency})
    held = held.where((F.col(GONE).isNull() | ~F.col(GONE)) & F.col(VERSION).isNotNull()) \
        .groupBy(*[F.col(f"`{c}`").alias(f"held_{i}") for i, c in enumerate(index.clustering)]) \
        .agg(F.max(VERSION).alias("held_version"))
    on = [part[f"`{k}`"] == held[f"held_{i}"] for i, k in enumerate(keys)]
    return part.join(held, on=on, how="left") \
        .withColumn(writetime, F.coalesce(F.col("held_version"), base(F.col(writetime)))) \
        .drop(*[f"held_{i}" for i in range(len(keys))], "held_version")


def fill_copy(spark, spec: FlowSpec | Mapping, consistency: str, progress) -> int:
    """Writes every row of the fan-out table to the copy at change number 0 and write time 0: a companion task's
    write (number 1 and up) wins over it whichever lands first. Copied without TTLs (CQL reads none of a row
    marker): the rows that carry one were made companion tasks by the deploy, which give the copy their expiry
    (docs/design.md, "A fan-out that follows its table"); returns the number of rows copied."""
    from pyspark.sql import functions as F

    from . import source_rows
    from .session import read_table

    spec = FlowSpec.parse(spec)
    target = spec.following_target
    fan, follow = target.fanout, target.fanout.follow
    # the copy's columns but its own: the fan-out table's key and the columns the target uses (the deploy made it so)
    columns = [c for c in read_table(spark, follow.keyspace, follow.table).columns if c not in (CHANGE, EXPIRES, GONE)]
    df = read_table(spark, fan.keyspace, fan.table, columns) \
        .withColumn(CHANGE, F.lit(0).cast("long")).withColumn(EXPIRES, F.lit(0).cast("long")) \
        .withColumn(source_rows.WRITETIME, F.lit(0).cast("long")).persist()
    try:
        n = df.count()
        # keyed like the fan-out table by what the plugin reads it by, the match: a partition's rows in batches
        source_rows.write_rows(df, follow.keyspace, follow.table, ttl=False, consistency=consistency,
                               partition_key=list(fan.match))
    finally:
        df.unpersist()
    progress(f"backfill {spec.name}: {n} rows of {fan.qualified} copied for its following fan-out")
    return n


def resume_held(session, flow: str, progress) -> None:
    """Resumes the flow if it is paused: a following flow deployed over a fan-out table with rows starts paused until
    its copy is whole (the deploy says so)."""
    from async_triggers import pause, status

    if flow in status.paused_flows(session):
        pause.set_paused(session, flow, False, progress=progress)
        progress(f"backfill {flow}: resumed (its fan-out table is copied)")


def gone_statement(index: Target, version: int) -> tuple[str, list]:
    """The CQL (and what it binds after the key values) that marks a join index row gone at ``version``, as the
    plugin does: its values tombstoned, its version and mark at the version minus one."""
    values = [c for c in index.columns if c not in index.key]
    sets = ", ".join([f'"{c}" = null' for c in values] + [f'"{VERSION}" = %s', f'"{GONE}" = true'])
    where = " AND ".join(f'"{c}" = %s' for c in index.key)
    cql = (f'UPDATE "{index.keyspace}"."{index.table}" USING TTL {GONE_TTL_SECONDS} AND TIMESTAMP {version - 1} '
           f"SET {sets} WHERE {where}")
    return cql, [version]
