"""CQL write shapes through flows on the session's real 3-node cluster (RF 2). The rule: once the queues drain
(status.wait_drained), every flow's targets equal what its spec derives from the current source; the verify job
(spark_jobs.verify, through tests/verifier.py) is the judge (0 missing, 0 unexpected, 0 wrong values), and each test
also states the rows it expects.

The shapes: partial updates executed on a replica that missed a write, explicit and skewed timestamps, range and
partition deletes, equal timestamps, static columns, logged and unlogged batches, TTL, lightweight transactions, and
a row near the commit log's mutation limit. Each test has tables and flows of its own in keyspace ``shapes`` (the
verification compares whole tables), all deployed once: one module past 400 lines, because the nine shapes share
that deploy (some 50 schema changes, two minutes on a 2-core machine) and one Spark session (tests/verifier.py)."""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
import yaml

from helpers import create_empty, deploy_flow_text, drain, run_ctl
from verifier import shared
from async_triggers import cluster as cluster_mod

KS = "shapes"
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TABLE IF NOT EXISTS {KS}.users (user_id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.users_by_name (name text, user_id int, email text, PRIMARY KEY (name, user_id));
CREATE TABLE IF NOT EXISTS {KS}.people (user_id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.people_by_name (name text, user_id int, email text, PRIMARY KEY (name, user_id));
CREATE TABLE IF NOT EXISTS {KS}.posts (user_id int, post_id int, tag text, body text, PRIMARY KEY (user_id, post_id));
CREATE TABLE IF NOT EXISTS {KS}.posts_by_tag (tag text, user_id int, post_id int, PRIMARY KEY (tag, user_id, post_id));
CREATE TABLE IF NOT EXISTS {KS}.posts_copy (user_id int, post_id int, tag text, body text,
  PRIMARY KEY (user_id, post_id));
CREATE TABLE IF NOT EXISTS {KS}.ties (id int PRIMARY KEY, a text, b text);
CREATE TABLE IF NOT EXISTS {KS}.ties_copy (id int PRIMARY KEY, a text, b text);
CREATE TABLE IF NOT EXISTS {KS}.ties_by_a (a text, id int, b text, PRIMARY KEY (a, id));
CREATE TABLE IF NOT EXISTS {KS}.rooms (house int, room int, owner text static, paint text, PRIMARY KEY (house, room));
CREATE TABLE IF NOT EXISTS {KS}.rooms_copy (house int, room int, owner text, paint text, PRIMARY KEY (house, room));
CREATE TABLE IF NOT EXISTS {KS}.cart (cart int, item int, sku text, qty int, PRIMARY KEY (cart, item));
CREATE TABLE IF NOT EXISTS {KS}.cart_copy (cart int, item int, sku text, qty int, PRIMARY KEY (cart, item));
CREATE TABLE IF NOT EXISTS {KS}.cart_by_sku (sku text, cart int, item int, qty int, PRIMARY KEY (sku, cart, item));
CREATE TABLE IF NOT EXISTS {KS}.sessions (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.sessions_copy (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.sessions_by_name (name text, id int, email text, PRIMARY KEY (name, id));
CREATE TABLE IF NOT EXISTS {KS}.accounts (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.accounts_copy (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.accounts_by_name (name text, id int, email text, PRIMARY KEY (name, id));
CREATE TABLE IF NOT EXISTS {KS}.docs (id int PRIMARY KEY, tag text, body text, notes text);
CREATE TABLE IF NOT EXISTS {KS}.docs_copy (id int PRIMARY KEY, tag text, body text);
CREATE TABLE IF NOT EXISTS {KS}.docs_by_tag (tag text, id int, PRIMARY KEY (tag, id));
"""
FLOWS = f"""
from async_triggers.flows import Flow, Write, source as s

def copy(name, table, *columns):
    return Flow(name=name, source="{KS}." + table,
                steps=[Write("{KS}." + table + "_copy", **{{c: s[c] for c in columns}})])

def index(name, table, target, *columns):
    return Flow(name=name, source="{KS}." + table, steps=[Write("{KS}." + target, **{{c: s[c] for c in columns}})])

FLOWS = [
    index("shapes_users_by_name", "users", "users_by_name", "name", "user_id", "email"),
    index("shapes_people_by_name", "people", "people_by_name", "name", "user_id", "email"),
    index("shapes_posts_by_tag", "posts", "posts_by_tag", "tag", "user_id", "post_id"),
    copy("shapes_posts_copy", "posts", "user_id", "post_id", "tag", "body"),
    copy("shapes_ties_copy", "ties", "id", "a", "b"),
    index("shapes_ties_by_a", "ties", "ties_by_a", "a", "id", "b"),
    copy("shapes_rooms_copy", "rooms", "house", "room", "owner", "paint"),
    copy("shapes_cart_copy", "cart", "cart", "item", "sku", "qty"),
    index("shapes_cart_by_sku", "cart", "cart_by_sku", "sku", "cart", "item", "qty"),
    copy("shapes_sessions_copy", "sessions", "id", "name", "email"),
    index("shapes_sessions_by_name", "sessions", "sessions_by_name", "name", "id", "email"),
    copy("shapes_accounts_copy", "accounts", "id", "name", "email"),
    index("shapes_accounts_by_name", "accounts", "accounts_by_name", "name", "id", "email"),
    copy("shapes_docs_copy", "docs", "id", "tag", "body"),
    index("shapes_docs_by_tag", "docs", "docs_by_tag", "tag", "id"),
]
"""
TABLES = [line.split(f"{KS}.")[1].split(" ")[0] for line in SCHEMA.splitlines() if line.startswith("CREATE TABLE")]
NODES = ("node1", "node2", "node3")
T0 = 1_000_000   # explicit timestamps of the tests that set them (microseconds; far below any client's clock)


@pytest.fixture(scope="module")
def verifier(cluster_settings):
    return shared(cluster_settings)


@pytest.fixture(scope="module")
def flows(cluster_settings, tmp_path_factory, verifier):
    create_empty(cluster_settings, SCHEMA, KS, TABLES)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("shapes"), FLOWS)


# --- reading and writing ------------------------------------------------------------------------------------------

def level(name: str):
    from cassandra import ConsistencyLevel
    return getattr(ConsistencyLevel, name)


def execute(session, cql: str, args=(), consistency: str = "QUORUM", host=None):
    """The statement through ``host`` (or any node). The driver may mark a node down for a moment after another one
    restarted on this 2-core machine: a request it never sent (every error a connection error) is sent again."""
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException
    from cassandra.query import SimpleStatement
    deadline = time.monotonic() + 90
    while True:
        try:
            return session.execute(SimpleStatement(cql, consistency_level=level(consistency)), args, host=host)
        except NoHostAvailable as e:
            unsent = all(isinstance(x, ConnectionException) for x in e.errors.values())
            if not unsent or time.monotonic() > deadline:
                raise
            time.sleep(2)


def write_many(session, cql: str, rows, consistency: str) -> None:
    from cassandra.concurrent import execute_concurrent_with_args
    statement = session.prepare(cql)
    statement.consistency_level = level(consistency)
    execute_concurrent_with_args(session, statement, list(rows), concurrency=32, raise_on_first_error=True)


def rows_at_all(session, table: str, columns: str) -> set[tuple]:
    """Every row of the table (they are small), read at ALL."""
    return {tuple(r) for r in execute(session, f"SELECT {columns} FROM {KS}.{table}", consistency="ALL")}


def assert_flows_derive(verifier, flows: tuple[str, ...], got: dict, want: dict) -> None:
    """The verify job finds nothing wrong in the flows AND each target holds exactly the rows stated."""
    problems = verifier.problems(*flows)
    for table, rows in want.items():
        if got[table] != rows:
            problems.append(f"{table}: unexpected {sorted(got[table] - rows, key=str)[:10]} "
                            f"({len(got[table] - rows)}), missing {sorted(rows - got[table], key=str)[:10]} "
                            f"({len(rows - got[table])})")
    assert not problems, "\n".join(problems)


def host(session, address: str):
    found = session.cluster.metadata.get_host(address)
    assert found is not None, f"the driver does not know {address}"
    return found


def wait_driver_sees(session, address: str, up: bool, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while host(session, address).is_up != up and time.monotonic() < deadline:
        time.sleep(0.5)


def nodetool_everywhere(settings, *args: str) -> None:
    """`ctl cluster nodetool NODE -- ARGS` on every node, at once (each starts a JVM: seconds)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(len(NODES)) as pool:
        results = list(pool.map(lambda n: run_ctl(settings, "cluster", "nodetool", n, "--", *args, timeout=120), NODES))
    for node, result in zip(NODES, results):
        assert result.returncode == 0, f"ctl cluster nodetool {node} {' '.join(args)}: {result.stdout}{result.stderr}"


def address_of(cluster, node: str) -> str:
    return next(n.address for n in cluster.nodes if n.name == node)


# --- 1. partial updates executed on a replica that missed a write -------------------------------------------------

def test_should_index_the_current_name_when_the_email_changes_on_a_replica_that_missed_the_rename(
        flows, verifier, session, cluster, cluster_settings):
    flow, users, down = "shapes_users_by_name", range(60), "node2"
    write_many(session, f"INSERT INTO {KS}.users (user_id, name, email) VALUES (?, ?, ?)",
               [(u, f"old{u}", f"u{u}@old") for u in users], "ALL")
    drain(session, flow)
    nodetool_everywhere(cluster_settings, "disablehandoff")   # no hints: the stopped replica misses the renames
    try:
        cluster_mod.stop_node(cluster_settings, down, name=cluster_settings.cluster_name)
        wait_driver_sees(session, address_of(cluster, down), up=False)
        write_many(session, f"UPDATE {KS}.users SET name = ? WHERE user_id = ?", [(f"new{u}", u) for u in users],
                   "ONE")
        cluster_mod.start_node(cluster_settings, down, name=cluster_settings.cluster_name)
        wait_driver_sees(session, address_of(cluster, down), up=True)
        # the email only: a task that fills the name in reads it from a replica, maybe the one that missed it
        write_many(session, f"UPDATE {KS}.users SET email = ? WHERE user_id = ?", [(f"u{u}@new", u) for u in users],
                   "QUORUM")
        since = dt.datetime.utcnow()
        for u in users:   # read repair brings the renames to the replica that missed them
            execute(session, f"SELECT name, email FROM {KS}.users WHERE user_id = %s", (u,), consistency="ALL")
    finally:
        cluster_mod.start_node(cluster_settings, down, name=cluster_settings.cluster_name)
        nodetool_everywhere(cluster_settings, "enablehandoff")
    drain(session, flow, since=since)
    want = {(f"new{u}", u, f"u{u}@new") for u in users}
    assert rows_at_all(session, "users", "name, user_id, email") == want
    got = {"users_by_name": rows_at_all(session, "users_by_name", "name, user_id, email")}
    assert_flows_derive(verifier, (flow,), got, {"users_by_name": want})


# --- 2. explicit out-of-order timestamps, coordinators with skewed clocks -----------------------------------------

def test_should_index_the_latest_name_whatever_order_the_timestamps_arrive_in(flows, verifier, session, cluster):
    flow = "shapes_people_by_name"
    node1, node2, node3 = (host(session, address_of(cluster, n)) for n in NODES)
    rename = f"UPDATE {KS}.people USING TIMESTAMP %s SET name = %s WHERE user_id = %s"
    email = f"UPDATE {KS}.people USING TIMESTAMP %s SET email = %s WHERE user_id = %s"
    insert = f"INSERT INTO {KS}.people (user_id, name, email) VALUES (%s, %s, %s) USING TIMESTAMP %s"
    want = set()
    for u in range(20):   # the later rename is written first, the email's timestamp lies between the renames
        execute(session, insert, (u, f"a{u}", f"a{u}@x", T0), host=node1)
        execute(session, rename, (T0 + 300, f"c{u}", u), host=node1)
        execute(session, rename, (T0 + 100, f"b{u}", u), host=node2)
        execute(session, email, (T0 + 200, f"e{u}@x", u), host=node3)
        want.add((f"c{u}", u, f"e{u}@x"))
    now = int(time.time() * 1_000_000)
    fast, slow = now + 5_000_000, now - 5_000_000   # node1's clock 5 s ahead, node3's 5 s behind
    for u in range(20, 40):
        execute(session, insert, (u, f"a{u}", f"a{u}@x", now - 10_000_000), host=node2)
        execute(session, rename, (fast, f"f{u}", u), host=node1)            # a rename stamped by the fast clock
        execute(session, rename, (slow, f"s{u}", u), host=node3)            # later in real time, older in stamp
        execute(session, email, (now, f"m{u}@x", u), host=node2)            # between them
        want.add((f"f{u}", u, f"m{u}@x"))
    drain(session, flow)
    assert rows_at_all(session, "people", "name, user_id, email") == want
    got = {"people_by_name": rows_at_all(session, "people_by_name", "name, user_id, email")}
    assert_flows_derive(verifier, (flow,), got, {"people_by_name": want})


# --- 3. range and partition deletes on a table with clustering columns --------------------------------------------

def test_should_remove_exactly_the_rows_a_range_or_partition_delete_removed(flows, verifier, session):
    flows_ = ("shapes_posts_by_tag", "shapes_posts_copy")
    tag = lambda u, p: f"t{(u + p) % 5}"
    write_many(session, f"INSERT INTO {KS}.posts (user_id, post_id, tag, body) VALUES (?, ?, ?, ?)",
               [(u, p, tag(u, p), f"post {u}/{p}") for u in range(50) for p in range(10)], "QUORUM")
    write_many(session, f"DELETE FROM {KS}.posts WHERE user_id = ? AND post_id >= ?", [(u, 5) for u in range(25)],
               "QUORUM")
    write_many(session, f"DELETE FROM {KS}.posts WHERE user_id = ?", [(u,) for u in range(25, 50)], "QUORUM")
    drain(session, *flows_)
    live = [(u, p) for u in range(25) for p in range(5)]
    want = {"posts_by_tag": {(tag(u, p), u, p) for u, p in live},
            "posts_copy": {(u, p, tag(u, p), f"post {u}/{p}") for u, p in live}}
    got = {"posts_by_tag": rows_at_all(session, "posts_by_tag", "tag, user_id, post_id"),
           "posts_copy": rows_at_all(session, "posts_copy", "user_id, post_id, tag, body")}
    assert_flows_derive(verifier, flows_, got, want)


# --- 4. equal timestamps ------------------------------------------------------------------------------------------

def test_should_derive_what_cassandra_keeps_of_two_writes_with_the_same_timestamp(flows, verifier, session):
    flows_ = ("shapes_ties_copy", "shapes_ties_by_a")
    t = T0 + 1_000
    ins = f"INSERT INTO {KS}.ties (id, a, b) VALUES (%s, %s, %s) USING TIMESTAMP %s"
    upd = lambda col: f"UPDATE {KS}.ties USING TIMESTAMP %s SET {col} = %s WHERE id = %s"
    delete = f"DELETE FROM {KS}.ties USING TIMESTAMP %s WHERE id = %s"
    steps = [
        (ins, (1, "x", "2", t)), (ins, (1, "y", "1", t)),                          # insert/insert: per cell, greater
        (ins, (2, "o", "o", t - 10)), (upd("a"), (t, "p", 2)), (upd("b"), (t, "q", 2)),   # different columns
        (ins, (3, "m", "m", t - 10)), (upd("a"), (t, "n", 3)), (delete, (t, 3)),   # update vs delete: delete wins
        (ins, (4, "m", "m", t - 10)), (delete, (t, 4)), (upd("a"), (t, "n", 4)),   # the same, other order
        (ins, (5, "k", "k", t - 10)), (upd("a"), (t, "a1", 5)), (upd("a"), (t, "a0", 5)),  # one column: greater
        (ins, (6, "k", "k", t - 10)), (upd("a"), (t, "a0", 6)), (upd("a"), (t, "a1", 6)),
    ]
    for cql, args in steps:
        execute(session, cql, args)
    drain(session, *flows_)
    source = rows_at_all(session, "ties", "id, a, b")
    assert source == {(1, "y", "2"), (2, "p", "q"), (5, "a1", "k"), (6, "a1", "k")}, "Cassandra's own tie-break"
    want = {"ties_copy": source, "ties_by_a": {(a, i, b) for i, a, b in source}}
    got = {"ties_copy": rows_at_all(session, "ties_copy", "id, a, b"),
           "ties_by_a": rows_at_all(session, "ties_by_a", "a, id, b")}
    assert_flows_derive(verifier, flows_, got, want)


# --- 5. static columns --------------------------------------------------------------------------------------------

def test_should_carry_the_static_column_into_every_derived_row_of_its_partition(flows, verifier, session):
    flow = "shapes_rooms_copy"
    ins = f"INSERT INTO {KS}.rooms (house, room, owner, paint) VALUES (%s, %s, %s, %s)"
    owner = f"UPDATE {KS}.rooms SET owner = %s WHERE house = %s"
    paint = f"UPDATE {KS}.rooms SET paint = %s WHERE house = %s AND room = %s"
    for house in (1, 2, 3, 6):
        for room in (1, 2, 3):
            execute(session, ins, (house, room, "ann", "white"))
    for house in (1, 2, 3):
        execute(session, owner, ("bob", house))                        # the static column alone
    execute(session, paint, ("blue", 2, 2))                            # then a clustering row
    execute(session, paint, ("blue", 3, 2))
    execute(session, f"DELETE FROM {KS}.rooms WHERE house = 3", ())    # then the whole partition
    execute(session, owner, ("cid", 4))                                # a static row before any clustering row
    execute(session, f"INSERT INTO {KS}.rooms (house, room, paint) VALUES (4, 1, 'red')", ())
    execute(session, owner, ("dan", 5))                                # a static row alone: no derived row
    execute(session, f"DELETE owner FROM {KS}.rooms WHERE house = 6", ())   # the static column deleted
    for room in (1, 2, 3):                                             # rows deleted, then written again: the
        execute(session, ins, (7, room, "eve", "white"))               # static value set before stays theirs
    execute(session, f"DELETE FROM {KS}.rooms WHERE house = 7 AND room = 1", ())
    execute(session, f"DELETE FROM {KS}.rooms WHERE house = 7 AND room >= 2", ())
    execute(session, f"INSERT INTO {KS}.rooms (house, room, paint) VALUES (7, 1, 'green')", ())
    execute(session, paint, ("pink", 7, 2))
    expiring = time.monotonic()                                        # a row whose every cell expires is gone,
    execute(session, f"INSERT INTO {KS}.rooms (house, room, paint) VALUES (8, 1, 'grey') USING TTL 4", ())
    execute(session, owner, ("fay", 8))                                # whatever static value its partition keeps
    drain(session, flow)
    time.sleep(max(0.0, expiring + 5 - time.monotonic()))
    want = {(1, r, "bob", "white") for r in (1, 2, 3)} | {(2, 1, "bob", "white"), (2, 2, "bob", "blue"),
                                                          (2, 3, "bob", "white"), (4, 1, "cid", "red")}
    want |= {(6, r, None, "white") for r in (1, 2, 3)} | {(7, 1, "eve", "green"), (7, 2, "eve", "pink")}
    got = {"rooms_copy": rows_at_all(session, "rooms_copy", "house, room, owner, paint")}
    assert_flows_derive(verifier, (flow,), got, {"rooms_copy": want})


# --- 6. batches ---------------------------------------------------------------------------------------------------

def test_should_derive_every_row_of_logged_and_unlogged_batches_with_their_own_timestamps(flows, verifier, session):
    flows_ = ("shapes_cart_copy", "shapes_cart_by_sku")
    ins = f"INSERT INTO {KS}.cart (cart, item, sku, qty) VALUES (%s, %s, %s, %s) USING TIMESTAMP %s"
    source_want = set()
    for begin, c1, c2 in (("BEGIN BATCH", 10, 11), ("BEGIN UNLOGGED BATCH", 20, 21)):   # each batch its own carts
        for cart, item, sku in ((c1, 1, "a"), (c1, 2, "b"), (c1, 3, "c"), (c2, 1, "d")):
            execute(session, ins, (cart, item, sku, 1, T0))
        # two rows (and a third, untouched) of one partition and the rows of another, each statement its timestamp
        execute(session, f"""{begin}
          UPDATE {KS}.cart USING TIMESTAMP {T0 + 20} SET sku = 'a2', qty = 5 WHERE cart = {c1} AND item = 1;
          DELETE FROM {KS}.cart USING TIMESTAMP {T0 + 10} WHERE cart = {c1} AND item = 2;
          DELETE sku FROM {KS}.cart USING TIMESTAMP {T0 - 5} WHERE cart = {c1} AND item = 3;
          INSERT INTO {KS}.cart (cart, item, sku, qty) VALUES ({c2}, 2, 'e', 2) USING TIMESTAMP {T0 + 30};
          UPDATE {KS}.cart USING TIMESTAMP {T0 + 40} SET sku = 'd2' WHERE cart = {c2} AND item = 1;
        APPLY BATCH""")
        source_want |= {(c1, 1, "a2", 5), (c1, 3, "c", 1), (c2, 1, "d2", 1), (c2, 2, "e", 2)}
    drain(session, *flows_)
    source = rows_at_all(session, "cart", "cart, item, sku, qty")
    assert source == source_want, "a statement older than the row changes nothing"
    want = {"cart_copy": source, "cart_by_sku": {(s, c, i, q) for c, i, s, q in source}}
    got = {"cart_copy": rows_at_all(session, "cart_copy", "cart, item, sku, qty"),
           "cart_by_sku": rows_at_all(session, "cart_by_sku", "sku, cart, item, qty")}
    assert_flows_derive(verifier, flows_, got, want)


# --- 7. TTL -------------------------------------------------------------------------------------------------------

def test_should_match_the_source_once_its_ttl_cells_expired(flows, verifier, session):
    flows_ = ("shapes_sessions_copy", "shapes_sessions_by_name")
    ins = f"INSERT INTO {KS}.sessions (id, name, email) VALUES (%s, %s, %s)"
    execute(session, ins + " USING TTL 5", (1, "n1", "e1"))                               # the whole row
    execute(session, ins, (2, "n2", "e2"))
    execute(session, f"UPDATE {KS}.sessions USING TTL 5 SET email = 'temp2' WHERE id = 2", ())   # a mapped column
    execute(session, ins, (3, "n3", "e3"))
    execute(session, f"UPDATE {KS}.sessions USING TTL 5 SET name = 'temp3' WHERE id = 3", ())    # the index's key
    execute(session, ins + " USING TTL 5", (4, "n4", "e4"))
    execute(session, f"UPDATE {KS}.sessions SET email = 'kept4' WHERE id = 4", ())      # outlives its row's TTL
    execute(session, ins, (5, "n5", "e5"))
    written = time.monotonic()
    drain(session, *flows_)
    want_source = {(2, "n2", None), (3, None, "e3"), (4, None, "kept4"), (5, "n5", "e5")}
    while rows_at_all(session, "sessions", "id, name, email") != want_source:
        assert time.monotonic() < written + 20, "the source's TTL cells did not expire"
        time.sleep(0.5)
    time.sleep(1.5)   # derived cells expire with their source or up to a second before, never after
    drain(session, *flows_)
    want = {"sessions_copy": want_source, "sessions_by_name": {("n2", 2, None), ("n5", 5, "e5")}}
    got = {"sessions_copy": rows_at_all(session, "sessions_copy", "id, name, email"),
           "sessions_by_name": rows_at_all(session, "sessions_by_name", "name, id, email")}
    assert_flows_derive(verifier, flows_, got, want)


# --- 8. lightweight transactions ----------------------------------------------------------------------------------

def test_should_follow_what_lightweight_transactions_applied(flows, verifier, session):
    flows_ = ("shapes_accounts_copy", "shapes_accounts_by_name")
    applied = lambda cql, args=(): execute(session, cql, args).was_applied
    ins = f"INSERT INTO {KS}.accounts (id, name, email) VALUES (%s, %s, %s) IF NOT EXISTS"
    assert all(applied(ins, (i, f"n{i}", f"e{i}")) for i in range(1, 6))
    assert not applied(ins, (1, "other", "other"))
    assert applied(f"UPDATE {KS}.accounts SET name = 'new2' WHERE id = 2 IF name = 'n2'")
    assert not applied(f"UPDATE {KS}.accounts SET name = 'new3' WHERE id = 3 IF name = 'wrong'")
    assert applied(f"UPDATE {KS}.accounts SET email = 'x4' WHERE id = 4 IF EXISTS")
    assert applied(f"DELETE FROM {KS}.accounts WHERE id = 5 IF EXISTS")
    assert not applied(f"UPDATE {KS}.accounts SET name = 'n6' WHERE id = 6 IF EXISTS")
    drain(session, *flows_)
    source = {(1, "n1", "e1"), (2, "new2", "e2"), (3, "n3", "e3"), (4, "n4", "x4")}
    assert rows_at_all(session, "accounts", "id, name, email") == source
    want = {"accounts_copy": source, "accounts_by_name": {(n, i, e) for i, n, e in source}}
    got = {"accounts_copy": rows_at_all(session, "accounts_copy", "id, name, email"),
           "accounts_by_name": rows_at_all(session, "accounts_by_name", "name, id, email")}
    assert_flows_derive(verifier, flows_, got, want)


# --- 9. a row near the commit log's mutation limit ----------------------------------------------------------------

def _size(text: str) -> int:
    units = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
    for unit, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if str(text).endswith(unit):
            return int(str(text)[:-len(unit)]) * factor
    raise ValueError(f"not a data size: {text!r}")


def max_mutation_size(cluster) -> int:
    """What the nodes run with: cluster/async_triggers/cluster/templates/conf/cassandra.yaml.jinja sets commitlog_segment_size (32MiB) and
    leaves max_mutation_size to Cassandra's default, half a segment."""
    conf = yaml.safe_load((Path(cluster.nodes[0].path) / "conf" / "cassandra.yaml").read_text())
    if conf.get("max_mutation_size"):
        return _size(conf["max_mutation_size"])
    return _size(conf["commitlog_segment_size"]) // 2


def test_should_propagate_a_row_near_the_mutation_limit_or_refuse_it_naming_the_flow(
        flows, verifier, session, cluster, cluster_settings):
    flows_ = ("shapes_docs_copy", "shapes_docs_by_tag")
    size = int(max_mutation_size(cluster) * 0.6)
    rows = {1: ("t1", "b" * size, "small"),      # a large value in a column the copy maps
            2: ("t2", "small", "n" * size)}      # and one in a column no flow maps
    refused = {}
    for doc, (tag, body, notes) in rows.items():
        for attempt in range(3):   # a client retries a timeout; a refusal is an answer
            try:
                execute(session, f"INSERT INTO {KS}.docs (id, tag, body, notes) VALUES (%s, %s, %s, %s)",
                        (doc, tag, body, notes), consistency="ONE")
                break
            except Exception as e:  # noqa: BLE001 - the test inspects the error below
                refused[doc] = f"{type(e).__name__}: {e}"
                if "Timeout" not in type(e).__name__:
                    break
    waited = run_ctl(cluster_settings, "trigger", "wait", *flows_, "--json", timeout=600)
    assert waited.returncode == 0, waited.stderr
    source = {r[0]: r[1:] for r in execute(session, f"SELECT id, tag, body FROM {KS}.docs", consistency="ALL")}
    copies = {r[0]: r[1:] for r in execute(session, f"SELECT id, tag, body FROM {KS}.docs_copy", consistency="ALL")}
    index = rows_at_all(session, "docs_by_tag", "tag, id")
    problems = []
    for doc, (tag, body, _) in rows.items():
        if doc in source:   # the write stands: so must its derived rows, once `ctl trigger wait` says drained
            if copies.get(doc) != (tag, body):
                problems.append(f"doc {doc} ({size} characters) is in the source but not in docs_copy after "
                                f"`ctl trigger wait` drained: {'absent' if doc not in copies else 'differs'}")
            if (tag, doc) not in index:
                problems.append(f"doc {doc} is in the source but not in docs_by_tag after `ctl trigger wait` drained")
        elif not any(f in refused.get(doc, "") for f in flows_):
            problems.append(f"doc {doc} was refused without naming a flow: {refused.get(doc, 'no error')[:300]}")
    problems += verifier.problems(*flows_)
    assert not problems, "\n".join(problems)
