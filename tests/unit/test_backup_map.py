"""Replica backup maps on the control plane's side: the flow option, its validation, the companion table that
deploy creates beside each source table (and drop removes), the flow_status columns a deploy adds."""
import dataclasses
import json
from types import SimpleNamespace

import pytest

from async_triggers import backup_map, capture_index, deploy, keyspace, render, schema, validate
from async_triggers.cql_schema import parse_cql_file
from async_triggers.errors import ValidationError
from async_triggers.flows import Backup, Flow, Write, source

# a source with a composite partition key (tenant text, day date) and a clustering column
EVENTS = schema.TableSchema("shop", "events", ("tenant", "day"), ("seq",),
                            {"tenant": "text", "day": "date", "seq": "int", "body": "text"})
LATEST = schema.TableSchema("shop", "latest", ("tenant",), ("day", "seq"),
                            {"tenant": "text", "day": "date", "seq": "int", "body": "text"})
COUNTS = schema.TableSchema("shop", "by_day", ("day",), ("tenant", "seq"), {"day": "date", "tenant": "text", "seq": "int"})
SCHEMA = schema.of(EVENTS, LATEST, COUNTS)

COMPANION_CQL = (
    'CREATE TABLE IF NOT EXISTS "shop"."async_backup_events" (\n'
    '  "key_0" text, "key_1" date,\n'
    '  "flow" text, "id" uuid, "task" blob, "captured" timestamp, "resume" blob,\n'
    '  PRIMARY KEY (("key_0", "key_1"), "flow", "id"))\n'
    '  WITH gc_grace_seconds = 10800\n'
    "  AND compaction = {'class': 'SizeTieredCompactionStrategy', 'tombstone_threshold': '0.05', "
    "'tombstone_compaction_interval': '300', 'unchecked_tombstone_compaction': 'true'}\n"
    "  AND comment = 'async triggers: backup map of the tasks of shop.events'")


def latest_flow(**changes) -> Flow:
    flow = Flow(name="latest", source="shop.events",
                steps=[Write("shop.latest", tenant=source.tenant, day=source.day, seq=source.seq, body=source.body)])
    return dataclasses.replace(flow, **changes)


def by_day_flow() -> Flow:
    return Flow(name="by_day", source="shop.events",
                steps=[Write("shop.by_day", day=source.day, tenant=source.tenant, seq=source.seq)])


def rejects(flow: Flow, message: str, schema_=SCHEMA):
    with pytest.raises(ValidationError) as e:
        validate.compile_all([flow], schema_)
    assert str(e.value) == message


# --- the option -------------------------------------------------------------------------------------------

def test_should_render_the_backup_option_into_the_spec():
    assert validate.compile_flow(latest_flow(), SCHEMA)["backup"] == {"enabled": True, "safety_net_ms": 300_000}
    spec = validate.compile_flow(latest_flow(backup=Backup(enabled=False, safety_net_ms=60_000)), SCHEMA)
    assert spec["backup"] == {"enabled": False, "safety_net_ms": 60_000}
    assert json.loads(render.spec_json(spec))["backup"] == {"enabled": False, "safety_net_ms": 60000}


@pytest.mark.parametrize("backup, message", [
    (Backup(safety_net_ms=9_999),
     "flow 'latest': 'backup.safety_net_ms' must be an integer from 10000 to 2147483647, found: 9999"),
    (Backup(safety_net_ms=0),
     "flow 'latest': 'backup.safety_net_ms' must be an integer from 10000 to 2147483647, found: 0"),
    (Backup(safety_net_ms=2**31),
     "flow 'latest': 'backup.safety_net_ms' must be an integer from 10000 to 2147483647, found: 2147483648"),
    (Backup(safety_net_ms="5m"),
     "flow 'latest': 'backup.safety_net_ms' must be an integer from 10000 to 2147483647, found: '5m'"),
    (Backup(safety_net_ms=True),
     "flow 'latest': 'backup.safety_net_ms' must be an integer from 10000 to 2147483647, found: True"),
    (Backup(enabled="yes"), "flow 'latest': 'backup.enabled' must be True or False, found: 'yes'"),
    (Backup(enabled=1), "flow 'latest': 'backup.enabled' must be True or False, found: 1"),
    (False, "flow 'latest': 'backup' must be a Backup(enabled=..., safety_net_ms=...), found: False"),
])
def test_should_reject_bad_backup_options(backup, message):
    rejects(latest_flow(backup=backup), message)


def test_should_accept_the_smallest_safety_net():
    assert validate.compile_flow(latest_flow(backup=Backup(safety_net_ms=10_000)), SCHEMA)["backup"] == \
        {"enabled": True, "safety_net_ms": 10_000}


