"""The Python API to define flows.

A flow file is a Python module that defines ``FLOWS``, a list of :class:`Flow`::

    from async_triggers.flows import Flow, FanOut, Write, source, row

    FLOWS = [Flow(
        name="twitter_timeline",
        source="twitter.tweets",
        steps=[
            Write("twitter.timeline", user_id=source.author_id, tweet_id=source.tweet_id),
            FanOut("twitter.followers", match={"user_id": source.author_id}).write(
                "twitter.timeline", user_id=row.follower_id, tweet_id=source.tweet_id),
        ],
    )]

``source.<column>`` is a column of the row written to the source table, ``row.<column>`` a column of the row
read by a fan-out. A flow whose events include ``delete`` removes the rows it derived when the source row is
deleted. A flow may name a Java class (``handler=``) instead of steps.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Mapping, Sequence

from .errors import ConfigError

EVENTS = ("insert", "update", "delete")
# The levels the plugin's parser accepts (tests/golden/contract/flow_spec.json): ANY only writes, no serial level, no
# NODE_LOCAL (a debugging level the normal read and write paths refuse).
READ_CONSISTENCY_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE")
WRITE_CONSISTENCY_LEVELS = ("ANY",) + READ_CONSISTENCY_LEVELS


@dataclasses.dataclass(frozen=True)
class Ref:
    """A column reference: ``scope`` is ``source`` (the written row) or ``row`` (a fan-out row)."""
    scope: str
    column: str

    def __str__(self) -> str:
        return f"{self.scope}.{self.column}"


class _Scope:
    def __init__(self, scope: str):
        self._scope = scope

    def __getattr__(self, column: str) -> Ref:
        if column.startswith("__"):
            raise AttributeError(column)
        return Ref(self._scope, column)

    def __getitem__(self, column: str) -> Ref:  # for column names that are not Python identifiers
        return Ref(self._scope, column)


source = _Scope("source")
row = _Scope("row")


def _table_name(qualified: str, what: str) -> tuple[str, str]:
    parts = qualified.split(".")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"{what} must be written 'keyspace.table', found: {qualified!r}")
    return parts[0], parts[1]


@dataclasses.dataclass(frozen=True)
class Write:
    """Write one row of ``target`` per source row (or per fan-out row), its columns mapped from references."""
    target: str
    columns: Mapping[str, Ref]

    def __init__(self, target: str, columns: Mapping[str, Ref] | None = None, **kw: Ref):
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "columns", dict(columns or {}, **kw))

    @property
    def target_table(self) -> tuple[str, str]:
        return _table_name(self.target, "a write target")


MAX_TTL_SECONDS = 20 * 365 * 24 * 3600   # Cassandra's longest TTL


@dataclasses.dataclass(frozen=True)
class Recent:
    """The recency bound of a fan-out that follows its table: its target holds the rows whose source time ``by`` lies
    within ``within`` (a ``timedelta`` or seconds) of now, as a home timeline keeps the last days. ``by`` is a
    ``timeuuid`` or ``timestamp`` primary key column of the source that the target's primary key holds too (a tweet's
    ``tweet_id``). A follow then brings only the followee's rows within the bound, and each row leaves the target by
    itself when it grows older (a TTL: time + ``within``)."""
    by: Ref
    within: dt.timedelta | int

    @property
    def seconds(self) -> int:
        w = self.within
        return int(w.total_seconds()) if isinstance(w, dt.timedelta) else int(w)


@dataclasses.dataclass(frozen=True)
class FanOut:
    """Read the rows of ``table`` whose partition key equals the ``match`` references; write per row.

    ``follow=True``: the fan-out follows its table too. Without it, a row added to or removed from ``table``
    changes nothing until the source row is written again; with it, a row added to ``table`` (a follow) writes the
    target rows of every source row that matches it, and a row removed (an unfollow) deletes them. For that the deploy creates two tables in the target's keyspace: the *join index*
    ``async_join_<flow>`` (one row per source row, partitioned by its match value, holding the source values the
    write copies) and a *copy* of ``table`` with a change counter per row (``async_follows_<flow>``), which a second
    flow, ``<flow>_follows``, keeps from the writes to ``table``; dropping the flow drops it too. Cost: a follow of a
    row whose match value M source rows share writes M target rows (and an unfollow deletes them); each source row
    writes one join index row besides its targets, as a lineage target. One following fan-out per flow, which copies
    single-cell values only (no static column, non-frozen collection or UDT of the source or of ``table``).
    ``recent=Recent(source.<time key>, timedelta(days=7))`` bounds what it keeps (:class:`Recent`; with ``follow``)."""
    table: str
    match: Mapping[str, Ref]
    writes: tuple[Write, ...] = ()
    follow: bool = False
    recent: Recent | None = None

    def write(self, target: str, columns: Mapping[str, Ref] | None = None, **kw: Ref) -> "FanOut":
        return dataclasses.replace(self, writes=self.writes + (Write(target, columns, **kw),))

    @property
    def fanout_table(self) -> tuple[str, str]:
        return _table_name(self.table, "a fan-out table")


@dataclasses.dataclass(frozen=True)
class Aggregate:
    """Keep a total per group of source rows in ``target`` (docs/design.md, "Aggregates"), as ``SELECT count(*),
    sum(x), min(x), max(x) ... GROUP BY`` would give it: ``group_by`` maps each primary key column of ``target`` to
    the source column it groups by (a source row with a null or empty group value is in no group); ``count`` names
    the column counting the group's rows; ``sum``, ``min`` and ``max`` map a column of ``target`` to the source
    column they total (null values left out; none: null). A group without rows has no row. Exact under retries,
    reordering and failures: each group is recomputed from its members, one row per source row, which the deploy
    keeps in a table of its own beside ``target`` (``async_members_<target>``)."""
    target: str
    group_by: Mapping[str, Ref]
    count: str | None = None
    sum: Mapping[str, Ref] = dataclasses.field(default_factory=dict)
    min: Mapping[str, Ref] = dataclasses.field(default_factory=dict)
    max: Mapping[str, Ref] = dataclasses.field(default_factory=dict)

    @property
    def target_table(self) -> tuple[str, str]:
        return _table_name(self.target, "an aggregate's target")


@dataclasses.dataclass(frozen=True)
class Queue:
    """The node-local queue of a flow: how many tasks it holds and how many workers drain it."""
    capacity: int = 10_000
    workers: int = 2


OVERFLOW_POLICIES = ("block", "spill", "discard", "elastic")


@dataclasses.dataclass(frozen=True)
class Overflow:
    """What a node does with a task when the flow's queue is full (AsterixDB's data feeds, section 4.5):
    ``spill`` to local disk (default), ``block`` the writer up to ``block_timeout_ms`` then fail its write,
    ``discard`` (counted), or ``elastic`` (grow the pool up to ``max_workers``, then block)."""
    policy: str = "spill"
    block_timeout_ms: int = 2_000
    max_workers: int | None = None   # elastic only; default: the queue's workers


@dataclasses.dataclass(frozen=True)
class Retry:
    """How a failed task is retried: exponential backoff with jitter, up to a number of attempts and an age;
    then it becomes a dead letter (``ctl trigger dlq``). A failure of the cluster (replicas unavailable, a
    timeout, an overloaded node) costs no attempt: the task tries again every second until ``max_age_ms``."""
    max_attempts: int = 5
    initial_backoff_ms: int = 100
    max_backoff_ms: int = 10_000
    max_age_ms: int = 600_000


@dataclasses.dataclass(frozen=True)
class Backup:
    """The replica backup map of the flow's tasks (docs/design.md): each replica of a source row records the row's
    tasks in a companion table as it applies the write, so the next live replica executes them when the row's
    executor dies. Entries older than ``safety_net_ms`` are executed by the row's executor, those older than twice
    that by whichever replica holds them. ``enabled=False``: no entry; the executor's queue is the only copy."""
    enabled: bool = True
    safety_net_ms: int = 300_000


