"""Seeded random histories of every CQL write shape over a drawn design (the same seed, the same history: replayable).

A history is a list of operations on the design's two source tables (``schema``): inserts (some of a few columns),
partial updates, a column set to null or deleted, collection element additions and removals, map element deletes,
UDT field updates, overwrites, empty values, row, clustering-range, ``IN`` and partition deletes, static column
updates and deletes, TTLs (3 s, expired before the check, or 600 s, alive at it), lightweight transactions (``IF NOT
EXISTS``, ``IF EXISTS``, ``IF col = value``), logged and unlogged batches over two partitions. Each operation belongs to
one of two to four clients, which the runner drives at once, each client's clock off by up to 50 ms; it goes to a
drawn coordinator at a drawn consistency level (ONE, QUORUM, ALL). A third of the histories stop one replica for a
stretch of operations (hints off, then read repair), or pause it (SIGSTOP: a stalled JVM, hints on); those
operations are written at ONE, without LWT (Paxos needs every replica of RF 2). One in ten operations adds or removes
a row of the fan-out table ``fans`` (a follow, an unfollow), or deletes a partition of it: the feeds follow it.

About 420 lines: one draw per write shape, sharing the drawing state (clock, skews, last timestamps).

Timestamps are given explicitly (``USING TIMESTAMP``): offsets in microseconds from the run's base, which lies an
hour before the run, on a logical clock (1 ms a step) plus the client's skew; some out of order (before or after their
neighbours, half a millisecond off so they tie with nothing) and some equal to the last timestamp of the same
partition. A lightweight transaction cannot carry one: its Paxos timestamp (the coordinator's clock) is newer than
every given one, in every replay alike.
"""
from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Iterable

from . import schema
from .schema import Column, Design, Source

CONSISTENCY = ("ONE", "QUORUM", "ALL")
SHORT_TTL, LONG_TTL = 3, 600
MAX_SKEW_US = 50_000
# every shape a history can draw (the campaign's summary counts them; `summary` lists those never drawn)
SHAPES = ("insert", "update", "set_null", "delete_column", "delete_row", "delete_range", "delete_in",
          "delete_partition", "update_static", "delete_static", "element_add", "element_remove", "element_delete",
          "udt_field", "overwrite_collection", "empty_value", "ttl_short", "ttl_long", "lwt_insert", "lwt_update",
          "lwt_delete", "batch_logged", "batch_unlogged", "ts_in_order", "ts_out_of_order", "ts_equal",
          "cl_one", "cl_quorum", "cl_all", "clients_2", "clients_3", "clients_4", "replica_down", "replica_paused",
          "fan_add", "fan_remove", "fan_partition_delete")