# --- the companion table ----------------------------------------------------------------------------------

def test_should_render_the_backup_map_of_a_composite_partition_key_before_the_flows_and_the_capture_index():
    specs = validate.compile_all([latest_flow(), by_day_flow()], SCHEMA)
    statements = [s.cql for s in render.deploy_statements(specs, 2, version=1)]
    companions = [s for s in statements if "async_backup_" in s]
    assert companions == [COMPANION_CQL]   # once for the two flows on the table
    first_insert = next(i for i, s in enumerate(statements) if s.startswith('INSERT INTO "async_triggers"."flows"'))
    [index] = [i for i, s in enumerate(statements) if s.startswith("CREATE CUSTOM INDEX")]   # one for both flows
    trigger = next(i for i, s in enumerate(statements) if s.startswith("CREATE TRIGGER"))
    # the flows are readable before any replica captures their tasks, the map is there before any entry
    assert statements.index(COMPANION_CQL) < first_insert < index < trigger


def test_should_name_every_flow_of_the_table_in_its_capture_index_and_replace_the_old_index():
    latest, by_day = validate.compile_all([latest_flow(), by_day_flow()], SCHEMA)
    # by_day is deployed already; latest is deployed now: the new index captures both, then the old one goes
    [index] = render.capture_indexes([latest], others=[by_day], existing={("shop", "events"): ["async_capture_old"]})
    assert index["flows"] == ["by_day", "latest"]
    assert json.loads(index["options"]) == {
        "by_day": {"backup": True, "columns": [], "events": ["delete", "insert", "update"]},
        "latest": {"backup": True, "columns": ["body"], "events": ["delete", "insert", "update"]}}
    assert index["drop"] == ["async_capture_old"]
    assert index["name"] == capture_index.name("shop", "events", index["options"]) and len(index["name"]) <= 48
    statements = [s.cql for s in render.deploy_statements([latest], 2, version=1, others=[by_day],
                                                          existing_capture_indexes={("shop", "events"): ["async_capture_old"]})]
    create = statements.index(f'CREATE CUSTOM INDEX IF NOT EXISTS "{index["name"]}" ON "shop"."events" ()\n'
                              f"  USING 'org.asynctriggers.CaptureIndex' WITH OPTIONS = {{'flows': '{index['options']}'}}")
    assert statements[create + 1] == 'DROP INDEX IF EXISTS "shop"."async_capture_old"'
    # the same flows again: the same index, nothing to drop
    [again] = render.capture_indexes([latest], others=[by_day], existing={("shop", "events"): [index["name"]]})
    assert again["name"] == index["name"] and again["drop"] == []


def test_should_capture_only_the_events_a_flow_handles_and_no_entry_without_backup():
    [spec] = validate.compile_all([latest_flow(events=("insert",), backup=Backup(enabled=False))], SCHEMA)
    [index] = render.capture_indexes([spec])
    assert json.loads(index["options"]) == {"latest": {"backup": False, "columns": ["body"], "events": ["insert"]}}


def test_should_render_a_backup_map_that_parses_back_to_its_layout(tmp_path):
    script = tmp_path / "deploy.cql"
    script.write_text(render.deploy_script(validate.compile_all([latest_flow()], SCHEMA), 2, version=1))
    table = parse_cql_file(script).table("shop", "async_backup_events")
    assert table.partition_key == ("key_0", "key_1") and table.clustering == ("flow", "id")
    assert table.columns == {"key_0": "text", "key_1": "date", "flow": "text", "id": "uuid", "task": "blob",
                             "captured": "timestamp", "resume": "blob"}


def test_should_accept_an_existing_backup_map_of_the_same_layout():
    existing = schema.TableSchema("shop", "async_backup_events", ("key_0", "key_1"), ("flow", "id"),
                                  dict(backup_map.columns(["varchar", "date"])))
    validate.compile_all([latest_flow()], schema.of(EVENTS, LATEST, existing))


def test_should_reject_an_existing_backup_map_with_other_partition_key_types():
    existing = schema.TableSchema("shop", "async_backup_events", ("key_0",), ("flow", "id"),
                                  dict(backup_map.columns(["text"])))
    rejects(latest_flow(),
            "flow 'latest': the table 'shop.async_backup_events' exists but is not the backup map of 'shop.events': "
            "its partition key types are (text), the source's are (text, date); drop or rename it, the deploy "
            "creates the backup map", schema.of(EVENTS, LATEST, existing))


