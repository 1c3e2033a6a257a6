"""Deploying and dropping flows: validate against the live schema first, change the cluster only then."""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Callable, Sequence

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from . import backup_map, render, schema as schema_mod, validate
from .errors import DeployError
from .flows import Flow

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def read_deployed(session) -> dict[str, dict]:
    """The flows deployed now, by name ({} before the first deploy)."""
    if render.KEYSPACE not in session.cluster.metadata.keyspaces:
        return {}
    rows = session.execute(SimpleStatement(f'SELECT "name", "spec", "version" FROM {render.ident(render.KEYSPACE)}."flows"',
                                           consistency_level=ConsistencyLevel.QUORUM))
    out = {}
    for r in rows:
        try:
            spec = json.loads(r.spec)
        except (TypeError, ValueError) as e:
            raise DeployError(f"the deployed flow '{r.name}' has an unreadable specification: {e}") from e
        spec["_version"] = r.version
        out[r.name] = spec
    return out


def live_schema(session) -> schema_mod.Schema:
    session.cluster.refresh_schema_metadata()
    return schema_mod.from_driver_metadata(session.cluster.metadata)


def plan(session, flows: Sequence[Flow]) -> list[dict]:
    """Validate the flows against the live schema and the deployed flows; returns their specifications."""
    return validate.compile_all(flows, live_schema(session), read_deployed(session))


@dataclasses.dataclass(frozen=True)
class DeployResult:
    flows: list[str]
    version: int
    statements: int


def _execute(session, statement: render.Statement) -> None:
    if statement.values:
        prepared = session.prepare(statement.cql)
        prepared.consistency_level = ConsistencyLevel.QUORUM
        session.execute(prepared, statement.values)
    else:
        session.execute(SimpleStatement(statement.cql, consistency_level=ConsistencyLevel.QUORUM))


def flow_status_columns(session) -> set[str]:
    """The columns of async_triggers.flow_status now (empty when there is no such table yet)."""
    rows = session.execute(SimpleStatement(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
        consistency_level=ConsistencyLevel.ONE), (render.KEYSPACE, "flow_status"))
    return {r.column_name for r in rows}


def deploy(session, flows: Sequence[Flow], progress: Progress = _quiet) -> DeployResult:
    specs = plan(session, flows)  # raises ValidationError with the cluster untouched
    replication = max(1, min(3, len(session.cluster.metadata.all_hosts())))
    version = int(time.time() * 1000)
    # a flow_status made by an older deploy gets the columns today's plugin writes (ALTER TABLE ... ADD)
    statements = render.deploy_statements(specs, replication, version,
                                          flow_status_columns=flow_status_columns(session))
    for i, st in enumerate(statements, 1):
        progress(f"[{i}/{len(statements)}] {st.cql.splitlines()[0]}")
        try:
            _execute(session, st)
        except Exception as e:
            raise DeployError(f"statement {i} of {len(statements)} failed ({st.cql.splitlines()[0]}): {e}; "
                              "deploy is idempotent: fix the cause and run it again") from e
    if not session.cluster.control_connection.wait_for_schema_agreement(wait_time=30):
        raise DeployError("the nodes did not agree on the schema within 30 s after the deploy")
    for src in sorted({(s["source"]["keyspace"], s["source"]["table"]) for s in specs}):
        invalidate_prepared(session, *src, progress=progress)
    return DeployResult(flows=[s["name"] for s in specs], version=version, statements=len(statements))


def drop(session, name: str, progress: Progress = _quiet) -> None:
    deployed = read_deployed(session)
    if name not in deployed:
        raise DeployError(f"no deployed flow named '{name}' (deployed: {', '.join(sorted(deployed)) or 'none'})")
    spec = deployed[name]
    src = (spec["source"]["keyspace"], spec["source"]["table"])
    others = [n for n, s in deployed.items() if n != name and (s["source"]["keyspace"], s["source"]["table"]) == src]
    ks = render.ident(render.KEYSPACE)
    session.execute(SimpleStatement(f'DELETE FROM {ks}."flows" WHERE "name" = %s',
                                    consistency_level=ConsistencyLevel.QUORUM), (name,))
    progress(f"removed flow '{name}'")
    if not others:
        session.execute(f"DROP TRIGGER IF EXISTS {render.ident(render.TRIGGER_NAME)} "
                        f"ON {render.ident(src[0])}.{render.ident(src[1])}")
        progress(f"dropped trigger on {src[0]}.{src[1]} (no other flow uses it)")
        invalidate_prepared(session, *src, progress=progress)
        # after the trigger: no write can add a backup entry any more
        backup = backup_map.table_name(src[1])
        session.execute(f"DROP TABLE IF EXISTS {render.ident(src[0])}.{render.ident(backup)}")
        progress(f"dropped backup map {src[0]}.{backup}")


def invalidate_prepared(session, keyspace: str, table: str, progress: Progress = _quiet) -> None:
    """Make every node forget the statements prepared on ``keyspace.table``, so clients re-prepare them.

    A prepared INSERT keeps the table's metadata as it was when it was prepared, triggers included, and Cassandra
    (5.0: ``TableMetadata.changeAffectsPreparedStatements``) does not count CREATE/DROP TRIGGER as a change that
    invalidates prepared statements: an application that prepared its writes before the deploy would go on
    writing without the trigger (no task, no backup entry) until it reconnected or the node restarted. A change
    of ``gc_grace_seconds`` does invalidate them; it is set to another value and straight back (two schema
    changes, the table's setting unchanged), and the drivers re-prepare on their next execution (UNPREPARED)."""
    row = session.execute(SimpleStatement(
        "SELECT gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
        consistency_level=ConsistencyLevel.ONE), (keyspace, table)).one()
    if row is None:
        raise DeployError(f"table {keyspace}.{table} vanished during the deploy")
    name = f"{render.ident(keyspace)}.{render.ident(table)}"
    grace = row.gc_grace_seconds
    for value in (grace + 1 if grace < 2**31 - 2 else grace - 1, grace):
        session.execute(f"ALTER TABLE {name} WITH gc_grace_seconds = {value}")
    if not session.cluster.control_connection.wait_for_schema_agreement(wait_time=30):
        raise DeployError(f"the nodes did not agree on the schema within 30 s after invalidating the statements "
                          f"prepared on {keyspace}.{table}")
    progress(f"statements prepared on {keyspace}.{table} invalidated (clients re-prepare them with the trigger)")
