"""Seeded random histories of every CQL write shape (the same seed, the same history: replayable).

A history is a list of operations on the two source tables of ``schema``: inserts (some of a few columns), partial
updates, a column set to null or deleted, row, clustering-range and partition deletes, static column updates and
deletes, TTLs (3 s, expired before the check, or 600 s, alive at it), lightweight transactions (``IF NOT EXISTS``,
``IF EXISTS``, ``IF col = value``), logged and unlogged batches over two partitions, each statement with its own
timestamp. Each operation goes to a drawn coordinator at a drawn consistency level (ONE, QUORUM, ALL). A third of the
histories stop one replica for a stretch of operations (hints off, then read repair); those operations are written
at ONE, without LWT (Paxos needs every replica of RF 2).

Timestamps are given explicitly (``USING TIMESTAMP``), offsets in microseconds from the run's base, which lies an
hour before the run: in order (1 ms apart) mostly, some out of order (before or after their neighbours, half a
millisecond off so they tie with nothing) and some equal to the last timestamp of the same partition. A lightweight
transaction cannot carry one; its Paxos timestamp (the coordinator's clock) is newer than every given one, in every
replay alike.
"""
from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Iterable

from . import schema

CONSISTENCY = ("ONE", "QUORUM", "ALL")
SHORT_TTL, LONG_TTL = 3, 600
# every shape a history can draw (the campaign's summary counts them; `summary` lists those never drawn)
SHAPES = ("insert", "update", "set_null", "delete_column", "delete_row", "delete_range", "delete_partition",
          "update_static", "delete_static", "ttl_short", "ttl_long", "lwt_insert", "lwt_update", "lwt_delete",
          "batch_logged", "batch_unlogged", "ts_in_order", "ts_out_of_order", "ts_equal",
          "cl_one", "cl_quorum", "cl_all", "replica_down")


def literal(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(int(value))


@dataclasses.dataclass(frozen=True)
class Stmt:
    """One CQL statement of a history; the run's id and timestamp base are filled in when rendered."""
    table: str                                     # kv | cl
    verb: str                                      # insert | update | delete
    key: tuple[tuple[str, object], ...]            # the key columns it names (partition, maybe clustering)
    values: tuple[tuple[str, object], ...] = ()    # columns set (None: null)
    deleted: tuple[str, ...] = ()                  # DELETE <columns> FROM
    bounds: tuple[tuple[str, str, int], ...] = ()  # a range delete's clustering bounds: (column, operator, value)
    ts: int | None = None                          # microseconds after the run's base (None: a Paxos timestamp)
    ttl: int | None = None
    condition: str | None = None                   # IF ... (rendered CQL)

    @property
    def partition(self) -> tuple[str, int]:
        return self.table, int(self.key[0][1])

    def cql(self, keyspace: str, run: int, base: int) -> str:
        table = f"{keyspace}.{self.table}"
        where = " AND ".join([f"run = {run}"] + [f"{c} = {literal(v)}" for c, v in self.key]
                             + [f"{c} {op} {literal(v)}" for c, op, v in self.bounds])
        using = [f"TTL {self.ttl}"] if self.ttl else []
        using += [f"TIMESTAMP {base + self.ts}"] if self.ts is not None else []
        using_text = f" USING {' AND '.join(using)}" if using else ""
        cond = f" {self.condition}" if self.condition else ""
        if self.verb == "insert":
            cols = ["run"] + [c for c, _ in self.key] + [c for c, _ in self.values]
            vals = [str(run)] + [literal(v) for _, v in self.key] + [literal(v) for _, v in self.values]
            return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join(vals)}){cond}{using_text}"
        if self.verb == "update":
            sets = ", ".join(f"{c} = {literal(v)}" for c, v in self.values)
            return f"UPDATE {table}{using_text} SET {sets} WHERE {where}{cond}"
        columns = f" {', '.join(self.deleted)}" if self.deleted else ""
        return f"DELETE{columns} FROM {table}{using_text} WHERE {where}{cond}"


@dataclasses.dataclass(frozen=True)
class Op:
    index: int
    statements: tuple[Stmt, ...]
    coordinator: int            # the node's index (the runner takes the next live one if it is down)
    consistency: str
    shapes: tuple[str, ...]
    batch: str | None = None    # logged | unlogged

    @property
    def lwt(self) -> bool:
        return any(s.condition for s in self.statements)

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return {s.partition for s in self.statements}

    @property
    def short_ttl(self) -> int:
        return max((s.ttl for s in self.statements if s.ttl and s.ttl <= SHORT_TTL), default=0)

    def cql(self, keyspace: str, run: int, base: int) -> str:
        body = [s.cql(keyspace, run, base) for s in self.statements]
        if self.batch is None:
            return body[0]
        begin = "BEGIN BATCH" if self.batch == "logged" else "BEGIN UNLOGGED BATCH"
        return f"{begin} {'; '.join(body)}; APPLY BATCH"

    def text(self, keyspace: str, run: int, base: int) -> str:
        return f"#{self.index} node{self.coordinator + 1} {self.consistency}: {self.cql(keyspace, run, base)}"


