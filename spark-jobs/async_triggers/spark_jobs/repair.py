"""``ctl verify --repair``: what a verification found different, made right, at timestamps that never shadow a newer
write (docs/design.md, "Verify and repair").

- A **missing** row, and a row with a **wrong value**, is written with its source row's own write time and expiry,
  as the backfill writes it (``backfill.write_rows``: the connector's per-row ``writetime``/``ttl`` options,
  ``backfill_writetime`` = the newest WRITETIME of the source cells the flow reads, ``backfill_expires`` = when the
  first of them with a TTL expires, a TTL reckoned from it as the row is written; a source row without such a cell
  gets the run's start time). A newer write of the source row, and
  the derived write of its task, carry a later timestamp and win; the repair's write never overwrites newer data.
  So a wrong value whose row in the table is *newer* than its source row (written there by something else) cannot
  be repaired this way: it is not written here. On a tie a null wins (a tombstone), a value wins if it is the greater
  (Cassandra's tie-break).
- An **unexpected** row is deleted at the newest WRITETIME of its own non-key, non-static cells: the delete removes
  exactly what the row holds now, and any later write (a newer timestamp) survives it. A row without such a cell
  (key columns only, or every value null) has no readable write time: it is deleted at the run's start time, which
  is safe on a drained flow (run the repair when ``ctl trigger wait`` says the flow is drained).
- **Lineage targets**: before writing the rows of a range, the images of its source rows are written to
  ``async_triggers.lineage`` as the backfill writes them (``backfill.lineage_rows``, EACH_QUORUM), and after the last
  range the plugin's convergence runs (``backfill_lineage.converge``): an older image's entry and rows go.

Then every row written or deleted is read back (``repair_confirm``): what a newer write outside the flow shadows (a
row deleted or changed by hand in the table, a tie lost) is written or deleted again above it when its source row
did not change since the verification read it, and only what the table then holds counts as repaired.

The pure parts (:func:`planned_writes`, :func:`planned_deletes`, :func:`blocked`) are functions of the classified
DataFrame (``compare.classify`` with the source's write options carried and the found row's write time).
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from async_triggers.spec import FlowSpec

from . import derive
from .backfill import EXPIRES, TTL, WRITETIME
from .compare import Layout
from .errors import VerifyError
from .repair_confirm import driver_value

FOUND_WRITETIME = "verify_found_writetime"   # the newest WRITETIME of a target row's non-key cells
DELETE_AT = "verify_delete_at"
CONCURRENCY = 32


@dataclasses.dataclass(frozen=True)
class Repaired:
    """What a repair did to one table, as read back: rows written (missing or wrong) and rows deleted (unexpected)
    that the table now holds as the repair left them; of the rows written, ``raised``: written again above a newer
    write made outside the flow (``repair_confirm``); ``not_repaired``: rows whose source changed since the
    verification read it, or that a read back did not confirm."""
    table: str
    written: int = 0
    deleted: int = 0
    not_repaired: int = 0
    raised: int = 0

    def __add__(self, other: "Repaired") -> "Repaired":
        return Repaired(self.table, self.written + other.written, self.deleted + other.deleted,
                        self.not_repaired + other.not_repaired, self.raised + other.raised)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# --- pure: what to write and what to delete --------------------------------------------------------------------

def blocked(layout: Layout):
    """A wrong value whose row in the table is newer than its source row: a write at the source's timestamp would
    lose to it, and a newer timestamp could shadow a newer write. Left alone."""
    from pyspark.sql import functions as F

    source = F.col(f"x{layout.carry.index(WRITETIME)}")
    found = F.col(f"y{layout.found.index(FOUND_WRITETIME)}")
    return (F.col("kind") == "wrong_value") & found.isNotNull() & (found > source)


def planned_writes(classified, layout: Layout):
    """The rows to write (missing, and wrong values not :func:`blocked`): the target's compared columns under their
    own names, then ``backfill_writetime`` and ``backfill_expires`` (the best candidate's: the newest source row)."""
    from pyspark.sql import functions as F

    rows = classified.where(F.col("kind").isin("missing", "wrong_value") & ~blocked(layout))
    return rows.select(*[F.col(f"k{i}") for i in range(len(layout.keys))],
                       *[F.col(f"e{j}") for j in range(len(layout.values))],
                       F.col(f"x{layout.carry.index(WRITETIME)}"), F.col(f"x{layout.carry.index(EXPIRES)}")) \
        .toDF(*layout.keys, *layout.values, WRITETIME, EXPIRES)


def planned_deletes(classified, layout: Layout, fallback_micros: int | None):
    """The unexpected rows' keys under their own names, then ``verify_delete_at``: the newest write time of the row's
    own cells, else ``fallback_micros`` (the run's start); None: a row without such a cell is left alone."""
    from pyspark.sql import functions as F

    found = F.col(f"y{layout.found.index(FOUND_WRITETIME)}")
    unexpected = classified.where(F.col("kind") == "unexpected")
    if fallback_micros is None:
        unexpected, fallback = unexpected.where(found.isNotNull()), F.lit(None).cast("long")
    else:
        fallback = F.lit(int(fallback_micros))
    return unexpected.select(
        *[F.col(f"k{i}") for i in range(len(layout.keys))],
        F.coalesce(found.cast("long"), fallback).alias("d")).toDF(*layout.keys, DELETE_AT)


def wanted_rows(classified, layout: Layout, source_key_size: int):
    """The rows a repair wants in the table (missing, wrong values), for :func:`as_wanted`: the keys, the expected
    values, the source's write time and cells, the source key (the last ``source_key_size`` carried columns), the
    found row's write time, and whether the first write was made (not :func:`blocked`)."""
    from pyspark.sql import functions as F

    from .backfill import CELLS

    n = len(layout.carry)
    carried = [layout.carry.index(WRITETIME), layout.carry.index(CELLS)] + list(range(n - source_key_size, n))
    return classified.where(F.col("kind").isin("missing", "wrong_value")).select(
        *[F.col(f"k{i}") for i in range(len(layout.keys))], *[F.col(f"e{j}") for j in range(len(layout.values))],
        *[F.col(f"x{i}") for i in carried], F.col(f"y{layout.found.index(FOUND_WRITETIME)}").cast("long"),
        ~blocked(layout))


def restamped(wanted, writes, layout: Layout):
    """:func:`wanted_rows` of a following flow's table with each row's stamp the one its repair wrote it at
    (``writes``: keys under their own names and ``WRITETIME``) in place of its source's write time, written where the
    repair wrote it (a row found newer keeps it, and the read back sees that) and not where it wrote none (no row of
    the copy derives it)."""
    from pyspark.sql import functions as F

    nk, nv = len(layout.keys), len(layout.values)
    positional = wanted.toDF(*[f"c{i}" for i in range(len(wanted.columns))])
    stamps = writes.select(*[F.col(f"`{k}`").alias(f"c{i}") for i, k in enumerate(layout.keys)],
                           F.col(WRITETIME).alias("repair_stamp"))
    joined = positional.join(stamps, on=[f"c{i}" for i in range(nk)], how="left")
    last = len(wanted.columns) - 1
    picked = [F.col(f"c{i}") for i in range(len(wanted.columns))]
    picked[nk + nv] = F.coalesce(F.col("repair_stamp"), F.col(f"c{nk + nv}")).alias(f"c{nk + nv}")
    picked[last] = F.col("repair_stamp").isNotNull().alias(f"c{last}")
    return joined.select(*picked)


def as_wanted(row, layout: Layout):
    """A row of :func:`wanted_rows` as ``repair_confirm.Wanted``."""
    from .repair_confirm import Wanted

    nk, nv = len(layout.keys), len(layout.values)
    at, end = nk + nv, len(row) - 2
    return Wanted(key=tuple(row[:nk]), values=tuple(row[nk:at]), source_key=tuple(row[at + 2:end]),
                  source_writetime=int(row[at]), source_cells=tuple(row[at + 1]), found_writetime=row[end],
                  written=bool(row[end + 1]))


# --- against Cassandra -----------------------------------------------------------------------------------------

def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def dated_columns(session, keyspace: str, table: str) -> list[str]:
    """The columns of a target table whose WRITETIME dates a row: regular (not key, not static) and not a non-frozen
    collection or UDT (CQL has no WRITETIME for those), from the driver's schema metadata."""
    try:
        meta = session.cluster.metadata.keyspaces[keyspace].tables[table]
    except KeyError:
        raise VerifyError(f"table {keyspace}.{table} does not exist") from None
    key = {c.name for c in meta.primary_key}
    out = []
    for name, col in meta.columns.items():
        kind = str(col.cql_type).lower()
        if name in key or col.is_static or kind.startswith(("list<", "set<", "map<")):
            continue
        if kind in _SIMPLE or kind.startswith(("frozen<", "tuple<", "vector<")):   # else a non-frozen UDT
            out.append(name)
    return out


_SIMPLE = {"ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float", "inet", "int",
           "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid", "varchar", "varint"}


def delete_rows(session, keyspace: str, table: str, key_columns: Sequence[str], rows: Iterable,
                consistency: str, chunk: int = 1000) -> int:
    """``DELETE ... USING TIMESTAMP <verify_delete_at> WHERE <key>`` for every row (key values, then the timestamp),
    at ``consistency``. Returns how many were deleted."""
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    where = " AND ".join(f"{_quoted(c)} = ?" for c in key_columns)
    prepared = session.prepare(f"DELETE FROM {_quoted(keyspace)}.{_quoted(table)} USING TIMESTAMP ? WHERE {where}")
    prepared.consistency_level = ConsistencyLevel.name_to_value[consistency]
    types = [m.type.typename for m in prepared.column_metadata[1:]]
    done, batch = 0, []

    def flush():
        execute_concurrent_with_args(session, prepared, batch, concurrency=CONCURRENCY, raise_on_first_error=True)
        return len(batch)

    for row in rows:
        values = list(row)
        batch.append([int(values[-1])] + [driver_value(v, t) for v, t in zip(values[:-1], types)])
        if len(batch) >= chunk:
            done += flush()
            batch = []
    if batch:
        done += flush()
    return done


def repair_table(session, spec: FlowSpec, table: str, classified, layout: Layout, part, consistency: str,
                 fallback_micros: int, fanouts: Mapping | None = None) -> Repaired:
    """Repairs what ``classified`` (one table's differences in one unit, carrying ``WRITETIME``, ``EXPIRES``, ``CELLS``
    and the source key columns) found: lineage images of ``part`` (the unit's source rows, with their write options and
    lineage ``source_key``) for the lineage targets writing the table, then the rows, then the deletes; then reads
    them back (``repair_confirm``).

    A flow whose fan-out follows its table writes as its backfill does, at the version the plugin holds for each
    source row (its join index row's, else the one its write time falls in: ``follows.at_versions``), each row at its
    target's stamp within it, a following fan-out's row at its fan-out row's change number (``follows.repair_rows``).
    Nothing of such a flow is written or deleted above its stamps, since a follow writes an old tweet at that tweet's
    version and an unfollow deletes it there: a row without a readable write time is not deleted and a row a newer
    write shadows is not raised (both ``not_repaired``)."""
    from pyspark.sql import functions as F

    from async_triggers import keyspace as ours

    from . import follows, repair_confirm
    from .backfill import CELLS, LINEAGE_WRITE_CONSISTENCY, lineage_rows, source_key_columns, write_rows

    keyspace, name = table.split(".", 1)
    targets = derive.targets_by_table(spec)[table]
    clash = {WRITETIME, TTL, EXPIRES} & {c for t in targets for c in t.columns}
    if clash:
        raise VerifyError(f"flow '{spec.name}': {table} has a column named {', '.join(sorted(clash))}, which the "
                          "repair uses for its write options")
    level = repair_confirm.trusted_level(consistency)
    following = spec.following_target is not None and part is not None
    writes = planned_writes(classified, layout)
    if following:
        # every missing or wrong row, at the stamp the plugin gives it (a row found newer than that keeps it: the
        # read back counts it as not repaired)
        wanted_keys = classified.where(F.col("kind").isin("missing", "wrong_value")) \
            .select(*[F.col(f"k{i}").alias(k) for i, k in enumerate(layout.keys)])   # read from the unit's cached comparison
        if wanted_keys.count():
            part = follows.at_versions(spec, part, WRITETIME, consistency)
            writes = follows.repair_rows(spec, table, part, fanouts or {}, WRITETIME, EXPIRES) \
                .join(wanted_keys, on=list(layout.keys), how="left_semi")
    writes = writes.persist()   # kept until the read back: a following flow's rows are confirmed at its stamps
    try:
        if writes.count():
            for index, target in enumerate(spec.targets):
                if target.mode == "lineage" and target.qualified == table and part is not None:
                    write_rows(lineage_rows(spec, index, part), ours.KEYSPACE, ours.LINEAGE.name,
                               consistency=LINEAGE_WRITE_CONSISTENCY)
            write_rows(writes, keyspace, name, consistency=level)
        deletes = planned_deletes(classified, layout, None if following else fallback_micros)
        delete_rows(session, keyspace, name, layout.keys, deletes.toLocalIterator(), level)

        wanted = wanted_rows(classified, layout, len(source_key_columns(spec)))
        if following:
            wanted = restamped(wanted, writes, layout)
        # a raise would write above the flow's stamps, and without a join index row's version and mark
        written = repair_confirm.settle_writes(session, spec, keyspace, name, layout.keys, layout.values,
                                               dated_columns(session, keyspace, name),
                                               (as_wanted(r, layout) for r in wanted.toLocalIterator()), level,
                                               raise_shadowed=not following)
    finally:
        writes.unpersist()
    gone = classified.where(F.col("kind") == "unexpected").select(*[F.col(f"k{i}") for i in range(len(layout.keys))])
    deleted = repair_confirm.settle_deletes(session, keyspace, name, layout.keys,
                                            (tuple(r) for r in gone.toLocalIterator()), level)
    return Repaired(table, written.done, deleted.done, written.not_repaired + deleted.not_repaired,
                    written.raised)
