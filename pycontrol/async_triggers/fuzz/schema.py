"""The fuzzer's tables and flows, drawn from a seed: a *design* (the same seed, the same design).

A design has three source tables: ``s0`` without clustering columns and ``s1`` with one or two (each ASC or DESC,
int or text, and maybe a static column); each has an int column ``n`` (a fan-out's match) and two to four more
columns drawn from native types (an empty string and an empty blob among their values), non-frozen sets, lists, maps
and a UDT, and a frozen set; ``s2`` has one-cell columns only (with or without a clustering column) and a copy of
them all, a direct target. Every partition key starts with ``run``: each run (a seed, or one attempt of a shrink) writes
keys of its own, so its tasks, lineage and derived rows never meet another run's; the campaign truncates the tables
before each run, so that it is verified on tables that hold its rows alone.

Flows, on each source: a copy of every column (a lineage target when it copies a static column, a collection or a
UDT) and a copy of the columns of one cell (a direct target),
an index keyed by a native column, a fan-out through ``fans`` matched on ``n`` with several pages, a direct write and
an index into one table (the Twitter flow's shape), a cascade (an index of the copy) and, on the clustered source, a
target partitioned by its first clustering column. Values come from small domains so that operations collide.
"""
from __future__ import annotations

import dataclasses
import random
import uuid

KEYSPACE = "fuzz"
KEYS = tuple(range(5))              # the partitions k of each source (after run)
CLUSTERING_VALUES = {"int": (0, 1, 2, 3, 4), "text": ("a", "b", "c", "d")}
FANS = {0: (100, 101, 102, 103, 104), 1: (101, 105), 2: ()}   # n -> the rows of fans (n = 2 fans out to nobody)
PAGE_SIZE = 2                       # a fan-out of five rows is three pages
UUIDS = tuple(uuid.UUID(int=i * 0x1111) for i in (1, 2, 3))
# time-based (version 1) UUIDs, fixed: a few milliseconds apart in 2026
TIMEUUIDS = tuple(uuid.UUID(fields=(0x1f0a_0000 + i, 0x0b2c, 0x11f1, 0x80, 0x01, 0x0000_0000_0001)) for i in (1, 2, 3))


@dataclasses.dataclass(frozen=True)
class Kind:
    """A column type the fuzzer draws: its CQL type and the values its writes use (Python values, rendered by
    ``literal``; a collection's values are its elements)."""
    name: str
    cql: str
    values: tuple
    key: bool = False          # can key an index (a native type)
    collection: str = ""       # set | list | map | udt | frozen


KINDS = {
    "int": Kind("int", "int", (0, 1, 2, 3), key=True),
    "bigint": Kind("bigint", "bigint", (0, 1_000_000_000_000, -5), key=True),
    "text": Kind("text", "text", ("", "a", "b", "c"), key=True),
    "uuid": Kind("uuid", "uuid", UUIDS, key=True),
    "timeuuid": Kind("timeuuid", "timeuuid", TIMEUUIDS, key=True),
    "blob": Kind("blob", "blob", (b"", b"\x01", b"\x02\x03")),
    "set": Kind("set", "set<text>", ("x", "y", "z"), collection="set"),
    "list": Kind("list", "list<int>", (1, 2, 3), collection="list"),
    "map": Kind("map", "map<text, int>", (("x", 1), ("y", 2), ("x", 3)), collection="map"),
    "udt": Kind("udt", "pair", ((0, "p"), (1, "q"), (1, None)), collection="udt"),
    "frozen": Kind("frozen", "frozen<set<int>>", (frozenset({1}), frozenset({1, 2}), frozenset({3})), collection="frozen"),
}
UDT_CQL = "CREATE TYPE IF NOT EXISTS {ks}.pair (a int, b text)"


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    kind: Kind


