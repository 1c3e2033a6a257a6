"""What a repair wrote, read back; and what a newer write outside the flow shadows, written again above it
(docs/design.md, "Verify and repair").

A repair first writes each row at its source row's own write time (``repair``): that never overwrites a newer write
of the flow. But a row deleted or changed *by hand* in the target table carries a newer timestamp than its source
row, and such a write shadows the repair's: a missing row written under a newer tombstone stays missing, a value
changed by hand stays changed. So every row the repair writes or deletes is read back (at the repair's consistency
level) and counted only when the table holds what the repair wrote: every expected non-null value at the write's
timestamp, every expected null absent. A row that does not is **raised**: its source row is read again, and when it
has not changed since the verification read it (no row gone, no cell newer), the row is written again at a
timestamp above the newer write (the larger of now, the source's write time + 1 and the row's newest cell + 1)
with the source's remaining TTL, then read back again. A source row that changed since is left to its own task
(``not_repaired``: verify again once the flow has drained). An unexpected row that survives its delete (a row marker
or a collection newer than its dated cells) is deleted again above its newest cell when those cells did not change
since the verification read them.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Iterable, Mapping, Sequence

from .errors import VerifyError

CHUNK = 500
CONCURRENCY = 32


@dataclasses.dataclass
class Settled:
    """What a read back confirmed: rows written (or deleted), of them raised above a newer write, and rows left."""
    done: int = 0
    raised: int = 0
    not_repaired: int = 0


@dataclasses.dataclass(frozen=True)
class Wanted:
    """One row a repair wants in the table: its key and compared values (in the table's layout order), the source
    row it derives from (key values in the source key's order) with that row's write time, the write time of the
    row found in the table (None when missing) and whether the repair wrote it at the source's write time."""
    key: tuple
    values: tuple
    source_key: tuple
    source_writetime: int
    found_writetime: int | None
    written: bool


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
        from .repair import driver_value
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

    def __init__(self, session, spec: Mapping, consistency: str):
        from cassandra import ConsistencyLevel

        from .backfill import source_key_columns, timestamp_columns

        src = spec["source"]
        self.session = session
        self.key = source_key_columns(spec)
        types = src["columns"]
        self.types = [types[c] for c in self.key]
        # CQL has no single WRITETIME for a non-frozen collection: the simple columns date the row here
        self.dated = [c for c in timestamp_columns(spec)
                      if not str(types.get(c, "")).lower().startswith(("list<", "set<", "map<"))]
        selected = [_quoted(self.key[0])] + [f"writetime({_quoted(c)})" for c in self.dated] + \
            [f"ttl({_quoted(c)})" for c in self.dated]
        self.select = session.prepare(f"SELECT {', '.join(selected)} FROM {_quoted(src['keyspace'])}."
                                      f"{_quoted(src['table'])} WHERE {_where(self.key)}")
        self.select.consistency_level = ConsistencyLevel.name_to_value[consistency]

    def unchanged(self, wanted: Sequence[Wanted]) -> list:
        """Per row: None when its source row is gone or has a cell newer than the verification saw, else the
        source's least remaining TTL (0: none)."""
        from cassandra.concurrent import execute_concurrent_with_args

        from .repair import driver_value

        args = [[driver_value(v, t) for v, t in zip(w.source_key, self.types)] for w in wanted]
        results = execute_concurrent_with_args(self.session, self.select, args, concurrency=CONCURRENCY,
                                               raise_on_first_error=True)
        out = []
        for w, (_, rows) in zip(wanted, results):
            row = next(iter(rows), None)
            if row is None:
                out.append(None)
                continue
            n = len(self.dated)
            seen = newest(row[1:1 + n])
            out.append(None if seen is not None and seen > w.source_writetime else least_ttl(row[1 + n:]))
        return out


def settle_writes(session, spec: Mapping, keyspace: str, table: str, key: Sequence[str], values: Sequence[str],
                  dated: Sequence[str], wanted: Iterable[Wanted], consistency: str) -> Settled:
    """Reads back the rows a repair wanted written (``wanted``), raises the shadowed ones whose source did not
    change, and counts what the table holds afterwards."""
    from cassandra.concurrent import execute_concurrent_with_args

    from .repair import driver_value

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
            if w.written and got is not None and holds(w.values, got[0], got[1], w.source_writetime):
                settled.done += 1
            else:
                shadowed.append((w, got))
        if not shadowed:
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


def settle_deletes(session, keyspace: str, table: str, key: Sequence[str], values: Sequence[str],
                   dated: Sequence[str], deleted: Iterable[tuple[tuple, int | None]], consistency: str) -> Settled:
    """Reads back the rows a repair deleted (``deleted``: key, and the newest write time of its dated cells as the
    verification found it, None when it had none); deletes a survivor again above that time when its dated cells
    did not change since (a row marker or a collection kept it), and counts the rows gone afterwards."""
    from cassandra.concurrent import execute_concurrent_with_args

    if not key:
        raise VerifyError(f"table {keyspace}.{table}: no key columns to delete by")
    target = _Table(session, keyspace, table, key, values, dated, consistency)
    delete = target._prepare(f"DELETE FROM {target.name} USING TIMESTAMP ? WHERE {_where(key)}")
    settled = Settled()

    def settle(chunk: list) -> None:
        again = []
        for (k, found), got in zip(chunk, target.read([k for k, _ in chunk])):
            if got is None:
                settled.done += 1
            elif found is not None and newest(got[1].values()) is None:
                again.append((k, found))   # only what has no write time of its own is left: a marker, collections
            else:
                settled.not_repaired += 1      # written since the verification read it, or never dated
        if not again:
            return
        execute_concurrent_with_args(session, delete,
                                     [[raised_timestamp(now_micros(), found)] + target.bind_key(k) for k, found in again],
                                     concurrency=CONCURRENCY, raise_on_first_error=True)
        for got in target.read([k for k, _ in again]):
            settled.done += got is None
            settled.raised += got is None
            settled.not_repaired += got is not None

    chunk: list = []
    for item in deleted:
        chunk.append(item)
        if len(chunk) >= CHUNK:
            settle(chunk)
            chunk = []
    if chunk:
        settle(chunk)
    return settled
