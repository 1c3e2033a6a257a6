"""Dead letters: tasks whose retries ran out (docs/design.md, "Retries and dead letters")."""
from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from typing import Sequence

from cassandra import ConsistencyLevel, Unavailable
from cassandra.query import SimpleStatement

from . import keyspace, render
from .errors import ConfigError

_KS = render.ident(keyspace.KEYSPACE)
_LETTERS = f"{_KS}.{render.ident(keyspace.DEAD_LETTERS.name)}"
_RETRIES = f"{_KS}.{render.ident(keyspace.DEAD_LETTER_RETRIES.name)}"


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    flow: str
    id: uuid.UUID
    node: str
    op: str
    ts: int
    source_key: str          # hex of the serialized source key
    error: str
    attempts: int
    failed_at: dt.datetime | None

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["id"] = str(self.id)
        d["failed_at"] = self.failed_at.isoformat() if self.failed_at else None
        return d


def _statement(cql: str, consistency=ConsistencyLevel.LOCAL_QUORUM) -> SimpleStatement:
    return SimpleStatement(cql, consistency_level=consistency)


def _read(session, cql: str, params: tuple, strict: bool = False):
    """A read of the dead letters at LOCAL_QUORUM, the level they are written at; when a replica is down and the
    quorum unavailable, at LOCAL_ONE, unless ``strict`` (what decides a discard never settles for it): with RF 2 a
    letter written at a quorum is on both replicas, with RF 3 and two nodes down one replica may miss it, and what a
    command shows beats an error while a node is down."""
    try:
        return session.execute(_statement(cql), params)
    except Unavailable:
        if strict:
            raise
        return session.execute(_statement(cql, ConsistencyLevel.LOCAL_ONE), params)


def _has_tables(session) -> bool:
    ks = session.cluster.metadata.keyspaces.get(keyspace.KEYSPACE)
    return ks is not None and keyspace.DEAD_LETTERS.name in ks.tables


def list_letters(session, flow: str | None = None, limit: int = 100) -> list[DeadLetter]:
    if not _has_tables(session):
        return []
    cols = '"flow", "id", "node", "op", "ts", "source_key", "error", "attempts", "failed_at"'
    if flow:
        rows = _read(session, f'SELECT {cols} FROM {_LETTERS} WHERE "flow" = %s LIMIT %s', (flow, limit))
    else:
        rows = _read(session, f'SELECT {cols} FROM {_LETTERS} LIMIT %s', (limit,))
    return [DeadLetter(flow=r.flow, id=r.id, node=r.node or "", op=r.op or "", ts=r.ts or 0,
                       source_key=(r.source_key or b"").hex(), error=r.error or "", attempts=r.attempts or 0,
                       failed_at=r.failed_at) for r in rows]


def count(session, flow: str, strict: bool = False) -> int:
    """How many dead letters the flow has (``strict``: at a quorum only, as _read says)."""
    if not _has_tables(session):
        return 0
    return _read(session, f'SELECT count(*) FROM {_LETTERS} WHERE "flow" = %s', (flow,), strict).one()[0]


def _parse_id(flow: str, text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError as e:
        raise ConfigError(f"dead letter id of flow '{flow}' must be a UUID, found: {text!r}") from e


def show(session, flow: str, letter_id: str) -> DeadLetter:
    wanted = _parse_id(flow, letter_id)
    for letter in list_letters(session, flow, limit=100_000):
        if letter.id == wanted:
            return letter
    raise ConfigError(f"flow '{flow}' has no dead letter {letter_id}")


def _select(session, flow: str, ids: Sequence[str], everything: bool) -> list[DeadLetter]:
    if not ids and not everything:
        raise ConfigError("name the dead letters (their ids) or pass --all")
    letters = list_letters(session, flow, limit=100_000)
    if everything:
        return letters
    wanted = {_parse_id(flow, i) for i in ids}
    found = [letter for letter in letters if letter.id in wanted]
    missing = wanted - {letter.id for letter in found}
    if missing:
        raise ConfigError(f"flow '{flow}' has no dead letter {', '.join(sorted(map(str, missing)))}")
    return found


def retry_node(letter: DeadLetter, live: Sequence[str]) -> str:
    """Where a letter's retry request goes: the node that gave it up while it is up; otherwise (stopped, removed or
    replaced: it would never read the request) a live node, spread by the letter's id. Any node running the flow
    can queue the task: its derived writes go through a coordinator like any other."""
    if letter.node in live or not live:
        return letter.node
    others = sorted(live)
    return others[letter.id.int % len(others)]


def retry(session, flow: str, ids: Sequence[str] = (), everything: bool = False,
          live: Sequence[str] | None = None) -> list[tuple[DeadLetter, str]]:
    """Ask a node to queue each letter's task again (it deletes the letter when it does): each letter with the node
    it was sent to (retry_node). ``live``: the nodes up now (default: as the driver and the status reports see them)."""
    from . import status
    letters = _select(session, flow, ids, everything)
    live = sorted(status.live_nodes(session)) if live is None else list(live)
    insert = session.prepare(f'INSERT INTO {_RETRIES} ("node", "flow", "id") VALUES (?, ?, ?)')
    insert.consistency_level = ConsistencyLevel.LOCAL_QUORUM
    sent = []
    for letter in letters:
        node = retry_node(letter, live)
        session.execute(insert, (node, letter.flow, letter.id))
        sent.append((letter, node))
    return sent


def purge(session, flow: str, ids: Sequence[str] = (), everything: bool = False) -> int:
    letters = _select(session, flow, ids, everything)
    if everything:
        session.execute(_statement(f'DELETE FROM {_LETTERS} WHERE "flow" = %s'), (flow,))
    else:
        delete = session.prepare(f'DELETE FROM {_LETTERS} WHERE "flow" = ? AND "id" = ?')
        delete.consistency_level = ConsistencyLevel.LOCAL_QUORUM
        for letter in letters:
            session.execute(delete, (flow, letter.id))
    return len(letters)