def test_should_reject_an_existing_table_of_the_backup_map_name_with_other_columns():
    existing = schema.TableSchema("shop", "async_backup_events", ("key_0", "key_1"), ("flow",),
                                  {"key_0": "text", "key_1": "date", "flow": "text", "note": "text"})
    rejects(latest_flow(),
            "flow 'latest': the table 'shop.async_backup_events' exists but is not the backup map of 'shop.events': "
            "it has columns (flow text, key_0 text, key_1 date, note text), a backup map has (captured timestamp, "
            "flow text, id uuid, key_0 text, key_1 date, resume blob, task blob) with primary key ((key_0, key_1), "
            "flow, id); "
            "drop or rename it, the deploy creates the backup map", schema.of(EVENTS, LATEST, existing))


def test_should_reject_a_source_table_whose_backup_map_name_is_too_long():
    ok = "t" * 209   # async_backup_ + 209 = 222 characters, Cassandra's longest table name
    long = "t" * 210
    tables = [schema.TableSchema("shop", name, ("tenant",), (), {"tenant": "text", "body": "text"})
              for name in (ok, long)]
    by_tenant = schema.TableSchema("shop", "by_tenant", ("tenant",), (), {"tenant": "text", "body": "text"})
    s = schema.of(by_tenant, *tables)
    validate.compile_all([Flow(name="ok", source=f"shop.{ok}", steps=[Write("shop.by_tenant", tenant=source.tenant)])], s)
    rejects(Flow(name="long", source=f"shop.{long}", steps=[Write("shop.by_tenant", tenant=source.tenant)]),
            f"flow 'long': the name of source table 'shop.{long}' is too long for its backup map: "
            f"'async_backup_{long}' would have 223 characters, Cassandra allows 222 (so a source table name may "
            "have at most 209)", s)


def test_should_reject_flows_over_backup_maps():
    existing = schema.TableSchema("shop", "async_backup_events", ("key_0", "key_1"), ("flow", "id"),
                                  dict(backup_map.columns(["text", "date"])))
    s = schema.of(EVENTS, LATEST, existing)
    rejects(latest_flow(steps=[Write("shop.async_backup_events", key_0=source.tenant, key_1=source.day)]),
            "flow 'latest': target table 'shop.async_backup_events' is named like a backup map: tables named "
            "'async_backup_<table>' are reserved for the plugin", s)
    rejects(latest_flow(source="shop.async_backup_events", steps=[Write("shop.latest", tenant=source.key_0)]),
            "flow 'latest': source table 'shop.async_backup_events' is named like a backup map: tables named "
            "'async_backup_<table>' are reserved for the plugin", s)


# --- flow_status columns ----------------------------------------------------------------------------------

BEFORE_BACKUP_MAPS = {"flow", "node", "pending", "active", "completed", "failed", "retried", "oldest_pending_ms",
                      "workers", "capacity", "spilled", "discarded", "updated"}


def test_should_add_the_missing_flow_status_columns_of_an_older_table():
    assert render.flow_status_alters(BEFORE_BACKUP_MAPS) == [
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "recovered" bigint',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "resumed" bigint',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "fanout_rows" bigint',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "backlog" bigint',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "last_capture" timestamp',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "last_scan" timestamp',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "paused" boolean',
    ]
    assert render.flow_status_alters(BEFORE_BACKUP_MAPS - {"spilled", "discarded"})[:2] == [
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "spilled" bigint',
        'ALTER TABLE "async_triggers"."flow_status" ADD IF NOT EXISTS "discarded" bigint',
    ]


def test_should_alter_nothing_when_flow_status_is_complete_or_absent():
    assert render.flow_status_alters(set(keyspace.FLOW_STATUS.column_names())) == []
    assert render.flow_status_alters(set()) == []   # no table yet: CREATE TABLE makes it whole


def test_should_run_the_alters_after_creating_flow_status_and_before_the_flows():
    specs = validate.compile_all([latest_flow()], SCHEMA)
    statements = [s.cql for s in render.deploy_statements(specs, 2, version=1, flow_status_columns=BEFORE_BACKUP_MAPS)]
    create = next(i for i, s in enumerate(statements) if s.startswith('CREATE TABLE IF NOT EXISTS "async_triggers"."flow_status"'))
    assert statements[create + 1:create + 8] == render.flow_status_alters(BEFORE_BACKUP_MAPS)
    assert not any(s.cql.startswith("ALTER") for s in render.deploy_statements(specs, 2, version=1))


BEFORE_PAUSE = {"name", "source_keyspace", "source_table", "spec", "version"}


