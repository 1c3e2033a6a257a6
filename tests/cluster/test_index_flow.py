"""The blog's index (users -> users_by_name) on a real cluster: a name change removes the old entry, and two
changes converge to the later name alone whatever the order their tasks run in, and when re-executed."""
import uuid

import pytest

from helpers import ROOT, drain, run_ctl


FLOW = "users_by_name"


@pytest.fixture(scope="module")
def index_flow(cluster_settings):
    from async_triggers.cql import connect
    from async_triggers.cql_script import run_file
    with connect(cluster_settings) as s:
        run_file(s, ROOT / "examples" / "users_index" / "schema.cql")
    result = run_ctl(cluster_settings, "trigger", "deploy", str(ROOT / "examples" / "users_index" / "flows.py"))
    assert result.returncode == 0, result.stderr


def set_name(session, user, name, ts):
    session.execute("UPDATE app.users USING TIMESTAMP %s SET name = %s, email = %s WHERE user_id = %s",
                    (ts, name, f"{name}@example.org", user))


def entries(session, user):
    """Every index entry of the user (a scan: the test tables are tiny)."""
    return sorted((r.name, r.email) for r in session.execute("SELECT name, user_id, email FROM app.users_by_name")
                  if r.user_id == user)


def test_should_move_the_entry_when_the_name_changes_in_order(index_flow, session):
    user = uuid.uuid4()
    set_name(session, user, "ann", 1_000)
    set_name(session, user, "bea", 2_000)
    drain(session, FLOW)
    assert entries(session, user) == [("bea", "bea@example.org")]


def test_should_converge_when_the_older_change_is_executed_last(index_flow, session):
    user = uuid.uuid4()
    set_name(session, user, "bea", 2_000)   # the later change arrives and runs first
    drain(session, FLOW)
    set_name(session, user, "ann", 1_000)   # the older change's task runs after it
    drain(session, FLOW)
    assert session.execute("SELECT name FROM app.users WHERE user_id = %s", (user,)).one().name == "bea"
    assert entries(session, user) == [("bea", "bea@example.org")]


def test_should_converge_when_tasks_are_re_executed(index_flow, session):
    user = uuid.uuid4()
    set_name(session, user, "ann", 1_000)
    set_name(session, user, "bea", 2_000)
    drain(session, FLOW)
    for _ in range(2):                      # the same writes again: their tasks run again (at-least-once)
        set_name(session, user, "ann", 1_000)
        set_name(session, user, "bea", 2_000)
    drain(session, FLOW)
    assert entries(session, user) == [("bea", "bea@example.org")]


def test_should_keep_a_delete_that_overtakes_the_insert(index_flow, session):
    user = uuid.uuid4()
    session.execute("DELETE FROM app.users USING TIMESTAMP 3000 WHERE user_id = %s", (user,))
    drain(session, FLOW)
    set_name(session, user, "cid", 2_000)   # older than the delete
    drain(session, FLOW)
    assert entries(session, user) == []


def test_should_remove_the_entry_when_the_user_is_deleted(index_flow, session):
    user = uuid.uuid4()
    set_name(session, user, "dan", 1_000)
    drain(session, FLOW)
    assert entries(session, user) == [("dan", "dan@example.org")]
    session.execute("DELETE FROM app.users USING TIMESTAMP 5000 WHERE user_id = %s", (user,))
    drain(session, FLOW)
    assert entries(session, user) == []