@dataclasses.dataclass(frozen=True)
class Flow:
    name: str
    source: str
    steps: Sequence[Write | FanOut | Aggregate] = ()
    events: Sequence[str] = EVENTS
    read_consistency: str = "ONE"
    write_consistency: str = "ONE"
    queue: Queue = Queue()
    page_size: int = 500
    # A task starts no sooner than this after its executor applied the write, so the write finishes on the other
    # replicas before its fan-out competes with it (the report queues tasks after the replicas' acks).
    start_delay_ms: int = 20
    retry: Retry = Retry()
    overflow: Overflow = Overflow()
    backup: Backup = Backup()
    handler: str | None = None

    @property
    def source_table(self) -> tuple[str, str]:
        return _table_name(self.source, f"the source of flow '{self.name}'")

    def writes(self) -> list[tuple[FanOut | None, Write]]:
        """Every write of the flow with the fan-out it belongs to (None for a direct write)."""
        out: list[tuple[FanOut | None, Write]] = []
        for step in self.steps:
            if isinstance(step, Write):
                out.append((None, step))
            elif isinstance(step, FanOut):
                out.extend((step, w) for w in step.writes)
        return out

    def aggregates(self) -> list[Aggregate]:
        return [step for step in self.steps if isinstance(step, Aggregate)]