@dataclasses.dataclass(frozen=True)
class Source:
    name: str
    clustering: tuple[tuple[str, str, str], ...]     # (column, int | text, ASC | DESC)
    columns: tuple[Column, ...]                      # regular columns, n first
    static: Column | None = None
    plain: bool = False                              # one-cell columns only, and only a copy: a direct target

    @property
    def key(self) -> tuple[str, ...]:
        return ("k",) + tuple(c for c, _, _ in self.clustering)

    def column(self, name: str) -> Column:
        return next(c for c in self.all_columns if c.name == name)

    @property
    def all_columns(self) -> tuple[Column, ...]:
        return self.columns + ((self.static,) if self.static else ())

    @property
    def single_cell(self) -> tuple[Column, ...]:
        """The regular columns of one cell each (native types and frozen collections): a copy of them is direct."""
        return tuple(c for c in self.columns if c.kind.collection in ("", "frozen"))

    @property
    def indexable(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind.key and c.name != "n")


@dataclasses.dataclass(frozen=True)
class Design:
    seed: int
    sources: tuple[Source, ...]

    # --- tables ------------------------------------------------------------------------------------------------
    def tables(self) -> dict[str, tuple[str, ...]]:
        """Every table the fuzzer writes or its flows derive, with its partition key after ``run``."""
        out = {"fans": ("n",)}
        for s in self.sources:
            out[s.name] = ("k",)
            out[f"{s.name}_copy"] = ("k",)
            if s.plain:
                continue
            out[f"{s.name}_feed"] = ("f",)
            out[f"{s.name}_both"] = ("u",)
            if s.indexable:
                x = self.index_column(s)
                out[f"{s.name}_by_x"] = (x.name,)
                out[f"{s.name}_copy_by_x"] = (x.name,)
                out[f"{s.name}_totals"] = (x.name,)
            if s.clustering:
                out[f"{s.name}_by_c"] = (s.clustering[0][0],)
        return out

    def members_tables(self) -> list[str]:
        """The aggregates' members tables (keyed by the group, not by ``run``): emptied before a run too."""
        return [f"async_members_{s.name}_totals" for s in self.sources if not s.plain and s.indexable]

    def follow_tables(self, keyspace: str = KEYSPACE) -> list[str]:
        """The join index and the copy of ``fans`` of each feed (they follow ``fans``; keyed by the match, not by
        ``run``): the deploy creates them, and they are emptied before a run too."""
        return [f"{prefix}{keyspace}_{s.name}_feed" for s in self.sources if not s.plain
                for prefix in ("async_join_", "async_follows_")]

    def index_column(self, source: Source) -> Column:
        return source.indexable[0]

    def source_keys(self) -> dict[str, tuple[str, tuple]]:
        """The flows' source tables (read at ALL after a replica was down) and their partitions' key values."""
        out = {s.name: ("k", KEYS) for s in self.sources}
        out.update({f"{s.name}_copy": ("k", KEYS) for s in self.sources if s.indexable and not s.plain})
        return out

    def schema_cql(self, keyspace: str = KEYSPACE, replication_factor: int = 2) -> str:
        ks = keyspace
        lines = [f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                 f"{{'class': 'SimpleStrategy', 'replication_factor': {replication_factor}}};",
                 UDT_CQL.format(ks=ks) + ";",
                 f"CREATE TABLE IF NOT EXISTS {ks}.fans (run bigint, n int, f int, PRIMARY KEY ((run, n), f));"]
        for s in self.sources:
            lines += self._source_tables(ks, s)
        return "\n".join(lines) + "\n"

    def _source_tables(self, ks: str, s: Source) -> list[str]:
        defs = ["run bigint", "k int"] + [f"{c} {t}" for c, t, _ in s.clustering]
        defs += [f"{c.name} {c.kind.cql}" for c in s.columns]
        if s.static:
            defs.append(f"{s.static.name} {s.static.kind.cql} static")
        clustering = ", ".join(c for c, _, _ in s.clustering)
        pk = f"PRIMARY KEY ((run, k){', ' + clustering if clustering else ''})"
        order = ", ".join(f"{c} {o}" for c, _, o in s.clustering)
        with_order = f" WITH CLUSTERING ORDER BY ({order})" if order else ""
        out = [f"CREATE TABLE IF NOT EXISTS {ks}.{s.name} ({', '.join(defs + [pk])}){with_order};"]
        copy_defs = ["run bigint", "k int"] + [f"{c} {t}" for c, t, _ in s.clustering]
        copy_defs += [f"{c.name} {c.kind.cql}" for c in s.all_columns]
        out.append(f"CREATE TABLE IF NOT EXISTS {ks}.{s.name}_copy ({', '.join(copy_defs + [pk])});")
        if s.plain:
            return out
        key_cols = ", ".join(["k"] + [c for c, _, _ in s.clustering])
        key_defs = [f"{c} {t}" for c, t, _ in s.clustering]
        value = next((c for c in s.columns if c.name != "n"), s.columns[0])
        fed = feed_value(s)
        out.append(f"CREATE TABLE IF NOT EXISTS {ks}.{s.name}_feed (run bigint, f int, k int, "
                   f"{''.join(d + ', ' for d in key_defs)}{fed.name} {fed.kind.cql}, "
                   f"PRIMARY KEY ((run, f), {key_cols}));")
        out.append(f"CREATE TABLE IF NOT EXISTS {ks}.{s.name}_both (run bigint, u int, k int, "
                   f"{''.join(d + ', ' for d in key_defs)}{value.name} {value.kind.cql}, "
                   f"PRIMARY KEY ((run, u), {key_cols}));")
        if s.indexable:
            x = self.index_column(s)
            for table in (f"{s.name}_by_x", f"{s.name}_copy_by_x"):
                out.append(f"CREATE TABLE IF NOT EXISTS {ks}.{table} (run bigint, {x.name} {x.kind.cql}, k int, "
                           f"{''.join(d + ', ' for d in key_defs)}n int, PRIMARY KEY ((run, {x.name}), {key_cols}));")
            out.append(f"CREATE TABLE IF NOT EXISTS {ks}.{s.name}_totals (run bigint, {x.name} {x.kind.cql}, rows bigint, "
                       f"total bigint, low int, high int, PRIMARY KEY ((run, {x.name})));")
            # the deploy creates the members table; a run's tables are emptied before it, this one too
            out.append(f"CREATE TABLE IF NOT EXISTS {ks}.async_members_{s.name}_totals (g0 bigint, g1 {x.kind.cql}, "
                       f"k0 bigint, k1 int{''.join(f', k{i + 2} {t}' for i, (_, t, _) in enumerate(s.clustering))}, "
                       f"v0 int, PRIMARY KEY ((g0, g1), k0, k1{''.join(f', k{i + 2}' for i in range(len(s.clustering)))}));")
        if s.clustering:
            first, first_type, _ = s.clustering[0]
            rest = [f"{c} {t}" for c, t, _ in s.clustering[1:]]
            rest_cols = "".join(", " + c for c, _, _ in s.clustering[1:])
            out.append(f"CREATE TABLE IF NOT EXISTS {ks}.{s.name}_by_c (run bigint, {first} {first_type}, k int, "
                       f"{''.join(d + ', ' for d in rest)}n int, PRIMARY KEY ((run, {first}), k{rest_cols}));")
        return out

    # --- flows -------------------------------------------------------------------------------------------------
    def flow_names(self, keyspace: str = KEYSPACE) -> list[str]:
        return [name for name, _ in self._flows(keyspace)]

    def _flows(self, ks: str) -> list[tuple[str, str]]:
        out = []
        for s in self.sources:
            keys = "run=s.run, k=s.k" + "".join(f", {c}=s.{c}" for c, _, _ in s.clustering)
            every = "".join(f", {c.name}=s.{c.name}" for c in s.all_columns)
            value = next((c for c in s.columns if c.name != "n"), s.columns[0])
            out.append((f"{ks}_{s.name}_copy",
                        f'Flow(name="{ks}_{s.name}_copy", source="{ks}.{s.name}", '
                        f'steps=[Write("{ks}.{s.name}_copy", {keys}{every})])'))
            if s.plain:
                continue
            fed = feed_value(s)
            # follows fans: the histories add and remove its rows (a follow, an unfollow)
            out.append((f"{ks}_{s.name}_feed",
                        f'Flow(name="{ks}_{s.name}_feed", source="{ks}.{s.name}", page_size={PAGE_SIZE}, '
                        f'steps=[FanOut("{ks}.fans", match={{"run": s.run, "n": s.n}}, follow=True).write('
                        f'"{ks}.{s.name}_feed", {keys}, f=row.f, {fed.name}=s.{fed.name})])'))
            out.append((f"{ks}_{s.name}_both",
                        f'Flow(name="{ks}_{s.name}_both", source="{ks}.{s.name}", steps=['
                        f'Write("{ks}.{s.name}_both", {keys}, u=s.k, {value.name}=s.{value.name}), '
                        f'Write("{ks}.{s.name}_both", {keys}, u=s.n, {value.name}=s.{value.name})])'))
            if s.indexable:
                x = self.index_column(s)
                out.append((f"{ks}_{s.name}_by_x",
                            f'Flow(name="{ks}_{s.name}_by_x", source="{ks}.{s.name}", '
                            f'steps=[Write("{ks}.{s.name}_by_x", {keys}, {x.name}=s.{x.name}, n=s.n)])'))
                out.append((f"{ks}_{s.name}_copy_by_x",
                            f'Flow(name="{ks}_{s.name}_copy_by_x", source="{ks}.{s.name}_copy", '
                            f'steps=[Write("{ks}.{s.name}_copy_by_x", {keys}, {x.name}=s.{x.name}, n=s.n)])'))
                out.append((f"{ks}_{s.name}_totals",
                            f'Flow(name="{ks}_{s.name}_totals", source="{ks}.{s.name}", steps=[Aggregate('
                            f'"{ks}.{s.name}_totals", group_by={{"run": s.run, "{x.name}": s.{x.name}}}, count="rows", '
                            f'sum={{"total": s.n}}, min={{"low": s.n}}, max={{"high": s.n}})])'))
            if s.clustering:
                out.append((f"{ks}_{s.name}_by_c",
                            f'Flow(name="{ks}_{s.name}_by_c", source="{ks}.{s.name}", '
                            f'steps=[Write("{ks}.{s.name}_by_c", {keys}, n=s.n)])'))
        return out

    def flow_file(self, keyspace: str = KEYSPACE) -> str:
        flows = ",\n    ".join(text for _, text in self._flows(keyspace))
        return (f'"""The fuzzer\'s flows on keyspace {keyspace}, design {self.seed} (async_triggers.fuzz.schema)."""\n'
                "from async_triggers.flows import Aggregate, FanOut, Flow, Write, row, source as s\n\n"
                f"FLOWS = [\n    {flows},\n]\n")

    def describe(self) -> str:
        parts = []
        for s in self.sources:
            cols = ", ".join(f"{c.name} {c.kind.cql}" for c in s.columns)
            clustering = ", ".join(f"{c} {t} {o}" for c, t, o in s.clustering) or "no clustering"
            static = f", static {s.static.name} {s.static.kind.cql}" if s.static else ""
            parts.append(f"{s.name} ({clustering}; {cols}{static})")
        return f"design {self.seed}: " + "; ".join(parts)

    def suspects(self, sample: dict) -> set[tuple[str, int]]:
        """The source partitions a differing derived row comes from: every derived table keeps ``k``; which source it
        belongs to is not known from the row alone, so both."""
        if sample.get("k") is None:
            return set()
        return {(s.name, int(sample["k"])) for s in self.sources}


