"""Totals per group kept by an aggregate flow on the session's real 3-node cluster (RF 2; docs/design.md, "Aggregates"):
orders moving between customers and statuses, amounts changed, nulled and deleted, rows and partitions expiring,
written by four clients whose clocks differ by up to 50 ms and who retry some writes with a new timestamp; the totals
must equal a GROUP BY of the source read at ALL, and `ctl verify` must find nothing (it compares the members and the
totals). A hand-damaged totals table is mended by `ctl verify --repair` (the plugin recomputes each group), and an
aggregate deployed over existing rows is filled by `ctl trigger backfill`, and again once dropped and deployed anew.
"""
from __future__ import annotations

import random
import threading
import time

import pytest

from helpers import create_empty, deploy_flow_text, drain, run_ctl, verify_json
from verifier import shared

KS = "totals"
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TABLE IF NOT EXISTS {KS}.orders (order_id int PRIMARY KEY, customer_id int, status text, amount int);
CREATE TABLE IF NOT EXISTS {KS}.by_customer (customer_id int, status text, orders bigint, amount bigint, smallest int,
  largest int, PRIMARY KEY (customer_id, status));
CREATE TABLE IF NOT EXISTS {KS}.old_orders (order_id int PRIMARY KEY, customer_id int, amount int);
CREATE TABLE IF NOT EXISTS {KS}.old_by_customer (customer_id int PRIMARY KEY, orders bigint, amount bigint);
"""
TABLES = ["orders", "by_customer", "old_orders", "old_by_customer", "async_members_by_customer",
          "async_members_old_by_customer"]
FLOWS = f"""
from async_triggers.flows import Aggregate, Flow, source as s

FLOWS = [Flow(name="totals_orders", source="{KS}.orders", steps=[
    Aggregate("{KS}.by_customer", group_by={{"customer_id": s.customer_id, "status": s.status}}, count="orders",
              sum={{"amount": s.amount}}, min={{"smallest": s.amount}}, max={{"largest": s.amount}})])]
"""
LATE_FLOWS = f"""
from async_triggers.flows import Aggregate, Flow, source as s

FLOWS = [Flow(name="totals_old", source="{KS}.old_orders", steps=[
    Aggregate("{KS}.old_by_customer", group_by={{"customer_id": s.customer_id}}, count="orders",
              sum={{"amount": s.amount}})])]
