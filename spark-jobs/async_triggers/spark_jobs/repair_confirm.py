"""What a repair wrote, read back; and what a newer write outside the flow shadows, written again above it
(docs/design.md, "Verify and repair").

A repair first writes each row at its source row's own write time (``repair``): that never overwrites a newer write
of the flow. But a row deleted or changed *by hand* in the target table carries a newer timestamp than its source
row, and such a write shadows the repair's: a missing row written under a newer tombstone stays missing, a value
changed by hand stays changed. So every row the repair writes or deletes is read back and counted only when the
table holds what the repair left: every expected non-null value at the write's timestamp, every expected null
absent; a deleted row absent. A written row that does not (or that tied a cell of the table at its timestamp, where
Cassandra's tie-break may have kept the other value) is **raised**: its source row is read again, and when it has
not changed since the verification read it (each dated cell at the write time it had then: none newer, none deleted
or expired), the row is written again at a timestamp above the newer write (the larger of now, the source's write
time + 1 and the row's newest cell + 1) with the source's remaining TTL, then read back again. A source row that
changed since is left to its own task (``not_repaired``: verify again once the flow has drained), as is a deleted
row that is still there (written since the verification, or kept by a row marker newer than its cells).

These reads and writes are at the repair's level when it is a quorum or more, else at QUORUM: a raise overwrites the
table, so it trusts no single replica's view of the source.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import time
import uuid
from typing import Iterable, Mapping, Sequence

from async_triggers.spec import FlowSpec

from .errors import VerifyError

CHUNK = 500
CONCURRENCY = 32
QUORUMS = ("QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL")


def trusted_level(consistency: str) -> str:
    """The level of a repair's reads back, raises and source reads: ``consistency`` if a quorum or more."""
    return consistency if consistency in QUORUMS else "QUORUM"


@dataclasses.dataclass
class Settled:
    """What a read back confirmed: rows written (or deleted), of them raised above a newer write, and rows left."""
    done: int = 0
    raised: int = 0
    not_repaired: int = 0


@dataclasses.dataclass(frozen=True)
class Wanted:
    """One row a repair wants in the table: its key and compared values (in the table's layout order), the source
    row it derives from (key values in the source key's order) with that row's write time and the write time of
    each of its simple dated cells (``backfill_cells``), the write time of the row found in the table (None when
    missing) and whether the repair wrote it at the source's write time."""
    key: tuple
    values: tuple
    source_key: tuple
    source_writetime: int
    source_cells: tuple
    found_writetime: int | None
    written: bool

    def confirmed_by(self, got) -> bool:
        """The first write is what the table holds (``got``: a read back), and it did not tie a cell found there."""
        tied = self.found_writetime is not None and self.found_writetime == self.source_writetime
        return self.written and not tied and got is not None and holds(self.values, got[0], got[1],
                                                                       self.source_writetime)


# --- pure ------------------------------------------------------------------------------------------------------

def holds(expected: Sequence, found: Sequence | None, found_times: Mapping[int, int | None], written_at: int) -> bool:
    """Whether a row read back (``found``: its compared values; None when absent; ``found_times``: the write time of
    each dated value column by position) holds what was written at ``written_at``: each expected null absent, each
    expected value present, at ``written_at`` when the column is dated."""
    if found is None:
        return False
    for j, want in enumerate(expected):
        got = found[j]
        if want is None:
            if got is not None and got != [] and got != {}:
                return False
        elif got is None or (j in found_times and found_times[j] != written_at):
            return False
    return True


def raised_timestamp(now_micros: int, *older: int | None) -> int:
    """A write timestamp above every given one (None ignored), and not below now."""
    return max([now_micros] + [t + 1 for t in older if t is not None])


def newest(times: Iterable[int | None]) -> int | None:
    known = [t for t in times if t is not None]
    return max(known) if known else None


def least_ttl(ttls: Iterable[int | None]) -> int:
    known = [t for t in ttls if t]
    return min(known) if known else 0