def literal(value, kind: schema.Kind | None = None) -> str:
    """A CQL literal of a native value, or of a collection's or UDT's value (``kind`` says which)."""
    if value is None:
        return "null"
    if kind is not None and kind.collection == "set":
        return "{" + ", ".join(literal(v) for v in sorted(value)) + "}"
    if kind is not None and kind.collection == "frozen":
        return "{" + ", ".join(literal(v) for v in sorted(value)) + "}"
    if kind is not None and kind.collection == "list":
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if kind is not None and kind.collection == "map":
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in sorted(dict(value).items())) + "}"
    if kind is not None and kind.collection == "udt":
        a, b = value
        return f"{{a: {literal(a)}, b: {literal(b)}}}"
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclasses.dataclass(frozen=True)
class Stmt:
    """One CQL statement of a history; the run's id and timestamp base are filled in when rendered."""
    table: str                                     # a source table of the design
    verb: str                                      # insert | update | delete
    key: tuple[tuple[str, str], ...]               # (column, "= literal" or "IN (...)") it names, partition first
    values: tuple[tuple[str, str], ...] = ()       # insert: (column, literal); update: (assignee, expression)
    deleted: tuple[str, ...] = ()                  # DELETE <columns or elements> FROM
    bounds: tuple[tuple[str, str, str], ...] = ()  # a range delete's clustering bounds: (column, operator, literal)
    ts: int | None = None                          # microseconds after the run's base (None: a Paxos timestamp)
    ttl: int | None = None
    condition: str | None = None                   # IF ... (rendered CQL)
    ks: tuple[int, ...] = ()                       # the partitions k it names

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return {(self.table, k) for k in self.ks}

    def cql(self, keyspace: str, run: int, base: int) -> str:
        table = f"{keyspace}.{self.table}"
        where = " AND ".join([f"run = {run}"] + [f"{c} {rel}" for c, rel in self.key]
                             + [f"{c} {op} {v}" for c, op, v in self.bounds])
        using = [f"TTL {self.ttl}"] if self.ttl else []
        using += [f"TIMESTAMP {base + self.ts}"] if self.ts is not None else []
        using_text = f" USING {' AND '.join(using)}" if using else ""
        cond = f" {self.condition}" if self.condition else ""
        if self.verb == "insert":
            cols = ["run"] + [c for c, _ in self.key] + [c for c, _ in self.values]
            vals = [str(run)] + [rel[2:] for _, rel in self.key] + [v for _, v in self.values]
            return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join(vals)}){cond}{using_text}"
        if self.verb == "update":
            sets = ", ".join(f"{c} = {v}" for c, v in self.values)
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
    client: int = 0             # the client that sends it (the runner drives the clients at once)

    @property
    def lwt(self) -> bool:
        return any(s.condition for s in self.statements)

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return set().union(*(s.partitions for s in self.statements))

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
        return f"#{self.index} client{self.client + 1} node{self.coordinator + 1} {self.consistency}: " \
               f"{self.cql(keyspace, run, base)}"


@dataclasses.dataclass(frozen=True)
class Fault:
    """One replica stopped (gracefully, hints off everywhere), or paused (SIGSTOP, hints on), from the operation
    ``stop_before`` until the one ``start_before`` (op indexes of the full history, so a subset keeps the fault where
    it was)."""
    node: int
    stop_before: int
    start_before: int
    kind: str = "stop"          # stop | pause

    def describe(self) -> str:
        return f"node{self.node + 1} {'paused' if self.kind == 'pause' else 'down'} for ops " \
               f"{self.stop_before}-{self.start_before - 1}"


@dataclasses.dataclass(frozen=True)
class History:
    seed: int
    ops: tuple[Op, ...]
    fault: Fault | None = None
    clients: int = 1
    skews: tuple[int, ...] = (0,)      # each client's clock offset (microseconds)

    def shapes(self) -> Counter:
        counts = Counter(s for op in self.ops for s in op.shapes)
        if self.fault is not None and any(self.fault.stop_before <= op.index < self.fault.start_before
                                          for op in self.ops):
            counts["replica_paused" if self.fault.kind == "pause" else "replica_down"] += 1
        if self.clients > 1:
            counts[f"clients_{self.clients}"] += 1
        return counts

    def subset(self, ops: Iterable[Op]) -> "History":
        return dataclasses.replace(self, ops=tuple(ops))

    def without_fault(self) -> "History":
        return dataclasses.replace(self, fault=None)

    def touching(self, partitions: set[tuple[str, int]]) -> "History":
        return self.subset(op for op in self.ops if op.partitions & partitions)