def feed_value(s: "Source") -> Column:
    """The value a source's feed copies through its fan-out that follows ``fans``: a regular column of one cell (a
    following fan-out refuses a non-frozen collection or UDT), ``n`` when there is no other."""
    return next((c for c in s.columns if c.name != "n" and c.kind.collection in ("", "frozen")),
                next(c for c in s.columns if c.name == "n"))


def fan_rows(run: int) -> list[tuple[int, int, int]]:
    return [(run, n, f) for n, fs in sorted(FANS.items()) for f in fs]


def draw(seed: int) -> Design:
    """The design of ``seed``. Consecutive designs rotate through the collection kinds, the clustering column's type
    and order and the static column's kind, so that a few designs cover them all; the rest is drawn."""
    rng = random.Random(f"design-{seed}")
    collections = ("set", "list", "map", "udt")
    others = ("int", "bigint", "text", "uuid", "timeuuid", "blob", "frozen", "set", "list", "map", "udt")

    def columns(first: str, count: int, taken: set[str]) -> tuple[Column, ...]:
        kinds = [first] + rng.sample([k for k in others if k != first], count - 1)
        if not any(KINDS[k].key for k in kinds):
            kinds[-1] = ("int", "text", "uuid")[seed % 3]
        out = []
        for i, k in enumerate(kinds):
            name = f"c{k[:1]}{i}"
            taken.add(name)
            out.append(Column(name, KINDS[k]))
        return tuple(out)

    s0 = Source("s0", (), (Column("n", KINDS["int"]),) + columns(collections[seed % 4], rng.randint(2, 4), {"n"}))
    clustering = ((f"r0", ("int", "text")[seed % 2], ("ASC", "DESC")[seed // 2 % 2]),)
    if rng.random() < 0.5:
        clustering += (("r1", rng.choice(("int", "text")), rng.choice(("ASC", "DESC"))),)
    taken = {"n"} | {c for c, _, _ in clustering}
    cols = (Column("n", KINDS["int"]),) + columns(collections[(seed + 2) % 4], rng.randint(2, 3), taken)
    static = Column("st", KINDS[("text", "int", "set")[seed % 3]]) if seed % 4 != 3 else None
    s1 = Source("s1", clustering, cols, static)
    natives = ("int", "bigint", "text", "uuid", "timeuuid", "blob", "frozen")
    s2_clustering = ((("r0", ("text", "int")[seed % 2], ("DESC", "ASC")[seed % 2]),) if seed % 3 else ())
    s2_cols = (Column("n", KINDS["int"]),) + tuple(Column(f"p{k[:1]}{i}", KINDS[k])
                                                   for i, k in enumerate(rng.sample(natives, rng.randint(2, 3))))
    s2 = Source("s2", s2_clustering, s2_cols, plain=True)
    return Design(seed, (s0, s1, s2))


def types_of(designs) -> set[str]:
    """The column types the designs drew, with their clustering orders and static columns."""
    out = set()
    for design in designs:
        for s in design.sources:
            out |= {c.kind.cql for c in s.columns}
            out |= {f"clustering {t} {o}" for _, t, o in s.clustering}
            if s.static:
                out.add(f"static {s.static.kind.cql}")
    return out


def flow_shapes_of(designs) -> set[str]:
    """The flow shapes the designs drew."""
    out = set()
    for design in designs:
        for s in design.sources:
            if s.plain:
                out.add("copy (direct)")
                continue
            out |= {"copy (lineage)", "fan-out of several pages, following its table",
                    "a direct write and an index into one table"}
            if s.indexable:
                out |= {"index", "cascade", "aggregate (count, sum, min, max per group)"}
            if s.clustering:
                out.add("target partitioned by a clustering column")
    return out