def now_micros() -> int:
    return time.time_ns() // 1000


def driver_value(value, cql_type: str):
    """A value as Spark hands it to Python, as the driver binds it for ``cql_type``."""
    if value is None:
        return None
    name = cql_type.lower()
    if name in ("uuid", "timeuuid") and not isinstance(value, uuid.UUID):
        return uuid.UUID(str(value))
    if name == "timestamp" and isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.astimezone(dt.timezone.utc)    # PySpark hands timestamps over in the local time zone
    if name == "varint" and isinstance(value, decimal.Decimal):
        return int(value)
    if name == "blob":
        return bytes(value)
    return value


# --- against Cassandra -----------------------------------------------------------------------------------------

def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _where(columns: Sequence[str]) -> str:
    return " AND ".join(f"{_quoted(c)} = ?" for c in columns)


class _Table:
    """Prepared statements on one table: read a row's values and the write times of its dated columns by key."""

    def __init__(self, session, keyspace: str, table: str, key: Sequence[str], values: Sequence[str],
                 dated: Sequence[str], consistency: str):
        from cassandra import ConsistencyLevel

        self.session, self.key, self.values = session, list(key), list(values)
        self.level = ConsistencyLevel.name_to_value[consistency]
        self.dated = [j for j, v in enumerate(values) if v in set(dated)]
        self.name = f"{_quoted(keyspace)}.{_quoted(table)}"
        selected = [_quoted(c) for c in self.key[:1]] + [_quoted(v) for v in values] + \
            [f"writetime({_quoted(values[j])})" for j in self.dated]
        self.select = self._prepare(f"SELECT {', '.join(selected)} FROM {self.name} WHERE {_where(self.key)}")
        self.types = [m.type.typename for m in self.select.column_metadata]

    def _prepare(self, cql: str):
        statement = self.session.prepare(cql)
        statement.consistency_level = self.level
        return statement

    def bind_key(self, key: Sequence) -> list:
        return [driver_value(v, t) for v, t in zip(key, self.types)]

    def read(self, keys: Sequence[Sequence]) -> list:
        """Per key: None when the row is absent, else (values, {position: write time})."""
        from cassandra.concurrent import execute_concurrent_with_args

        out = []
        results = execute_concurrent_with_args(self.session, self.select, [self.bind_key(k) for k in keys],
                                               concurrency=CONCURRENCY, raise_on_first_error=True)
        for _, rows in results:
            row = next(iter(rows), None)
            if row is None:
                out.append(None)
                continue
            values = list(row[1:1 + len(self.values)])
            times = dict(zip(self.dated, row[1 + len(self.values):]))
            out.append((values, times))
        return out


class _Source:
    """The source row of a repaired row, read again: whether it changed since the verification read it."""

    def __init__(self, session, spec: FlowSpec, consistency: str):
        from cassandra import ConsistencyLevel

        from .backfill import simple_timestamp_columns, source_key_columns

        src = spec.source
        self.session = session
        self.key = source_key_columns(spec)
        self.types = [src.columns[c] for c in self.key]
        self.dated = simple_timestamp_columns(spec)      # in backfill_cells' order
        selected = [_quoted(self.key[0])] + [f"writetime({_quoted(c)})" for c in self.dated] + \
            [f"ttl({_quoted(c)})" for c in self.dated]
        self.select = session.prepare(f"SELECT {', '.join(selected)} FROM {_quoted(src.keyspace)}."
                                      f"{_quoted(src.table)} WHERE {_where(self.key)}")
        self.select.consistency_level = ConsistencyLevel.name_to_value[consistency]

    def unchanged(self, wanted: Sequence[Wanted]) -> list:
        """Per row: None when its source row is gone or any of its dated cells has another write time than the
        verification read (newer, deleted, expired), else the source's least remaining TTL (0: none)."""
        from cassandra.concurrent import execute_concurrent_with_args


        args = [[driver_value(v, t) for v, t in zip(w.source_key, self.types)] for w in wanted]
        results = execute_concurrent_with_args(self.session, self.select, args, concurrency=CONCURRENCY,
                                               raise_on_first_error=True)
        out = []
        n = len(self.dated)
        for w, (_, rows) in zip(wanted, results):
            row = next(iter(rows), None)
            if row is None or (tuple(row[1:1 + n]) if n else (None,)) != tuple(w.source_cells):
                out.append(None)
            else:
                out.append(least_ttl(row[1 + n:]))
        return out


