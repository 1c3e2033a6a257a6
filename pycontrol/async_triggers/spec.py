"""A flow's specification as the plugin reads it, typed: the JSON document ``validate.compile_flow`` renders and
``async_triggers.flows`` stores, parsed once into frozen objects (the plugin's ``FlowSpec`` on the Java side).

The document stays the contract: it is what is stored, compared with the deployed one and rendered into the
plugin's configuration; :attr:`FlowSpec.doc` keeps it. Readers on this side (the deploy's tables, the Spark jobs'
derivations, verify, the campaign's check) read the typed fields instead of digging into nested dicts by key, so a
field that is missing or of the wrong shape fails here, once, naming the flow and the field.

    spec = FlowSpec.parse(doc)
    for target in spec.targets:
        if target.fanout and target.fanout.follow: ...
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

from .errors import ConfigError

_EMPTY: Mapping[str, str] = {}


class SpecError(ConfigError):
    """A specification document that is not what the plugin reads: names the flow and the field."""


def column_of(expression: str) -> tuple[str, str]:
    """``("source", "author_id")`` from ``"source.author_id"``: the scope (source or row) and the column."""
    scope, _, column = expression.partition(".")
    return scope, column


class _Reader:
    """Typed reads of one document, each error naming the flow and the path of the field."""

    def __init__(self, flow: str):
        self.flow = flow

    def fail(self, path: str, wanted: str, found: Any) -> SpecError:
        return SpecError(f"flow '{self.flow}': the specification's '{path}' must be {wanted}, found: {found!r}")

    def obj(self, node: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(node, Mapping):
            raise self.fail(path, "an object", node)
        return node

    def text(self, node: Mapping, key: str, path: str, optional: bool = False) -> str | None:
        value = node.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(f"{path}.{key}", "a non-empty string", value)
        return value

    def names(self, node: Mapping, key: str, path: str) -> tuple[str, ...]:
        value = node.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{path}.{key}", "a list of names", value)
        return tuple(value)

    def mapping(self, node: Mapping, key: str, path: str) -> Mapping[str, str]:
        value = node.get(key) or {}
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise self.fail(f"{path}.{key}", "an object of names", value)
        return dict(value)

    def whole(self, node: Mapping, key: str, path: str) -> int:
        value = node.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{path}.{key}", "a whole number", value)
        return value


class Placed:
    """A table's place, for the typed parts that name one (``keyspace`` and ``table``): its qualified name."""
    keyspace: str
    table: str

    @property
    def qualified(self) -> str:
        return f"{self.keyspace}.{self.table}"


class Keyed(Placed):
    """A table with its primary key (``partition_key`` and ``clustering``)."""
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(self.partition_key) + tuple(self.clustering)


@dataclasses.dataclass(frozen=True)
class Table(Keyed):
    """A flow's source table (or a companion's: the fan-out table): its key and each column's CQL type."""
    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]
    columns: Mapping[str, str]

    @classmethod
    def _parse(cls, r: _Reader, node: Any, path: str) -> "Table":
        node = r.obj(node, path)
        return cls(r.text(node, "keyspace", path), r.text(node, "table", path), r.names(node, "partition_key", path),
                   r.names(node, "clustering", path), r.mapping(node, "columns", path))


@dataclasses.dataclass(frozen=True)
class Recent:
    """A following fan-out's recency bound: only source rows whose ``column`` is within ``seconds`` are followed."""
    column: str
    type: str          # timeuuid or timestamp
    target_column: str  # the target's key column that holds it
    seconds: int


@dataclasses.dataclass(frozen=True)
class Follow(Placed):
    """A fan-out that follows its table: the join index's position among the targets and the copy it keeps."""
    index: int
    keyspace: str
    table: str
    recent: Recent | None


@dataclasses.dataclass(frozen=True)
class FanOut(Placed):
    """The fan-out table a target reads: the source's values it matches and the columns it reads."""
    keyspace: str
    table: str
    match: Mapping[str, str]       # fan-out column -> expression
    columns: tuple[str, ...]
    follow: Follow | None

    @classmethod
    def _parse(cls, r: _Reader, node: Any, path: str) -> "FanOut | None":
        if node is None:
            return None
        node = r.obj(node, path)
        follow = None
        if node.get("follow") is not None:
            f, fp = r.obj(node["follow"], f"{path}.follow"), f"{path}.follow"
            recent = None
            if f.get("recent") is not None:
                rn, rp = r.obj(f["recent"], f"{fp}.recent"), f"{fp}.recent"
                recent = Recent(r.text(rn, "column", rp), r.text(rn, "type", rp), r.text(rn, "target_column", rp),
                                r.whole(rn, "seconds", rp))
            follow = Follow(r.whole(f, "index", fp), r.text(f, "keyspace", fp), r.text(f, "table", fp), recent)
        return cls(r.text(node, "keyspace", path), r.text(node, "table", path), r.mapping(node, "match", path),
                   r.names(node, "columns", path), follow)


