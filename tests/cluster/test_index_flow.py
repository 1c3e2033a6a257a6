"""The blog's index (users -> users_by_name) on a real cluster: a name change removes the old entry, and two
changes converge to the later name alone whatever the order their tasks run in, and when re-executed. `ctl verify`
gives a verdict on an index whose columns are named like its source's and on a cascade from it, and `--repair`
makes it right."""
import uuid

import pytest

from helpers import ROOT, create_schema, deploy_flow_text, drain, run_ctl, verify_json


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


# --- ctl verify on an index whose columns are named like its source's, and on a cascade from it ------------------

SHOP_SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS shop WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS shop.orders (tenant int, order_id int, status text, total int, PRIMARY KEY (tenant, order_id));
CREATE TABLE IF NOT EXISTS shop.orders_by_status (
  status text, tenant int, order_id int, total int, PRIMARY KEY (status, tenant, order_id));
CREATE TABLE IF NOT EXISTS shop.by_total (
  total int, status text, order_id int, tenant int, PRIMARY KEY (total, status, tenant, order_id));
"""
SHOP_FLOWS = """
from async_triggers.flows import Flow, Write, source
FLOWS = [
    Flow(name="orders_by_status", source="shop.orders", steps=[Write(
        "shop.orders_by_status", status=source.status, tenant=source.tenant, order_id=source.order_id,
        total=source.total)]),
    Flow(name="status_totals", source="shop.orders_by_status", steps=[Write(
        "shop.by_total", total=source.total, status=source.status, order_id=source.order_id, tenant=source.tenant)]),
]
"""


def test_should_verify_and_repair_an_index_named_like_its_source_and_a_cascade_from_it(
        cluster_settings, session, tmp_path):
    create_schema(cluster_settings, SHOP_SCHEMA)
    deploy_flow_text(cluster_settings, tmp_path, SHOP_FLOWS)
    for tenant in (1, 2, 3):
        for order in range(1, 5):
            session.execute("INSERT INTO shop.orders (tenant, order_id, status, total) VALUES (%s, %s, %s, %s)",
                            (tenant, order, "open" if order % 2 else "paid", 10 * order))
    drain(session, "orders_by_status", "status_totals")
    code, tables = verify_json(cluster_settings, "orders_by_status", "status_totals")
    assert code == 0 and [t["table"] for t in tables] == ["shop.orders_by_status", "shop.by_total"], tables
    assert all(t["ok"] and t["expected"] == t["present"] == 12 for t in tables), tables

    # while the index is paused: an order added (its index row missing), a total changed (a wrong value); a row
    # written into the index by hand (unexpected; the cascade derives from it as from any other)
    assert run_ctl(cluster_settings, "trigger", "pause", "orders_by_status").returncode == 0
    session.execute("INSERT INTO shop.orders (tenant, order_id, status, total) VALUES (1, 99, 'open', 990)")
    session.execute("UPDATE shop.orders SET total = 11 WHERE tenant = 1 AND order_id = 1")
    session.execute("INSERT INTO shop.orders_by_status (status, tenant, order_id, total) VALUES ('void', 9, 9, 9)")
    # and damage by hand, newer than every source write: an index row deleted, a total changed in the index (a
    # repair at the source's write time loses to both; it must write them again above them)
    session.execute("DELETE FROM shop.orders_by_status WHERE status = 'paid' AND tenant = 2 AND order_id = 2")
    session.execute("UPDATE shop.orders_by_status SET total = 5 WHERE status = 'open' AND tenant = 3 AND order_id = 1")
    drain(session, "status_totals")
    code, [index] = verify_json(cluster_settings, "orders_by_status", "--consistency", "ALL")
    assert code == 1 and index["consistency"] == "ALL"
    assert (index["missing"], index["unexpected"], index["wrong_value"], index["present"]) == (2, 1, 2, 9), index
    assert index["missing_sample"] == [{"status": "open", "tenant": 1, "order_id": 99, "total": 990},
                                       {"status": "paid", "tenant": 2, "order_id": 2, "total": 20}]
    assert index["unexpected_sample"] == [{"status": "void", "tenant": 9, "order_id": 9, "total": 9}]
    assert [w["columns"] for w in index["wrong_value_sample"]] == [["total"], ["total"]]

    code, [index] = verify_json(cluster_settings, "orders_by_status", "--repair", "--ranges", "4")
    assert code == 0 and index["repaired"] == {"written": 4, "deleted": 1, "not_repaired": 0, "raised": 2}, index
    assert run_ctl(cluster_settings, "trigger", "resume", "orders_by_status").returncode == 0
    drain(session, "orders_by_status", "status_totals")
    code, tables = verify_json(cluster_settings, "--all")
    shop = [t for t in tables if t["flow"] in ("orders_by_status", "status_totals")]
    assert len(shop) == 2 and all(t["ok"] for t in shop), shop
    assert shop[0]["expected"] == shop[1]["expected"] == 13, shop
    assert session.execute("SELECT total FROM shop.orders_by_status WHERE status = 'paid' AND tenant = 2 "
                           "AND order_id = 2").one().total == 20, "the row deleted by hand is back"
