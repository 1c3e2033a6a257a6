"""The checker of a fuzz run: the verify job's own API (``spark_jobs.verify``: the deployed spec, then
``verify_with_session``), never the plugin's counters. A flow passes with 0 missing, 0 unexpected and 0 wrong values
in every target table; the samples of what differs name the source keys a shrinker starts from."""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from ..errors import VerifyError

COUNTS = ("missing", "unexpected", "wrong_value")


@dataclasses.dataclass(frozen=True)
class FlowCheck:
    """The verification of one flow: one ``Result.as_dict()`` per target table."""
    flow: str
    tables: tuple[Mapping, ...]

    def count(self, what: str) -> int:
        return sum(int(t.get(what) or 0) for t in self.tables)

    @property
    def ok(self) -> bool:
        return all(self.count(c) == 0 for c in COUNTS)

    def samples(self) -> list[Mapping]:
        """The sampled rows that differ, each with its table and kind (a wrong value: its key)."""
        out = []
        for t in self.tables:
            for kind in COUNTS:
                for row in t.get(f"{kind}_sample") or ():
                    key = row.get("key", row) if kind == "wrong_value" else row
                    out.append({"table": t["table"], "kind": kind, **key})
        return out

    def line(self) -> str:
        if self.ok:
            return f"{self.flow} ok"
        return (f"{self.flow} missing {self.count('missing')} unexpected {self.count('unexpected')} "
                f"wrong {self.count('wrong_value')}")

    def as_dict(self) -> dict:
        return {"flow": self.flow, "ok": self.ok, **{c: self.count(c) for c in COUNTS}, "tables": list(self.tables)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "FlowCheck":
        return cls(d["flow"], tuple(d["tables"]))


def session_conf() -> dict:
    """What a Spark session needs for the verify job (its own settings, when it names them)."""
    from async_triggers.spark_jobs import specs, verify
    return dict(getattr(verify, "SESSION_CONF", {}))


def check_flows(spark, flows: Iterable[str]) -> list[FlowCheck]:
    """Verify each deployed flow against the current source and fan-out tables (a Spark session with the
    connector). VerifyError naming the flow when a verification cannot run."""
    from async_triggers.spark_jobs import specs, verify

    out = []
    for flow in flows:
        try:
            spec = specs.load_spec(spark, flow)
            results = verify.verify_with_session(spark, spec)
        except VerifyError:
            raise
        except Exception as e:  # Py4J and analysis errors: say which flow, keep the Java cause
            from async_triggers.spark_jobs.errors import describe_error
            raise VerifyError(f"verifying flow '{flow}' failed: {describe_error(e)}") from e
        out.append(FlowCheck(flow, tuple(_jsonable(r.as_dict()) for r in results)))
    return out


def check_ttls(session, keyspace: str, design, run: int) -> list[FlowCheck]:
    """Whether each copied cell has a TTL where its source cell has one (the verify job compares values only): for
    each source's copy (of every column: a lineage target, or a direct one on the one-cell source), every regular
    one-cell column of every row both hold, read at ALL with TTL(). A difference is a wrong value of the copy's flow,
    its sample naming the row and the column."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    def read(table: str, columns: list[str], key: list[str]) -> dict:
        cql = (f"SELECT {', '.join(key)}{''.join(f', ttl({c})' for c in columns)} FROM {keyspace}.{table} "
               f"WHERE run = %s ALLOW FILTERING")
        rows = session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.ALL), (run,), timeout=60)
        return {tuple(r[:len(key)]): tuple(v is not None for v in r[len(key):]) for r in rows}

    out = []
    for source in design.sources:
        key = ["k"] + [c for c, _, _ in source.clustering]
        columns = [c.name for c in source.single_cell]
        expected = read(source.name, columns, key)
        for copy in ("copy",):
            found = read(f"{source.name}_{copy}", columns, key)
            wrong = [{"k": k[0], "key": list(k), "column": c, "source_ttl": expected[k][i], "copy_ttl": found[k][i]}
                     for k in sorted(set(expected) & set(found), key=str) for i, c in enumerate(columns)
                     if expected[k][i] != found[k][i]]
            if wrong:
                out.append(FlowCheck(f"{keyspace}_{source.name}_{copy}", ({
                    "table": f"{keyspace}.{source.name}_{copy}", "missing": 0, "unexpected": 0,
                    "wrong_value": len(wrong), "wrong_value_sample": [{"key": w, "what": "ttl"} for w in wrong[:5]]},)))
    return out


def failed(checks: Sequence[FlowCheck]) -> list[str]:
    return [c.flow for c in checks if not c.ok]


def _jsonable(d: Mapping) -> dict:
    """Result dicts hold tuples and driver values (UUIDs, dates): keep them as plain JSON-friendly values."""
    def plain(v):
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, Mapping):
            return {k: plain(x) for k, x in v.items()}
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        return str(v)
    return plain(dict(d))
