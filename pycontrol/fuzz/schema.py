"""The fuzzer's tables and flows, created once per campaign in its keyspace.

Two source tables: ``kv`` (no clustering column) and ``cl`` (a clustering column and a static column). Every
partition key starts with ``run``: each run (a seed, or one attempt of a shrink) writes keys of its own, so its
tasks, lineage entries and derived rows never meet another run's; the campaign truncates the tables before each run,
so that it is verified on tables that hold its rows alone (a row of an earlier run expiring during a check would
show as a difference).

Flows (every kind the plugin has): on ``kv`` a direct copy, a lineage index on ``a``, a fan-out through ``fans``
matched on ``n`` (lineage: ``n`` changes); on the copy, a cascade (a lineage index on ``b`` of ``kv_copy``); on
``cl`` a direct copy that carries the static column into every row, and a lineage index on ``w``. The values come
from small domains so that operations collide.
"""
from __future__ import annotations

KEYSPACE = "fuzz"

KV_KEYS = tuple(range(6))          # kv: partitions k
CL_PARTITIONS = tuple(range(3))    # cl: partitions p ...
CL_ROWS = tuple(range(5))          # ... of rows c
DOMAINS = {
    "a": ("a0", "a1", "a2", "a3"),
    "b": ("b0", "b1", "b2"),
    "n": (0, 1, 2),
    "s": ("s0", "s1", "s2"),
    "v": ("v0", "v1", "v2", "v3"),
    "w": (0, 1, 2, 3),
}
KV_COLUMNS = ("a", "b", "n")
CL_COLUMNS = ("v", "w")            # regular columns of cl (s is static)
FANS = {0: (100, 101), 1: (101, 102, 103)}   # n -> the rows of fans (n = 2 fans out to nobody)

# every table the fuzzer writes or its flows derive, with its partition key (after run)
TABLES = {
    "kv": ("k",), "cl": ("p",), "fans": ("n",),
    "kv_copy": ("k",), "kv_by_a": ("a",), "kv_feed": ("f",), "copy_by_b": ("b",),
    "cl_copy": ("p",), "cl_by_w": ("w",),
}
# the flows' source tables (read at ALL after a replica was down) and the column naming their partitions
SOURCES = {"kv": ("k", KV_KEYS), "cl": ("p", CL_PARTITIONS), "kv_copy": ("k", KV_KEYS)}


def schema_cql(keyspace: str = KEYSPACE, replication_factor: int = 2) -> str:
    ks = keyspace
    return f"""
CREATE KEYSPACE IF NOT EXISTS {ks}
  WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {replication_factor}}};
CREATE TABLE IF NOT EXISTS {ks}.kv (run bigint, k int, a text, b text, n int, PRIMARY KEY ((run, k)));
CREATE TABLE IF NOT EXISTS {ks}.fans (run bigint, n int, f int, PRIMARY KEY ((run, n), f));
CREATE TABLE IF NOT EXISTS {ks}.kv_copy (run bigint, k int, a text, b text, n int, PRIMARY KEY ((run, k)));
CREATE TABLE IF NOT EXISTS {ks}.kv_by_a (run bigint, a text, k int, b text, PRIMARY KEY ((run, a), k));
CREATE TABLE IF NOT EXISTS {ks}.kv_feed (run bigint, f int, k int, a text, PRIMARY KEY ((run, f), k));
CREATE TABLE IF NOT EXISTS {ks}.copy_by_b (run bigint, b text, k int, a text, PRIMARY KEY ((run, b), k));
CREATE TABLE IF NOT EXISTS {ks}.cl (run bigint, p int, c int, s text static, v text, w int,
  PRIMARY KEY ((run, p), c));
CREATE TABLE IF NOT EXISTS {ks}.cl_copy (run bigint, p int, c int, s text, v text, w int, PRIMARY KEY ((run, p), c));
CREATE TABLE IF NOT EXISTS {ks}.cl_by_w (run bigint, w int, p int, c int, v text, PRIMARY KEY ((run, w), p, c));
"""


def flow_names(keyspace: str = KEYSPACE) -> list[str]:
    return [f"{keyspace}_{name}" for name in ("copy", "by_a", "feed", "copy_by_b", "cl_copy", "cl_by_w")]


def flow_file(keyspace: str = KEYSPACE) -> str:
    ks = keyspace
    copy, by_a, feed, copy_by_b, cl_copy, cl_by_w = flow_names(ks)
    return f'''"""The fuzzer's flows on keyspace {ks} (async_triggers.fuzz.schema)."""
from async_triggers.flows import FanOut, Flow, Write, row, source

FLOWS = [
    Flow(name="{copy}", source="{ks}.kv", steps=[Write("{ks}.kv_copy", run=source.run, k=source.k,
                                                        a=source.a, b=source.b, n=source.n)]),
    Flow(name="{by_a}", source="{ks}.kv", steps=[Write("{ks}.kv_by_a", run=source.run, a=source.a, k=source.k,
                                                        b=source.b)]),
    Flow(name="{feed}", source="{ks}.kv",
         steps=[FanOut("{ks}.fans", match={{"run": source.run, "n": source.n}})
                .write("{ks}.kv_feed", run=source.run, f=row.f, k=source.k, a=source.a)]),
    Flow(name="{copy_by_b}", source="{ks}.kv_copy",
         steps=[Write("{ks}.copy_by_b", run=source.run, b=source.b, k=source.k, a=source.a)]),
    Flow(name="{cl_copy}", source="{ks}.cl",
         steps=[Write("{ks}.cl_copy", run=source.run, p=source.p, c=source.c, s=source.s, v=source.v,
                      w=source.w)]),
    Flow(name="{cl_by_w}", source="{ks}.cl",
         steps=[Write("{ks}.cl_by_w", run=source.run, w=source.w, p=source.p, c=source.c, v=source.v)]),
]
'''


def fan_rows(run: int) -> list[tuple[int, int, int]]:
    return [(run, n, f) for n, fs in sorted(FANS.items()) for f in fs]


def suspects(sample: dict) -> set[tuple[str, int]]:
    """The source partitions a differing derived row comes from: every derived table keeps ``k`` (from kv) or
    ``p`` (from cl)."""
    out = set()
    if sample.get("k") is not None:
        out.add(("kv", int(sample["k"])))
    if sample.get("p") is not None:
        out.add(("cl", int(sample["p"])))
    return out
