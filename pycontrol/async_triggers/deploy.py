"""Deploying and dropping flows: validate against the live schema first, change the cluster only then."""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Callable, Mapping, Sequence

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from . import aggregates, backup_map, capture_index, follows, keyspace, plugin as plugin_mod, render, \
    replication as replication_mod, review, schema as schema_mod, status as status_mod, validate
from .errors import ConfigError, DeployError, UnknownFlowError
from .flows import Flow
from .spec import FlowSpec, SpecError

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def read_deployed(session) -> dict[str, FlowSpec]:
    """The flows deployed now, by name, each with its revision ({} before the first deploy)."""
    if keyspace.KEYSPACE not in session.cluster.metadata.keyspaces:
        return {}
    rows = session.execute(SimpleStatement(f'SELECT "name", "spec", "version" FROM {render.ident(keyspace.KEYSPACE)}.{render.ident(keyspace.FLOWS.name)}',
                                           consistency_level=ConsistencyLevel.LOCAL_ONE))
    out = {}
    for r in rows:
        try:
            out[r.name] = FlowSpec.parse(json.loads(r.spec), version=r.version)
        except (TypeError, ValueError, SpecError) as e:
            raise DeployError(f"the deployed flow '{r.name}' has an unreadable specification: {e}") from e
    return out


def require_deployed(session, names: Sequence[str]) -> dict[str, FlowSpec]:
    """The deployed flows; UnknownFlowError naming every one of ``names`` that is not among them."""
    deployed = read_deployed(session)
    unknown = [n for n in names if n not in deployed]
    if unknown:
        raise UnknownFlowError(unknown, deployed)
    return deployed


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
    revisions: dict[str, int] = dataclasses.field(default_factory=dict)   # each flow's revision in its history


def _execute(session, statement: render.Statement) -> None:
    if statement.values:
        prepared = session.prepare(statement.cql)
        prepared.consistency_level = ConsistencyLevel.LOCAL_QUORUM
        session.execute(prepared, statement.values)
    else:
        session.execute(SimpleStatement(statement.cql, consistency_level=ConsistencyLevel.LOCAL_QUORUM))


def table_columns(session, table: keyspace.Table) -> set[str]:
    """The columns of a table of our keyspace now (empty when there is no such table yet)."""
    rows = session.execute(SimpleStatement(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
        consistency_level=ConsistencyLevel.LOCAL_ONE), (keyspace.KEYSPACE, table.name))
    return {r.column_name for r in rows}


def flow_status_columns(session) -> set[str]:
    """The columns of async_triggers.flow_status now (empty when there is no such table yet)."""
    return table_columns(session, keyspace.FLOW_STATUS)


def capture_indexes_of(session, tables) -> dict[tuple[str, str], list[str]]:
    """The capture indexes on each of these (keyspace, table) now, by name."""
    out: dict[tuple[str, str], list[str]] = {}
    for ks, table in tables:
        rows = session.execute(SimpleStatement(
            "SELECT index_name, options FROM system_schema.indexes WHERE keyspace_name = %s AND table_name = %s",
            consistency_level=ConsistencyLevel.LOCAL_ONE), (ks, table))
        out[(ks, table)] = sorted(r.index_name for r in rows if capture_index.is_capture_index(r.options or {}))
    return out


def replication_for(session, specs: Sequence[dict], replication: Mapping[str, int] | None) -> dict[str, int]:
    """The async_triggers keyspace's replication: the one asked for (its DCs must exist), else the sources' mirror.
    An existing keyspace keeps its own (CREATE ... IF NOT EXISTS): a difference is reported, not applied, since a
    new replication needs a repair to move the data."""
    metadata = session.cluster.metadata
    if replication:
        replication_mod.check_dcs(metadata, replication)
        if replication_mod.ALL_DCS in replication:   # "N": N in each DC the cluster has now, named
            return {dc: replication[replication_mod.ALL_DCS] for dc in replication_mod.nodes_by_dc(metadata.all_hosts())}
        return dict(replication)
    return replication_mod.mirror(metadata, sorted({FlowSpec.parse(s).source.keyspace for s in specs}))


@dataclasses.dataclass(frozen=True)
class DeployPlan:
    """What a deploy would do, read from the cluster and changing nothing: the flows' specifications, the deployed
    flows it found, the companions it drops first, the flows it deploys paused, and its statements in order."""
    specs: list[dict]                  # the documents compile_all made
    deployed: dict[str, FlowSpec]
    companions: list[str]
    held: list[str]
    version: int
    statements: list[render.Statement]
    notes: list[str]


