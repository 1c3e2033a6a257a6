"""Pausing and resuming a flow (``ctl trigger pause|resume``).

The state is the ``paused`` column of the flow's row in async_triggers.flows: durable, and read by every node's plugin
with the flow itself on each poll (2 s), so a node that restarts while the flow is paused starts it paused. A paused
flow is still captured on every replica (its backup entries accumulate) but no node queues or runs its tasks; on
resume each node scans its backup maps and queues those it executes. A deploy leaves the column as it is (a new
version of a paused flow starts paused); a drop deletes the row, and with it the state.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Callable, Sequence

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from . import deploy, keyspace, render, status
from .errors import ClusterError, ConfigError, DeployError, UnknownFlowError
from .spec import FlowSpec

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class PauseResult:
    flow: str
    paused: bool
    nodes: list[str]        # the nodes that reported the new state (empty when not waited for)


def check_pausable(name: str, deployed: dict[str, FlowSpec]) -> FlowSpec:
    """The deployed flow's spec, or an error naming the flow: unknown, or keeping no backup entries (its tasks would
    then wait in one node's memory only, lost if it stops, and a discard flow would drop them)."""
    if name not in deployed:
        raise UnknownFlowError([name], deployed)
    spec = deployed[name]
    if not spec.keeps_backup_entries:
        raise ConfigError(f"flow '{name}' keeps no backup entries (Backup(enabled=False)): while paused its tasks "
                          "would wait in the executing node's memory only, lost if that node stops; redeploy it with "
                          "backup entries to pause it")
    return spec


def ensure_columns(session, progress: Progress) -> None:
    """Adds the paused columns to tables made by an older deploy (the same ALTERs a deploy runs)."""
    alters = (render.column_alters(keyspace.FLOWS, deploy.table_columns(session, keyspace.FLOWS))
              + render.column_alters(keyspace.FLOW_STATUS, deploy.flow_status_columns(session)))
    for cql in alters:
        progress(cql)
        session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.LOCAL_QUORUM))
    if alters and not session.cluster.control_connection.wait_for_schema_agreement(wait_time=30):
        raise DeployError("the nodes did not agree on the schema within 30 s after adding the paused columns")
    if alters:
        session.cluster.refresh_schema_metadata()


def set_paused(session, name: str, paused: bool, timeout: float = 30.0,
               progress: Progress = lambda _: None) -> PauseResult:
    """Pauses or resumes the flow, then waits up to ``timeout`` s (0: not at all) until every live node reports it so."""
    deployed = deploy.read_deployed(session)
    if paused:
        check_pausable(name, deployed)
    elif name not in deployed:
        raise UnknownFlowError([name], deployed)
    ensure_columns(session, progress)
    since = dt.datetime.utcnow()
    # IF EXISTS: a flow dropped meanwhile must not come back as a row holding nothing but its state
    applied = session.execute(SimpleStatement(
        f'UPDATE {render.ident(keyspace.KEYSPACE)}.{render.ident(keyspace.FLOWS.name)} SET "paused" = %s '
        f'WHERE "name" = %s IF EXISTS', consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL), (paused, name)).was_applied
    if not applied:
        raise UnknownFlowError([name], ())   # dropped meanwhile
    if timeout <= 0:
        return PauseResult(name, paused, [])
    return PauseResult(name, paused, wait_reported(session, name, paused, since, timeout, progress))


def wait_reported(session, name: str, paused: bool, since: dt.datetime, timeout: float,
                  progress: Progress = lambda _: None, poll: float = 0.5) -> list[str]:
    """Waits until every live node reports the flow paused (or running), in a report made after ``since``.
    Returns those nodes."""
    word = "paused" if paused else "running"
    deadline = time.monotonic() + timeout
    lagging: Sequence[str] = ()
    while True:
        reports = {s.node: s for s in status.read(session, [name])
                   if s.updated and s.updated.replace(tzinfo=None) > since}
        live = sorted(status.live_nodes(session))
        lagging = [n for n in live if n not in reports or reports[n].paused != paused]
        if live and not lagging:
            return live
        if time.monotonic() >= deadline:
            break
        progress(f"waiting for {', '.join(lagging)} to report '{name}' {word}")
        time.sleep(poll)
    raise ClusterError(f"flow '{name}' is {word} in {keyspace.KEYSPACE}.{keyspace.FLOWS.name}, but "
                       f"{', '.join(lagging) or 'no live node'} did not report it {word} within {timeout:.0f} s (a "
                       "node whose plugin predates pausing ignores it; `ctl trigger status` shows each node's state)")