def settle_writes(session, spec: FlowSpec, keyspace: str, table: str, key: Sequence[str], values: Sequence[str],
                  dated: Sequence[str], wanted: Iterable[Wanted], consistency: str,
                  raise_shadowed: bool = True) -> Settled:
    """Reads back the rows a repair wanted written (``wanted``), raises the shadowed ones whose source did not
    change (unless ``raise_shadowed`` is false: they are not repaired), and counts what the table holds afterwards."""
    from cassandra.concurrent import execute_concurrent_with_args

    target = _Table(session, keyspace, table, key, values, dated, consistency)
    source = _Source(session, spec, consistency)
    columns = ", ".join(_quoted(c) for c in list(key) + list(values))
    marks = ", ".join("?" for _ in list(key) + list(values))
    insert = target._prepare(f"INSERT INTO {target.name} ({columns}) VALUES ({marks}) USING TIMESTAMP ? AND TTL ?")
    types = [m.type.typename for m in insert.column_metadata[:len(key) + len(values)]]
    settled = Settled()

    def settle(chunk: list[Wanted]) -> None:
        found = target.read([w.key for w in chunk])
        shadowed = []
        for w, got in zip(chunk, found):
            if w.confirmed_by(got):
                settled.done += 1
            else:
                shadowed.append((w, got))
        if not shadowed:
            return
        if not raise_shadowed:
            settled.not_repaired += len(shadowed)
            return
        fresh = source.unchanged([w for w, _ in shadowed])
        raised, stamps, args = [], [], []
        for (w, got), ttl in zip(shadowed, fresh):
            if ttl is None:
                settled.not_repaired += 1          # the source changed since the verification: its task's
                continue
            found_newest = newest(got[1].values()) if got is not None else None
            stamp = raised_timestamp(now_micros(), w.source_writetime, w.found_writetime, found_newest)
            raised.append(w)
            stamps.append(stamp)
            bound = [driver_value(v, t) for v, t in zip(list(w.key) + list(w.values), types)]
            args.append(bound + [stamp, ttl])
        if args:
            execute_concurrent_with_args(session, insert, args, concurrency=CONCURRENCY, raise_on_first_error=True)
        for w, stamp, got in zip(raised, stamps, target.read([w.key for w in raised])):
            if got is not None and holds(w.values, got[0], got[1], stamp):
                settled.done += 1
                settled.raised += 1
            else:
                settled.not_repaired += 1

    chunk: list[Wanted] = []
    for w in wanted:
        chunk.append(w)
        if len(chunk) >= CHUNK:
            settle(chunk)
            chunk = []
    if chunk:
        settle(chunk)
    return settled


def settle_deletes(session, keyspace: str, table: str, key: Sequence[str], deleted: Iterable[tuple],
                   consistency: str) -> Settled:
    """Reads back the rows a repair deleted (``deleted``: their keys) and counts the rows gone; one still there was
    written since the verification read it (or a row marker newer than its cells kept it): ``not_repaired``."""
    if not key:
        raise VerifyError(f"table {keyspace}.{table}: no key columns to read back")
    target = _Table(session, keyspace, table, key, [], [], consistency)
    settled = Settled()
    chunk: list = []

    def settle() -> None:
        for got in target.read(chunk):
            settled.done += got is None
            settled.not_repaired += got is not None
        chunk.clear()

    for k in deleted:
        chunk.append(k)
        if len(chunk) >= CHUNK:
            settle()
    if chunk:
        settle()
    return settled
