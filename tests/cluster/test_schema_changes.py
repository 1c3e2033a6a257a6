"""Schema changes while flows are deployed and a client writes, on the session's real 3-node cluster
(docs/design.md, "Schema changes"): columns added and dropped on the source and on a target, a column a flow uses
refused, a target's column dropped and added back, TRUNCATE of a target and of the source, a target dropped and
made again. Through every change: no client write fails, a task that cannot run becomes a dead letter that says
why, nothing retries forever, and `ctl verify` says 0 once the operator did what docs/design.md says."""
from __future__ import annotations

import threading
import time

import pytest

from helpers import create_schema, deploy_flow_text, drain, run_ctl, verify_json

KS = "schemachg"
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TABLE IF NOT EXISTS {KS}.users (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.users_by_name (name text, id int, email text, PRIMARY KEY (name, id));
CREATE TABLE IF NOT EXISTS {KS}.users_copy (id int PRIMARY KEY, email text);
"""
COPY_TABLE = f"CREATE TABLE IF NOT EXISTS {KS}.users_copy (id int PRIMARY KEY, email text)"
FLOWS = f"""
from async_triggers.flows import Flow, Retry, Write, source
RETRY = Retry(max_attempts=3, initial_backoff_ms=50, max_backoff_ms=200)
FLOWS = [
    Flow(name="sc_by_name", source="{KS}.users", retry=RETRY,
         steps=[Write("{KS}.users_by_name", name=source.name, id=source.id, email=source.email)]),
    Flow(name="sc_copy", source="{KS}.users", retry=RETRY,
         steps=[Write("{KS}.users_copy", id=source.id, email=source.email)]),
]
"""
USERS = 200


class Writer:
    """A client writing users (each a new name and email) at QUORUM on its own thread; every failure kept."""

    def __init__(self, session):
        self.session, self.errors, self.failed_at, self.writes = session, [], [], 0
        self._stop = threading.Event()
        self._round = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from cassandra import ConsistencyLevel
        insert = self.session.prepare(f"INSERT INTO {KS}.users (id, name, email) VALUES (?, ?, ?)")
        insert.consistency_level = ConsistencyLevel.QUORUM
        while not self._stop.is_set():
            self._round += 1
            for user in range(USERS):
                if self._stop.is_set():
                    return
                try:
                    self.session.execute(insert, (user, f"n{user % 17}-{self._round}", f"u{user}@{self._round}"))
                    self.writes += 1
                except Exception as e:  # noqa: BLE001 - a client write that fails is what the test looks for
                    self.errors.append(repr(e))
                    self.failed_at.append(time.monotonic())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=60)


def during_writes(session, *statements: str, settle_s: float = 3.0) -> Writer:
    """Run the statements while a client writes; return the writer (its writes and errors; ``issued_at``: when
    the first statement was sent)."""
    with Writer(session) as writer:
        time.sleep(settle_s)
        writer.issued_at = time.monotonic()
        for cql in statements:
            session.execute(cql, timeout=60)
            time.sleep(settle_s)
    return writer


def letters(settings, flow: str) -> list[dict]:
    import json
    done = run_ctl(settings, "trigger", "dlq", "list", flow, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ok(settings, *flows: str) -> list[dict]:
    code, tables = verify_json(settings, *flows, "--consistency", "ALL")
    assert code == 0 and all(t["ok"] for t in tables), tables
    return tables


@pytest.fixture(scope="module")
def flows(cluster_settings, tmp_path_factory):
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("schema"), FLOWS)
    for flow in ("sc_by_name", "sc_copy"):
        run_ctl(cluster_settings, "trigger", "dlq", "purge", flow, "--all", "--yes")
    return tmp_path_factory


def test_should_go_on_through_columns_added_and_dropped_that_no_flow_uses(flows, session, cluster_settings):
    writer = during_writes(
        session,
        f"ALTER TABLE {KS}.users ADD bio text",
        f"UPDATE {KS}.users SET bio = 'hi', name = 'with-bio' WHERE id = 1",
        f"ALTER TABLE {KS}.users DROP bio",
        f"ALTER TABLE {KS}.users_by_name ADD note text",
        f"ALTER TABLE {KS}.users_by_name DROP note")
    assert writer.errors == [] and writer.writes > USERS, (writer.writes, writer.errors[:3])
    drain(session, "sc_by_name", "sc_copy")
    ok(cluster_settings, "sc_by_name", "sc_copy")
    assert letters(cluster_settings, "sc_by_name") == letters(cluster_settings, "sc_copy") == []


def test_should_refuse_to_drop_a_source_column_a_flow_uses_or_to_rename_a_key(flows, session):
    from cassandra import InvalidRequest
    for column in ("name", "email"):   # each used by a flow; a dropped one would strand its tasks
        with pytest.raises(InvalidRequest, match=f"Cannot drop column {column} because it has dependent secondary "
                                                 r"indexes \(async_capture_"):
            session.execute(f"ALTER TABLE {KS}.users DROP {column}")
    with pytest.raises(InvalidRequest, match="rename column id because it has dependent secondary indexes"):
        session.execute(f"ALTER TABLE {KS}.users RENAME id TO user_id")
    assert {c.column_name for c in session.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 'users'", (KS,))} \
        == {"id", "name", "email"}


def test_should_dead_letter_what_a_dropped_target_column_refuses_and_repair_it_once_added_back(
        flows, session, cluster_settings):
    writer = during_writes(session, f"ALTER TABLE {KS}.users_copy DROP email")
    assert writer.errors == [], writer.errors[:3]
    drain(session, "sc_by_name", "sc_copy")
    dead = letters(cluster_settings, "sc_copy")
    assert dead and all("email" in d["error"] and d["attempts"] == 3 for d in dead), dead[:2]
    assert letters(cluster_settings, "sc_by_name") == [], "the other flow of the source ran on"
    ok(cluster_settings, "sc_by_name")
    # added back: Cassandra hides every value written before the drop (the derived ones too, at their source's
    # write times), so the letters are of no use: verify --repair writes what is missing above the drop
    session.execute(f"ALTER TABLE {KS}.users_copy ADD email text", timeout=60)
    code, [copy] = verify_json(cluster_settings, "sc_copy", "--repair")
    assert code == 0 and copy["repaired"]["not_repaired"] == 0, copy
    assert run_ctl(cluster_settings, "trigger", "dlq", "purge", "sc_copy", "--all", "--yes").returncode == 0
    ok(cluster_settings, "sc_copy")


def test_should_repair_what_a_truncate_of_a_target_or_of_the_source_leaves(flows, session, cluster_settings):
    drain(session, "sc_by_name", "sc_copy")
    session.execute(f"TRUNCATE {KS}.users_by_name", timeout=60)
    code, [index] = verify_json(cluster_settings, "sc_by_name", "--consistency", "ALL")
    assert code == 1 and index["missing"] == USERS and index["present"] == 0, index
    code, [index] = verify_json(cluster_settings, "sc_by_name", "--repair")
    assert code == 0 and index["repaired"]["written"] == USERS, index
    # TRUNCATE of the source is no write: the derived rows stay until a repair deletes them
    session.execute(f"TRUNCATE {KS}.users", timeout=60)
    code, tables = verify_json(cluster_settings, "sc_by_name", "sc_copy", "--consistency", "ALL")
    assert code == 1 and [t["unexpected"] for t in tables] == [USERS, USERS], tables
    code, tables = verify_json(cluster_settings, "sc_by_name", "sc_copy", "--repair")
    assert code == 0 and [t["repaired"]["deleted"] for t in tables] == [USERS, USERS], tables
    ok(cluster_settings, "sc_by_name", "sc_copy")


def test_should_dead_letter_the_tasks_of_a_dropped_target_and_retry_them_into_its_new_table(
        flows, session, cluster_settings):
    writer = during_writes(session, f"DROP TABLE {KS}.users_copy", settle_s=4.0)
    assert writer.errors == [], writer.errors[:3]
    drain(session, "sc_by_name", "sc_copy")
    dead = letters(cluster_settings, "sc_copy")
    assert dead and all("users_copy" in d["error"] for d in dead), dead[:2]
    ok(cluster_settings, "sc_by_name")
    # made again (a new table: nothing of the old one hides anything), the letters retried, then a repair for the
    # rows whose tasks ran before the drop (gone with the old table)
    session.execute(COPY_TABLE, timeout=60)
    assert run_ctl(cluster_settings, "trigger", "dlq", "retry", "sc_copy", "--all").returncode == 0
    deadline = time.monotonic() + 120
    while letters(cluster_settings, "sc_copy") and time.monotonic() < deadline:
        time.sleep(1)
    assert letters(cluster_settings, "sc_copy") == []
    drain(session, "sc_copy")
    code, [copy] = verify_json(cluster_settings, "sc_copy", "--repair")
    assert code == 0 and copy["repaired"]["not_repaired"] == 0, copy
    ok(cluster_settings, "sc_copy")


def test_should_let_the_flows_of_a_dropped_source_be_dropped_and_refuse_their_redeploy(
        flows, session, cluster_settings):
    writer = during_writes(session, f"DROP TABLE {KS}.users", settle_s=3.0)
    # the writes sent once the table was being dropped fail as they would without a flow ("table users does not
    # exist"; a replica that dropped it first answers with a write failure); none before
    assert writer.errors and min(writer.failed_at) >= writer.issued_at, writer.errors[:3]
    folder = flows.mktemp("again")
    (folder / "flow.py").write_text(FLOWS)
    again = run_ctl(cluster_settings, "trigger", "deploy", str(folder / "flow.py"))
    assert again.returncode != 0 and f"{KS}.users" in again.stderr, again.stderr
    for flow in ("sc_by_name", "sc_copy"):
        done = run_ctl(cluster_settings, "trigger", "drop", flow, "--discard-pending", "--yes")
        assert done.returncode == 0, done.stderr
    assert not list(session.execute("SELECT name FROM async_triggers.flows WHERE name IN ('sc_by_name', 'sc_copy')"))