@dataclasses.dataclass(frozen=True)
class Fault:
    """One replica stopped (gracefully, hints off everywhere) from the operation ``stop_before`` until the one
    ``start_before`` (op indexes of the full history, so a subset keeps the fault where it was)."""
    node: int
    stop_before: int
    start_before: int

    def describe(self) -> str:
        return f"node{self.node + 1} down for ops {self.stop_before}-{self.start_before - 1}"


@dataclasses.dataclass(frozen=True)
class History:
    seed: int
    ops: tuple[Op, ...]
    fault: Fault | None = None

    def shapes(self) -> Counter:
        counts = Counter(s for op in self.ops for s in op.shapes)
        if self.fault is not None and any(self.fault.stop_before <= op.index < self.fault.start_before
                                          for op in self.ops):
            counts["replica_down"] += 1
        return counts

    def subset(self, ops: Iterable[Op]) -> "History":
        return dataclasses.replace(self, ops=tuple(ops))

    def without_fault(self) -> "History":
        return dataclasses.replace(self, fault=None)

    def touching(self, partitions: set[tuple[str, int]]) -> "History":
        return self.subset(op for op in self.ops if op.partitions & partitions)


class _Draw:
    """The drawing state of one history: the random source, the logical clock, the last timestamp per partition."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.clock = 0
        self.last: dict[tuple[str, int], int] = {}

    def value(self, column: str):
        return self.rng.choice(schema.DOMAINS[column])

    def ts(self, partition: tuple[str, int], shapes: list[str]) -> int:
        self.clock += 1_000
        roll = self.rng.random()
        if roll < 0.12 and partition in self.last:
            ts, shape = self.last[partition], "ts_equal"
        elif roll < 0.27:
            shift = self.rng.choice((-1, 1)) * self.rng.randrange(1, 20) * 1_000
            ts, shape = self.clock + shift + 500, "ts_out_of_order"
        else:
            ts, shape = self.clock, "ts_in_order"
        shapes.append(shape)
        self.last[partition] = ts
        return ts

    def ttl(self, shapes: list[str]) -> int | None:
        roll = self.rng.random()
        if roll < 0.10:
            shapes.append("ttl_short")
            return SHORT_TTL
        if roll < 0.15:
            shapes.append("ttl_long")
            return LONG_TTL
        return None


def _kv_statement(d: _Draw, shapes: list[str]) -> Stmt:
    rng = d.rng
    key = (("k", rng.choice(schema.KV_KEYS)),)
    partition = ("kv", key[0][1])
    kind = rng.choices(("insert", "update", "set_null", "delete_column", "delete_row"), (30, 30, 10, 10, 15))[0]
    shapes.append(kind)
    if kind == "insert":
        cols = [c for c in schema.KV_COLUMNS if rng.random() < 0.8] or ["a"]
        return Stmt("kv", "insert", key, tuple((c, d.value(c)) for c in cols), ttl=d.ttl(shapes),
                    ts=d.ts(partition, shapes))
    if kind == "update":
        cols = rng.sample(schema.KV_COLUMNS, rng.choice((1, 1, 2)))
        return Stmt("kv", "update", key, tuple((c, d.value(c)) for c in cols), ttl=d.ttl(shapes),
                    ts=d.ts(partition, shapes))
    if kind == "set_null":
        return Stmt("kv", "update", key, ((rng.choice(schema.KV_COLUMNS), None),), ts=d.ts(partition, shapes))
    if kind == "delete_column":
        return Stmt("kv", "delete", key, deleted=(rng.choice(schema.KV_COLUMNS),), ts=d.ts(partition, shapes))
    return Stmt("kv", "delete", key, ts=d.ts(partition, shapes))


def _cl_statement(d: _Draw, shapes: list[str], p: int | None = None) -> Stmt:
    rng = d.rng
    p = rng.choice(schema.CL_PARTITIONS) if p is None else p
    partition, row = ("cl", p), (("p", p), ("c", rng.choice(schema.CL_ROWS)))
    kinds = ("insert", "update", "update_static", "set_null", "delete_column", "delete_static", "delete_row",
             "delete_range", "delete_partition")
    kind = rng.choices(kinds, (24, 18, 12, 6, 5, 4, 10, 12, 9))[0]
    shapes.append(kind)
    if kind == "insert":
        cols = [c for c in schema.CL_COLUMNS if rng.random() < 0.8] + (["s"] if rng.random() < 0.3 else [])
        return Stmt("cl", "insert", row, tuple((c, d.value(c)) for c in cols), ttl=d.ttl(shapes),
                    ts=d.ts(partition, shapes))
    if kind == "update":
        cols = rng.sample(schema.CL_COLUMNS, rng.choice((1, 2)))
        return Stmt("cl", "update", row, tuple((c, d.value(c)) for c in cols), ttl=d.ttl(shapes),
                    ts=d.ts(partition, shapes))
    if kind == "update_static":
        return Stmt("cl", "update", (("p", p),), (("s", d.value("s")),), ttl=d.ttl(shapes), ts=d.ts(partition, shapes))
    if kind == "set_null":
        return Stmt("cl", "update", row, ((rng.choice(schema.CL_COLUMNS), None),), ts=d.ts(partition, shapes))
    if kind == "delete_column":
        return Stmt("cl", "delete", row, deleted=(rng.choice(schema.CL_COLUMNS),), ts=d.ts(partition, shapes))
    if kind == "delete_static":
        return Stmt("cl", "delete", (("p", p),), deleted=("s",), ts=d.ts(partition, shapes))
    if kind == "delete_row":
        return Stmt("cl", "delete", row, ts=d.ts(partition, shapes))
    if kind == "delete_range":
        lo, hi = sorted(rng.sample(range(len(schema.CL_ROWS) + 1), 2))
        bounds = rng.choice(((("c", ">=", lo),), (("c", "<", hi),), (("c", ">", lo), ("c", "<=", hi))))
        return Stmt("cl", "delete", (("p", p),), bounds=bounds, ts=d.ts(partition, shapes))
    return Stmt("cl", "delete", (("p", p),), ts=d.ts(partition, shapes))


def _lwt(d: _Draw, shapes: list[str]) -> Stmt:
    rng = d.rng
    kind = rng.choice(("lwt_insert", "lwt_update", "lwt_delete"))
    shapes.append(kind)
    if rng.random() < 0.5:
        key, cols = (("k", rng.choice(schema.KV_KEYS)),), schema.KV_COLUMNS
        table = "kv"
    else:
        key, cols = (("p", rng.choice(schema.CL_PARTITIONS)), ("c", rng.choice(schema.CL_ROWS))), schema.CL_COLUMNS
        table = "cl"
    if kind == "lwt_insert":
        return Stmt(table, "insert", key, tuple((c, d.value(c)) for c in cols), condition="IF NOT EXISTS")
    if kind == "lwt_delete":
        return Stmt(table, "delete", key, condition="IF EXISTS")
    col = rng.choice(cols)
    return Stmt(table, "update", key, ((col, d.value(col)),), condition=f"IF {col} = {literal(d.value(col))}")


def generate(seed: int, ops: int = 40, nodes: int = 3, fault_rate: float = 1 / 3) -> History:
    """The history of ``seed``: ``ops`` operations, and one replica stopped for a stretch in about
    ``fault_rate`` of the seeds (never with fewer than 2 nodes)."""
    if ops < 1:
        raise ValueError(f"a history needs at least one operation, asked for {ops}")
    rng = random.Random(seed)
    d = _Draw(rng)
    fault = None
    if nodes >= 2 and ops >= 4 and rng.random() < fault_rate:
        stop = rng.randrange(0, ops // 2)
        fault = Fault(rng.randrange(nodes), stop, rng.randrange(stop + 2, ops + 1))
    out = []
    for i in range(ops):
        down = fault is not None and fault.stop_before <= i < fault.start_before
        shapes: list[str] = []
        roll = rng.random()
        batch = None
        if roll < 0.14 and not down:
            statements = (_lwt(d, shapes),)
        elif roll < 0.30:
            batch = rng.choice(("logged", "unlogged"))
            shapes.append(f"batch_{batch}")
            p = rng.choice(schema.CL_PARTITIONS)   # two rows of one partition and a row of another
            statements = (_cl_statement(d, shapes, p), _cl_statement(d, shapes, p),
                          _kv_statement(d, shapes) if rng.random() < 0.6 else _cl_statement(d, shapes))
        else:
            statements = ((_kv_statement if rng.random() < 0.5 else _cl_statement)(d, shapes),)
        consistency = "ONE" if down else rng.choice(CONSISTENCY)
        shapes.append(f"cl_{consistency.lower()}")
        out.append(Op(i, statements, rng.randrange(nodes), consistency, tuple(shapes), batch))
    return History(seed, tuple(out), fault)


def summary_of(counts: Counter) -> str:
    """``shape count`` for every shape, in SHAPES' order, then the shapes never drawn."""
    text = ", ".join(f"{s} {counts.get(s, 0)}" for s in SHAPES)
    never = [s for s in SHAPES if not counts.get(s)]
    return text + ("; never drawn: " + ", ".join(never) if never else "; every shape drawn")