class _Draw:
    """The drawing state of one history: the random source, the logical clock, the last timestamp per partition,
    the clients' skews."""

    def __init__(self, rng: random.Random, clients: int):
        self.rng = rng
        self.clock = 0
        self.last: dict[tuple[str, int], int] = {}
        self.skews = [0] + [rng.randrange(-MAX_SKEW_US, MAX_SKEW_US + 1) for _ in range(clients - 1)]
        self.client = 0

    def ts(self, partition: tuple[str, int], shapes: list[str]) -> int:
        self.clock += 1_000
        roll = self.rng.random()
        if roll < 0.12 and partition in self.last:
            ts, shape = self.last[partition], "ts_equal"
        elif roll < 0.27:
            shift = self.rng.choice((-1, 1)) * self.rng.randrange(1, 20) * 1_000
            ts, shape = self.clock + shift + 500 + self.skews[self.client], "ts_out_of_order"
        else:
            ts, shape = self.clock + self.skews[self.client], "ts_in_order"
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

    def value(self, column: Column, shapes: list[str]):
        kind = column.kind
        rng = self.rng
        if kind.collection in ("set", "frozen"):
            if kind.collection == "frozen":
                return rng.choice(kind.values)
            return frozenset(rng.sample(kind.values, rng.randint(1, 2)))
        if kind.collection == "list":
            return tuple(rng.choice(kind.values) for _ in range(rng.randint(1, 3)))
        if kind.collection == "map":
            return tuple(dict(rng.sample(kind.values, rng.randint(1, 2))).items())
        value = rng.choice(kind.values)
        if value in ("", b""):
            shapes.append("empty_value")
        return value

    def element_change(self, column: Column, shapes: list[str]) -> tuple[str, str] | None:
        """An update of one element of a collection or one field of a UDT: (assignee, expression)."""
        rng, kind, c = self.rng, column.kind, column.name
        if kind.collection == "set":
            shape = rng.choice(("element_add", "element_remove"))
            shapes.append(shape)
            return c, f"{c} {'+' if shape == 'element_add' else '-'} {{{literal(rng.choice(kind.values))}}}"
        if kind.collection == "list":
            shape = rng.choice(("element_add", "element_add", "element_remove"))
            shapes.append(shape)
            element = literal(rng.choice(kind.values))
            if shape == "element_remove":
                return c, f"{c} - [{element}]"
            return c, f"{c} + [{element}]" if rng.random() < 0.7 else f"[{element}] + {c}"
        if kind.collection == "map":
            key, value = rng.choice(kind.values)
            if rng.random() < 0.3:
                shapes.append("element_remove")
                return c, f"{c} - {{{literal(key)}}}"
            shapes.append("element_add")
            return (f"{c}[{literal(key)}]", literal(value)) if rng.random() < 0.5 else (c, f"{c} + {{{literal(key)}: {literal(value)}}}")
        if kind.collection == "udt":
            shapes.append("udt_field")
            a, b = rng.choice(kind.values)
            return (f"{c}.a", literal(a)) if rng.random() < 0.5 else (f"{c}.b", literal(b))
        return None


def _key(d: _Draw, s: Source, whole: bool = True) -> tuple[tuple[tuple[str, str], ...], int]:
    k = d.rng.choice(schema.KEYS)
    key = [("k", f"= {k}")]
    if whole:
        key += [(c, f"= {literal(d.rng.choice(schema.CLUSTERING_VALUES[t]))}") for c, t, _ in s.clustering]
    return tuple(key), k