def test_should_add_the_paused_column_to_a_flows_table_of_an_older_deploy_before_inserting_the_flows():
    specs = validate.compile_all([latest_flow()], SCHEMA)
    statements = [s.cql for s in render.deploy_statements(specs, 2, version=1, flows_columns=BEFORE_PAUSE)]
    create = next(i for i, s in enumerate(statements) if s.startswith('CREATE TABLE IF NOT EXISTS "async_triggers"."flows"'))
    assert statements[create + 1] == 'ALTER TABLE "async_triggers"."flows" ADD IF NOT EXISTS "paused" boolean'
    insert = next(i for i, s in enumerate(statements) if s.startswith('INSERT INTO "async_triggers"."flows"'))
    assert insert > create + 1
    # the flow's INSERT names no paused column: a redeploy of a paused flow leaves it paused
    assert '"paused"' not in statements[insert]


def test_should_create_flow_status_with_every_column_the_alters_know(tmp_path):
    script = tmp_path / "deploy.cql"
    script.write_text(render.deploy_script(validate.compile_all([latest_flow()], SCHEMA), 2, version=1))
    table = parse_cql_file(script).table("async_triggers", "flow_status")
    assert table.columns == dict(keyspace.FLOW_STATUS.columns)
    assert table.primary_key == keyspace.FLOW_STATUS.primary_key()


# --- drop -------------------------------------------------------------------------------------------------

class FakeSession:
    """Answers read_deployed with the given specs, system_schema.indexes with the given capture indexes,
    system_schema.tables with the source table unless it was dropped, and records every other statement."""

    def __init__(self, specs, indexes=(), source_dropped=False):
        self.specs = specs
        self.indexes = indexes
        self.source_dropped = source_dropped
        self.executed = []
        self.cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={"async_triggers": SimpleNamespace(tables={})}),
                                       control_connection=SimpleNamespace(wait_for_schema_agreement=lambda **_: True))

    def execute(self, query, params=None):
        text = getattr(query, "query_string", query)
        if text.startswith('SELECT "name", "spec", "version"'):
            return [SimpleNamespace(name=s["name"], spec=json.dumps(s), version=1) for s in self.specs]
        if text.startswith("SELECT index_name, options FROM system_schema.indexes"):
            return [SimpleNamespace(index_name=name, options={"class_name": capture_index.CLASS})
                    for name in self.indexes]
        if text.startswith("SELECT table_name FROM system_schema.tables"):
            return [] if self.source_dropped else [SimpleNamespace(table_name=params[1])]
        self.executed.append(text)
        return []


def test_should_drop_capture_index_and_trigger_before_the_backup_map_of_their_table():
    session = FakeSession(validate.compile_all([latest_flow()], SCHEMA), indexes=["async_capture_0123"])
    deploy.drop(session, "latest")
    assert session.executed == [
        'DROP INDEX IF EXISTS "shop"."async_capture_0123"',
        'DELETE FROM "async_triggers"."flows" WHERE "name" = %s',
        'DROP TRIGGER IF EXISTS "async_triggers" ON "shop"."events"',
        'DROP TABLE IF EXISTS "shop"."async_backup_events"',
    ]


def test_should_drop_the_flow_of_a_dropped_source_without_touching_the_table():
    # DROP TABLE took the capture index and the trigger with it: only the flow and its backup map are left
    session = FakeSession(validate.compile_all([latest_flow()], SCHEMA), source_dropped=True)
    deploy.drop(session, "latest")
    assert session.executed == [
        'DELETE FROM "async_triggers"."flows" WHERE "name" = %s',
        'DROP TABLE IF EXISTS "shop"."async_backup_events"',
    ]


def test_should_keep_capturing_the_other_flows_of_the_table_with_an_index_of_their_own():
    specs = validate.compile_all([latest_flow(), by_day_flow()], SCHEMA)
    session = FakeSession(specs, indexes=["async_capture_0123"])
    deploy.drop(session, "latest")
    remaining = capture_index.options_json([s for s in specs if s["name"] != "latest"])
    name = capture_index.name("shop", "events", remaining)
    assert session.executed == [
        f'CREATE CUSTOM INDEX IF NOT EXISTS "{name}" ON "shop"."events" () '
        f"USING 'org.asynctriggers.CaptureIndex' WITH OPTIONS = {{'flows': '{remaining}'}}",
        'DROP INDEX IF EXISTS "shop"."async_capture_0123"',
        'DELETE FROM "async_triggers"."flows" WHERE "name" = %s',
    ]
    assert json.loads(remaining) == {"by_day": {"backup": True, "columns": [], "events": ["delete", "insert", "update"]}}