def prepare(session, flows: Sequence[Flow], replication: Mapping[str, int] | None = None,
            check_plugin: bool = True) -> DeployPlan:
    """Validate, check that every node runs the plugin, and render the deploy's statements, changing nothing.
    replication: the async_triggers keyspace's per-DC factors (default: mirror the source keyspaces')."""
    specs = plan(session, flows)  # raises ValidationError with the cluster untouched
    paused = status_mod.paused_flows(session)
    for spec in map(FlowSpec.parse, specs):
        if spec.name in paused and not spec.keeps_backup_entries:
            raise ConfigError(f"flow '{spec.name}' is paused, and this version keeps no backup entries "
                              "(Backup(enabled=False)): its tasks would wait in one node's memory only; resume it "
                              "first (ctl trigger resume) or keep its backup entries")
    if check_plugin:
        plugin_mod.require_everywhere(session)  # raises DeployError with the cluster untouched
    replication = replication_for(session, specs, replication)
    notes = []
    existing = session.cluster.metadata.keyspaces.get(keyspace.KEYSPACE)
    if existing is not None:
        have = replication_mod.of_keyspace(existing, replication_mod.nodes_by_dc(session.cluster.metadata.all_hosts()))
        if have != replication:
            notes.append(f"note: {keyspace.KEYSPACE} keeps its replication {have} (wanted {replication}); to change "
                         f"it: ALTER KEYSPACE {keyspace.KEYSPACE} WITH replication = "
                         f"{replication_mod.cql_map(replication)}; then nodetool repair -full on every node")
    typed = [FlowSpec.parse(s) for s in specs]
    names = {s.name for s in typed}
    deployed = read_deployed(session)
    # the companion of a flow redeployed without its following fan-out: dropped before the flow's new version
    companions = sorted(n for n, s in deployed.items() if follows.main_of(s) in names and n not in names)
    remaining = {n: s for n, s in deployed.items() if n not in companions}
    version = int(time.time() * 1000)
    tables = sorted({(s.source.keyspace, s.source.table) for s in typed})
    # the other flows on the same tables stay captured: the new capture index names them too
    others = [s for n, s in remaining.items() if n not in names and (s.source.keyspace, s.source.table) in tables]
    # a flows or flow_status table made by an older deploy gets the columns today's plugin reads and writes
    # (ALTER TABLE ... ADD); the INSERT of a flow leaves its paused column as it is: a paused flow stays paused
    held = sorted(follows.to_hold(session, specs, remaining))
    statements = render.deploy_statements(specs, replication, version,
                                          flow_status_columns=flow_status_columns(session), others=others,
                                          existing_capture_indexes=capture_indexes_of(session, tables),
                                          flows_columns=table_columns(session, keyspace.FLOWS), held=held)
    stale = stale_kept_tables(session.cluster.metadata, specs, remaining)
    for ks, table in stale:
        notes.append(f"{ks}.{table} was kept by an earlier deploy and is not used by any deployed flow: its rows say "
                     "what that deploy saw, so it is dropped and made anew (a backfill fills it)")
    statements = [render.Statement(f"DROP TABLE IF EXISTS {render.ident(ks)}.{render.ident(t)}", ())
                  for ks, t in stale] + statements
    return DeployPlan(specs, deployed, companions, held, version, statements, notes)


def kept_tables_in_use(deployed: Mapping[str, FlowSpec], without: str | None = None) -> set[tuple[str, str]]:
    """The tables the plugin keeps (aggregates.kept_tables) for the deployed flows, but flow ``without``."""
    return {t for name, spec in deployed.items() if name != without for t in aggregates.kept_tables(spec)}


def stale_kept_tables(metadata, specs: Sequence[dict], deployed: Mapping[str, FlowSpec]) -> list[tuple[str, str]]:
    """The tables the plugin keeps (aggregates.kept_tables) that ``specs`` use, that exist, and that no deployed
    flow uses now: left by a deploy since dropped or changed, their rows are stale (members of rows since deleted, a
    copy of follows since removed) and would count or fan out to what is gone."""
    in_use = kept_tables_in_use(deployed)
    out = []
    for spec in specs:
        for ks, table in aggregates.kept_tables(spec):
            exists = ks in metadata.keyspaces and table in metadata.keyspaces[ks].tables
            if exists and (ks, table) not in in_use:
                out.append((ks, table))
    return list(dict.fromkeys(out))


def deploy(session, flows: Sequence[Flow], progress: Progress = _quiet, replication: Mapping[str, int] | None = None,
           check_plugin: bool = True) -> DeployResult:
    """Validate, check that every node runs the plugin, then create what the flows need and the capture; record
    each flow's revision in its history (review.py)."""
    prepared = prepare(session, flows, replication, check_plugin)
    names = [FlowSpec.parse(s).name for s in prepared.specs]   # the same flows after a second prepare below
    progress(f"deploy {', '.join(names)} on {review.target(session)}")
    for note in prepared.notes:
        progress(note)
    if prepared.companions:
        for name in prepared.companions:
            spec = prepared.deployed[name]
            progress(f"flow '{follows.main_of(spec)}' no longer follows {spec.source.qualified}: dropping its "
                     f"companion '{name}'")
            _drop(session, name, prepared.deployed, progress)
            review.record(session, name, "drop", int(time.time() * 1000), None)
        prepared = prepare(session, flows, replication, check_plugin=False)   # the capture indexes changed
    for name in prepared.held:
        progress(f"flow '{name}' is deployed paused: its following fan-out's table has rows to copy first; "
                 f"ctl trigger backfill {name} copies them, backfills the flow and resumes it")
    statements = prepared.statements
    for i, st in enumerate(statements, 1):
        progress(f"[{i}/{len(statements)}] {st.cql.splitlines()[0]}")
        try:
            _execute(session, st)
        except Exception as e:
            raise DeployError(f"statement {i} of {len(statements)} failed ({st.cql.splitlines()[0]}): {e}; "
                              "deploy is idempotent: fix the cause and run it again") from e
    if not session.cluster.control_connection.wait_for_schema_agreement(wait_time=30):
        raise DeployError("the nodes did not agree on the schema within 30 s after the deploy")
    session.cluster.refresh_schema_metadata()
    revisions = {n: review.record(session, n, "deploy", prepared.version, s) for n, s in zip(names, prepared.specs)}
    return DeployResult(flows=names, version=prepared.version,
                        statements=len(statements), revisions=revisions)