def _statement(d: _Draw, s: Source, shapes: list[str]) -> Stmt:
    rng = d.rng
    kinds = ["insert", "update", "set_null", "delete_column", "delete_row", "element"]
    weights = [24, 20, 6, 6, 10, 14]
    if s.clustering:
        kinds += ["delete_range", "delete_in", "delete_partition"]
        weights += [8, 5, 5]
    else:
        kinds += ["delete_in"]
        weights += [3]
    if s.static:
        kinds += ["update_static", "delete_static"]
        weights += [10, 4]
    kind = rng.choices(kinds, weights)[0]
    key, k = _key(d, s)
    partition = (s.name, k)
    if kind == "insert":
        cols = [c for c in s.columns if rng.random() < 0.7] + ([s.static] if s.static and rng.random() < 0.3 else [])
        cols = cols or [s.columns[0]]
        shapes.append("insert")
        values = tuple((c.name, literal(d.value(c, shapes), c.kind)) for c in cols)
        return Stmt(s.name, "insert", key, values, ttl=d.ttl(shapes), ts=d.ts(partition, shapes), ks=(k,))
    if kind == "update":
        cols = rng.sample(s.columns, rng.choice((1, 1, 2)))
        shapes.append("update")
        if any(c.kind.collection in ("set", "list", "map", "udt") for c in cols):
            shapes.append("overwrite_collection")
        values = tuple((c.name, literal(d.value(c, shapes), c.kind)) for c in cols)
        return Stmt(s.name, "update", key, values, ttl=d.ttl(shapes), ts=d.ts(partition, shapes), ks=(k,))
    if kind == "element":
        multi = [c for c in s.all_columns if c.kind.collection in ("set", "list", "map", "udt")]
        if not multi:
            return _statement(d, s, shapes)
        column = rng.choice(multi)
        if column is s.static:
            key = key[:1]
        if column.kind.collection == "map" and rng.random() < 0.3:
            shapes.append("element_delete")
            return Stmt(s.name, "delete", key, deleted=(f"{column.name}[{literal(rng.choice(column.kind.values)[0])}]",),
                        ts=d.ts(partition, shapes), ks=(k,))
        return Stmt(s.name, "update", key, (d.element_change(column, shapes),), ttl=d.ttl(shapes),
                    ts=d.ts(partition, shapes), ks=(k,))
    if kind == "set_null":
        shapes.append("set_null")
        return Stmt(s.name, "update", key, ((rng.choice(s.columns).name, "null"),), ts=d.ts(partition, shapes), ks=(k,))
    if kind == "delete_column":
        shapes.append("delete_column")
        return Stmt(s.name, "delete", key, deleted=(rng.choice(s.columns).name,), ts=d.ts(partition, shapes), ks=(k,))
    if kind == "update_static":
        shapes.append("update_static")
        value = literal(d.value(s.static, shapes), s.static.kind)
        return Stmt(s.name, "update", key[:1], ((s.static.name, value),), ttl=d.ttl(shapes),
                    ts=d.ts(partition, shapes), ks=(k,))
    if kind == "delete_static":
        shapes.append("delete_static")
        return Stmt(s.name, "delete", key[:1], deleted=(s.static.name,), ts=d.ts(partition, shapes), ks=(k,))
    if kind == "delete_row":
        shapes.append("delete_row")
        return Stmt(s.name, "delete", key, ts=d.ts(partition, shapes), ks=(k,))
    if kind == "delete_in":
        shapes.append("delete_in")
        if not s.clustering:
            ks = tuple(sorted(rng.sample(schema.KEYS, 2)))
            return Stmt(s.name, "delete", (("k", f"IN ({', '.join(map(str, ks))})"),), ts=d.ts(partition, shapes), ks=ks)
        first, first_type, _ = s.clustering[0]
        values = rng.sample(schema.CLUSTERING_VALUES[first_type], 2)
        return Stmt(s.name, "delete", key[:1] + ((first, f"IN ({', '.join(literal(v) for v in values)})"),),
                    ts=d.ts(partition, shapes), ks=(k,))
    if kind == "delete_range":
        shapes.append("delete_range")
        first, first_type, _ = s.clustering[0]
        domain = schema.CLUSTERING_VALUES[first_type]
        lo, hi = sorted(rng.sample(range(len(domain)), 2))
        bounds = rng.choice((((first, ">=", literal(domain[lo])),), ((first, "<", literal(domain[hi])),),
                             ((first, ">", literal(domain[lo])), (first, "<=", literal(domain[hi])))))
        return Stmt(s.name, "delete", key[:1], bounds=bounds, ts=d.ts(partition, shapes), ks=(k,))
    shapes.append("delete_partition")
    return Stmt(s.name, "delete", key[:1], ts=d.ts(partition, shapes), ks=(k,))