@dataclasses.dataclass(frozen=True)
class Aggregate(Keyed):
    """An aggregate target's table (the target itself is its members table) and what it computes, each value named
    by the members column it is computed from."""
    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]
    group: Mapping[str, str]       # aggregate key column -> members column
    count: str | None
    sum: Mapping[str, str]
    min: Mapping[str, str]
    max: Mapping[str, str]

    @classmethod
    def _parse(cls, r: _Reader, node: Any, path: str) -> "Aggregate | None":
        if node is None:
            return None
        node = r.obj(node, path)
        return cls(r.text(node, "keyspace", path), r.text(node, "table", path), r.names(node, "partition_key", path),
                   r.names(node, "clustering", path), r.mapping(node, "group", path),
                   r.text(node, "count", path, optional=True), r.mapping(node, "sum", path),
                   r.mapping(node, "min", path), r.mapping(node, "max", path))


@dataclasses.dataclass(frozen=True)
class Target(Keyed):
    """A table a flow writes, each column's expression (``source.<column>`` or ``row.<column>``), its mode and what
    it is for: a fan-out's rows, a following fan-out's join index, an aggregate's members."""
    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]
    columns: Mapping[str, str]     # target column -> expression
    mode: str                      # direct or lineage
    lineage_columns: tuple[str, ...]
    fanout: FanOut | None
    join_index: bool
    aggregate: Aggregate | None

    @property
    def follows(self) -> bool:
        """A fan-out that follows its table."""
        return self.fanout is not None and self.fanout.follow is not None

    @classmethod
    def _parse(cls, r: _Reader, node: Any, path: str) -> "Target":
        node = r.obj(node, path)
        join_index = node.get("join_index", False)
        if not isinstance(join_index, bool):
            raise r.fail(f"{path}.join_index", "true or false", join_index)
        return cls(r.text(node, "keyspace", path), r.text(node, "table", path), r.names(node, "partition_key", path),
                   r.names(node, "clustering", path), r.mapping(node, "columns", path),
                   node.get("mode") or "direct", r.names(node, "lineage_columns", path),
                   FanOut._parse(r, node.get("fanout"), f"{path}.fanout"), join_index,
                   Aggregate._parse(r, node.get("aggregate"), f"{path}.aggregate"))


@dataclasses.dataclass(frozen=True)
class Follows:
    """What a companion flow (on a following fan-out's table) keeps: its main flow, that flow's source, the join
    index target and the fan-out target."""
    flow: str
    source: Table
    index: Target
    target: Target


@dataclasses.dataclass(frozen=True)
class FlowSpec:
    name: str
    source: Table
    targets: tuple[Target, ...]
    events: tuple[str, ...]
    handler: str | None
    follows: Follows | None
    doc: Mapping[str, Any] = dataclasses.field(repr=False, compare=False)   # the document as stored
    # the deployed version (read_deployed: when it was deployed, epoch ms); None for a spec not deployed
    version: int | None = None

    @property
    def following_target(self) -> Target | None:
        """The target of the fan-out that follows its table, if any."""
        return next((t for t in self.targets if t.follows), None)

    @property
    def keeps_backup_entries(self) -> bool:
        """Backup entries kept (the default): a flow without them cannot be paused."""
        return bool((self.doc.get("backup") or {}).get("enabled", True))

    def json_text(self) -> str:
        return json.dumps(self.doc, sort_keys=True)

    @classmethod
    def parse(cls, doc: Mapping[str, Any] | "FlowSpec", version: int | None = None) -> "FlowSpec":
        """The typed spec of a document (a FlowSpec is returned as it is); SpecError naming the flow and field."""
        if isinstance(doc, FlowSpec):
            return doc if version is None else dataclasses.replace(doc, version=version)
        if not isinstance(doc, Mapping):
            raise SpecError(f"a flow's specification must be an object, found: {doc!r}")
        name = doc.get("name")
        r = _Reader(name if isinstance(name, str) else "?")
        r.text(doc, "name", "flow")
        targets = doc.get("targets", [])
        if not isinstance(targets, list):
            raise r.fail("targets", "a list", targets)
        events = doc.get("events", [])
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise r.fail("events", "a list of events", events)
        follows = None
        if doc.get("follows") is not None:
            f = r.obj(doc["follows"], "follows")
            follows = Follows(r.text(f, "flow", "follows"), Table._parse(r, f.get("source"), "follows.source"),
                              Target._parse(r, f.get("index"), "follows.index"),
                              Target._parse(r, f.get("target"), "follows.target"))
        return cls(name, Table._parse(r, doc.get("source"), "source"),
                   tuple(Target._parse(r, t, f"targets[{i}]") for i, t in enumerate(targets)), tuple(events),
                   r.text(doc, "handler", "flow", optional=True), follows, doc, version)