def refuse_companion(deployed: Mapping[str, FlowSpec], name: str) -> None:
    """A following fan-out's companion is dropped with its flow, never alone (while that flow is deployed)."""
    main = follows.main_of(deployed[name])
    if main is not None and main in deployed:
        raise ConfigError(f"flow '{name}' is the companion of flow '{main}' (it follows "
                          f"{deployed[name].source.qualified} for {main}'s following fan-out): drop '{main}', which "
                          f"drops it too, or redeploy '{main}' without follow=True")


def companion_of(deployed: Mapping[str, FlowSpec], name: str) -> str | None:
    """The deployed companion of the flow ``name`` (None when it has none)."""
    companion = follows.companion_name(name)
    return companion if follows.main_of(deployed.get(companion)) == name else None


def drop(session, name: str, progress: Progress = _quiet) -> None:
    """Remove a flow (and the companion of its following fan-out, first); a companion alone is refused."""
    deployed = require_deployed(session, [name])
    refuse_companion(deployed, name)
    companion = companion_of(deployed, name)
    if companion is not None:
        _drop(session, companion, deployed, progress)
        review.record(session, companion, "drop", int(time.time() * 1000), None)
        deployed = {n: s for n, s in deployed.items() if n != companion}
    _drop(session, name, deployed, progress)
    review.record(session, name, "drop", int(time.time() * 1000), None)


def _drop(session, name: str, deployed: Mapping[str, FlowSpec], progress: Progress) -> None:
    src = (deployed[name].source.keyspace, deployed[name].source.table)
    others = [n for n, s in deployed.items() if n != name and (s.source.keyspace, s.source.table) == src]
    ks = render.ident(keyspace.KEYSPACE)
    table = f"{render.ident(src[0])}.{render.ident(src[1])}"
    existing = capture_indexes_of(session, [src])[src]
    source_exists = bool(list(session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s", src)))
    if not source_exists:
        # dropped with its capture index and trigger: only the flow's row and its backup map are left to remove
        progress(f"{src[0]}.{src[1]} no longer exists: nothing captures the tasks of '{name}'")
    elif others:
        # capture the other flows' tasks with an index of their own before this flow's index goes
        options = capture_index.options_json(deployed[n] for n in sorted(others))
        index = capture_index.name(*src, options)
        session.execute(f"CREATE CUSTOM INDEX IF NOT EXISTS {render.ident(index)} ON {table} () "
                        f"USING {render.literal(capture_index.CLASS)} WITH OPTIONS = {{'flows': {render.literal(options)}}}")
        existing = [i for i in existing if i != index]
    for old in existing:
        session.execute(f"DROP INDEX IF EXISTS {render.ident(src[0])}.{render.ident(old)}")
    if source_exists:
        progress(f"{src[0]}.{src[1]} no longer captures the tasks of '{name}'")
    session.execute(SimpleStatement(f'DELETE FROM {ks}.{render.ident(keyspace.FLOWS.name)} WHERE "name" = %s',
                                    consistency_level=ConsistencyLevel.LOCAL_QUORUM), (name,))
    progress(f"removed flow '{name}'")
    in_use = kept_tables_in_use(deployed, without=name)
    for kept_ks, kept in aggregates.kept_tables(deployed[name]):
        if (kept_ks, kept) not in in_use:   # what the flow saw while it ran: a later deploy starts afresh
            session.execute(f"DROP TABLE IF EXISTS {render.ident(kept_ks)}.{render.ident(kept)}")
            progress(f"dropped {kept_ks}.{kept}, kept by the plugin for '{name}'")
    if not others:
        if source_exists:
            session.execute(f"DROP TRIGGER IF EXISTS {render.ident(render.TRIGGER_NAME)} ON {table}")
            progress(f"dropped trigger on {src[0]}.{src[1]} (no other flow uses it)")
        # after the capture index: no replica writes a backup entry any more
        backup = backup_map.table_name(src[1])
        session.execute(f"DROP TABLE IF EXISTS {render.ident(src[0])}.{render.ident(backup)}")
        progress(f"dropped backup map {src[0]}.{backup}")