def _lwt(d: _Draw, design: Design, shapes: list[str]) -> Stmt:
    rng = d.rng
    s = rng.choice(design.sources)
    kind = rng.choice(("lwt_insert", "lwt_update", "lwt_delete"))
    shapes.append(kind)
    key, k = _key(d, s)
    simple = [c for c in s.columns if not c.kind.collection]
    if kind == "lwt_insert":
        values = tuple((c.name, literal(d.value(c, shapes), c.kind)) for c in s.columns)
        return Stmt(s.name, "insert", key, values, condition="IF NOT EXISTS", ks=(k,))
    if kind == "lwt_delete":
        return Stmt(s.name, "delete", key, condition="IF EXISTS", ks=(k,))
    col = rng.choice(simple)
    return Stmt(s.name, "update", key, ((col.name, literal(d.value(col, shapes), col.kind)),),
                condition=f"IF {col.name} = {literal(d.value(col, shapes), col.kind)}", ks=(k,))


def _fan(d: _Draw, shapes: list[str]) -> Stmt:
    """A follow or an unfollow: a row of ``fans`` added or removed (of the rows a run starts with, or others), or a
    partition of it deleted; the feeds follow it."""
    n = d.rng.choice(sorted(schema.FANS))
    f = d.rng.choice((100, 101, 102, 103, 104, 105, 106))
    roll = d.rng.random()
    kind = "fan_add" if roll < 0.5 else "fan_remove" if roll < 0.93 else "fan_partition_delete"
    shapes.append(kind)
    key = (("n", f"= {n}"),) if kind == "fan_partition_delete" else (("n", f"= {n}"), ("f", f"= {f}"))
    ts = d.ts(("fans", n), shapes)
    return Stmt("fans", "insert" if kind == "fan_add" else "delete", key, ts=ts)


def generate(seed: int, design: Design, ops: int = 40, nodes: int = 3, fault_rate: float = 1 / 3) -> History:
    """The history of ``seed`` on ``design``: ``ops`` operations from two to four clients, and one replica stopped
    for a stretch in about ``fault_rate`` of the seeds (never with fewer than 2 nodes)."""
    if ops < 1:
        raise ValueError(f"a history needs at least one operation, asked for {ops}")
    rng = random.Random(seed)
    clients = rng.randint(2, 4)
    d = _Draw(rng, clients)
    fault = None
    if nodes >= 2 and ops >= 4 and rng.random() < fault_rate:
        stop = rng.randrange(0, ops // 2)
        fault = Fault(rng.randrange(nodes), stop, rng.randrange(stop + 2, ops + 1), rng.choice(("stop", "pause")))
    out = []
    clustered = next(s for s in design.sources if s.clustering)
    for i in range(ops):
        down = fault is not None and fault.stop_before <= i < fault.start_before
        d.client = rng.randrange(clients)
        shapes: list[str] = []
        roll = rng.random()
        batch = None
        if roll < 0.12 and not down:
            statements = (_lwt(d, design, shapes),)
        elif roll > 0.9:
            statements = (_fan(d, shapes),)
        elif roll < 0.28:
            batch = rng.choice(("logged", "unlogged"))
            shapes.append(f"batch_{batch}")
            # two rows of one partition and a row of another
            first = _statement(d, clustered, shapes)
            second = _statement(d, clustered, shapes)
            second = dataclasses.replace(second, key=first.key[:1] + second.key[1:], ks=first.ks) \
                if len(first.ks) == 1 and len(second.ks) == 1 else second
            statements = (first, second, _statement(d, rng.choice(design.sources), shapes))
        else:
            statements = (_statement(d, rng.choice(design.sources), shapes),)
        consistency = "ONE" if down else rng.choice(CONSISTENCY)
        shapes.append(f"cl_{consistency.lower()}")
        out.append(Op(i, statements, rng.randrange(nodes), consistency, tuple(shapes), batch, d.client))
    return History(seed, tuple(out), fault, clients, tuple(d.skews))


def summary_of(counts: Counter) -> str:
    """``shape count`` for every shape, in SHAPES' order, then the shapes never drawn."""
    text = ", ".join(f"{s} {counts.get(s, 0)}" for s in SHAPES)
    never = [s for s in SHAPES if not counts.get(s)]
    return text + ("; never drawn: " + ", ".join(never) if never else "; every shape drawn")