"""
STATUSES = ("open", "paid", "sent")
TTL = 8


@pytest.fixture(scope="module")
def verifier(cluster_settings):
    return shared(cluster_settings)


@pytest.fixture(scope="module")
def flow(cluster_settings, tmp_path_factory, verifier):
    from async_triggers.cql import connect
    from async_triggers.cql_script import run_text
    with connect(cluster_settings) as s:   # the members tables of an earlier session's deploy, if kept
        run_text(s, SCHEMA)
        for t in ("async_members_by_customer", "async_members_old_by_customer"):
            s.execute(f"DROP TABLE IF EXISTS {KS}.{t}")
    create_empty(cluster_settings, SCHEMA, KS, TABLES[:4])
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("totals"), FLOWS)


def execute(session, cql: str, args=(), consistency: str = "QUORUM"):
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return session.execute(SimpleStatement(cql, consistency_level=getattr(ConsistencyLevel, consistency)), args)


def group_by(session, table: str, keys: tuple[str, ...], value: str) -> set[tuple]:
    """What the aggregate should say: the source read at ALL, grouped in Python (a null or empty group value: none)."""
    groups: dict[tuple, list] = {}
    for r in execute(session, f"SELECT {', '.join(keys)}, {value} FROM {KS}.{table}", consistency="ALL"):
        key = tuple(getattr(r, k) for k in keys)
        if any(v is None or v == "" for v in key):
            continue
        groups.setdefault(key, []).append(getattr(r, value))
    out = set()
    for key, values in groups.items():
        present = [v for v in values if v is not None]
        out.add(key + (len(values), sum(present) if present else None) +
                ((min(present) if present else None, max(present) if present else None) if len(keys) > 1 else ()))
    return out


def totals(session, table: str, columns: str) -> set[tuple]:
    return {tuple(r) for r in execute(session, f"SELECT {columns} FROM {KS}.{table}", consistency="ALL")}


def client(session, rng: random.Random, skew_us: int, writes: int, errors: list) -> None:
    """One client: writes of 30 orders, its clock off by ``skew_us``; some retried with a new timestamp."""
    try:
        for _ in range(writes):
            order = rng.randrange(30)
            roll = rng.random()
            if roll < 0.30:
                ttl = f"TTL {TTL} AND " if rng.random() < 0.15 else ""
                cql = (f"INSERT INTO {KS}.orders (order_id, customer_id, status, amount) VALUES (%s, %s, %s, %s) "
                       f"USING {ttl}TIMESTAMP %s")
                args = lambda ts, v=(order, rng.randrange(1, 5), rng.choice(STATUSES + ("",)), rng.randrange(-5, 100)): v + (ts,)
            elif roll < 0.50:
                cql = f"UPDATE {KS}.orders USING TIMESTAMP %s SET amount = %s WHERE order_id = %s"
                args = lambda ts, v=(rng.choice((None, rng.randrange(100))), order): (ts,) + v
            elif roll < 0.70:
                cql = f"UPDATE {KS}.orders USING TIMESTAMP %s SET status = %s WHERE order_id = %s"
                args = lambda ts, v=(rng.choice(STATUSES + (None,)), order): (ts,) + v
            elif roll < 0.82:
                cql = f"UPDATE {KS}.orders USING TIMESTAMP %s SET customer_id = %s WHERE order_id = %s"
                args = lambda ts, v=(rng.randrange(1, 5), order): (ts,) + v
            else:
                cql = f"DELETE FROM {KS}.orders USING TIMESTAMP %s WHERE order_id = %s"
                args = lambda ts, v=(order,): (ts,) + v
            ts = int(time.time() * 1_000_000) + skew_us
            execute(session, cql, args(ts), consistency=rng.choice(("ONE", "QUORUM")))
            if rng.random() < 0.1:   # a client retrying with a new timestamp
                execute(session, cql, args(int(time.time() * 1_000_000) + skew_us))
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def test_should_keep_every_total_under_racing_clients_late_stamps_and_expiry(flow, verifier, session):
    errors: list = []
    threads = [threading.Thread(target=client, args=(session, random.Random(seed), skew, 120, errors))
               for seed, skew in enumerate((0, -50_000, 30_000, 50_000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    drain(session, "totals_orders")
    time.sleep(TTL + 6)   # every row written with a TTL has expired, and its group's timer fired (2 s cycles)
    drain(session, "totals_orders")
    want = group_by(session, "orders", ("customer_id", "status"), "amount")
    got = totals(session, "by_customer", "customer_id, status, orders, amount, smallest, largest")
    assert got == want, f"unexpected {sorted(got - want)[:8]}, missing {sorted(want - got)[:8]}"
    assert len(want) >= 5
    assert verifier.problems("totals_orders") == []


def test_should_mend_a_damaged_total_by_recomputing_its_group(flow, verifier, session, cluster_settings):
    drain(session, "totals_orders")
    rows = sorted(totals(session, "by_customer", "customer_id, status, orders"))
    assert len(rows) >= 2
    execute(session, f"UPDATE {KS}.by_customer SET orders = 1000 WHERE customer_id = %s AND status = %s", rows[0][:2])
    execute(session, f"DELETE FROM {KS}.by_customer WHERE customer_id = %s AND status = %s", rows[1][:2])
    execute(session, f"INSERT INTO {KS}.by_customer (customer_id, status, orders) VALUES (99, 'open', 1)")
    code, tables = verify_json(cluster_settings, "totals_orders")
    damaged = next(t for t in tables if t["table"] == f"{KS}.by_customer")
    assert code == 1 and (damaged["wrong_value"], damaged["missing"], damaged["unexpected"]) == (1, 1, 1), damaged
    code, tables = verify_json(cluster_settings, "totals_orders", "--repair")
    assert code == 0, tables
    assert verifier.problems("totals_orders") == []


def test_should_backfill_an_aggregate_deployed_over_existing_rows(flow, verifier, session, cluster_settings,
                                                                 tmp_path_factory):
    for i in range(60):
        execute(session, f"INSERT INTO {KS}.old_orders (order_id, customer_id, amount) VALUES (%s, %s, %s)",
                (i, i % 7, None if i % 5 == 0 else i))
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("totals_old"), LATE_FLOWS)
    execute(session, f"UPDATE {KS}.old_orders SET customer_id = 8 WHERE order_id = 1")   # a live change, then backfill
    done = run_ctl(cluster_settings, "trigger", "backfill", "totals_old", "--master", "local[2]", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "group(s) of totals.old_by_customer to recompute" in done.stderr + done.stdout
    drain(session, "totals_old")
    want = group_by(session, "old_orders", ("customer_id",), "amount")
    assert totals(session, "old_by_customer", "customer_id, orders, amount") == want
    assert verifier.problems("totals_old") == []


def test_should_backfill_again_after_the_flow_is_dropped_and_deployed_again(flow, verifier, session, cluster_settings,
                                                                           tmp_path_factory):
    """A complete run of an earlier deploy of the flow is not resumed: the rows written while it was not deployed
    are backfilled too (the second backfill once found the first's run complete and wrote nothing)."""
    dropped = run_ctl(cluster_settings, "trigger", "drop", "totals_old", "--drain")
    assert dropped.returncode == 0, dropped.stdout + dropped.stderr
    for i in range(60, 90):
        execute(session, f"INSERT INTO {KS}.old_orders (order_id, customer_id, amount) VALUES (%s, %s, %s)",
                (i, 20 + i % 3, i))
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("totals_old_again"), LATE_FLOWS)
    done = run_ctl(cluster_settings, "trigger", "backfill", "totals_old", "--master", "local[2]", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    drain(session, "totals_old")
    want = group_by(session, "old_orders", ("customer_id",), "amount")
    assert {w[0] for w in want} >= {20, 21, 22}
    assert totals(session, "old_by_customer", "customer_id, orders, amount") == want
    assert verifier.problems("totals_old") == []


def test_should_backfill_exactly_after_the_flow_was_dropped_while_rows_changed(flow, verifier, session,
                                                                               cluster_settings, tmp_path_factory):
    """Dropped, then orders deleted and moved to other customers while no flow runs, then deployed anew and
    backfilled: what the plugin kept of the old deploy (its members) must not count rows that are gone or moved."""
    dropped = run_ctl(cluster_settings, "trigger", "drop", "totals_old", "--drain")
    assert dropped.returncode == 0, dropped.stdout + dropped.stderr
    for i in range(0, 90, 4):
        execute(session, f"DELETE FROM {KS}.old_orders WHERE order_id = %s", (i,))
    for i in range(1, 90, 4):
        execute(session, f"UPDATE {KS}.old_orders SET customer_id = 30 WHERE order_id = %s", (i,))
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("totals_old_third"), LATE_FLOWS)
    done = run_ctl(cluster_settings, "trigger", "backfill", "totals_old", "--master", "local[2]", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    execute(session, f"UPDATE {KS}.old_orders SET amount = 5 WHERE order_id = 2")   # a task after the backfill
    drain(session, "totals_old")
    want = group_by(session, "old_orders", ("customer_id",), "amount")
    assert totals(session, "old_by_customer", "customer_id, orders, amount") == want
    assert verifier.problems("totals_old") == []
