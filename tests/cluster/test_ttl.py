"""TTL propagation on the session's real 3-node cluster: a source write with a TTL gives its derived rows what remains
of it (docs/design.md, "TTL"), through an index-like flow (lineage), a fan-out, a direct copy and a cascade fed by
that copy; they expire with the source, and a row without TTL derives rows without one. One 45 s window for all
cases, so the module takes about a minute. (The window must outlast the drain: on a loaded 2-core machine a drain
after a module's heavy load once took more than 20 s, and the source row had expired before the test looked.)"""
from __future__ import annotations

import time

import pytest

from helpers import create_schema, deploy_flow_text, drain, write_followers

TTL = 45

SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS ttlks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS ttlks.items (id int PRIMARY KEY, name text, owner bigint, body text);
CREATE TABLE IF NOT EXISTS ttlks.items_by_name (name text, id int, body text, PRIMARY KEY (name, id));
CREATE TABLE IF NOT EXISTS ttlks.followers (user_id bigint, follower_id bigint, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS ttlks.feed (user_id bigint, id int, body text, PRIMARY KEY (user_id, id));
CREATE TABLE IF NOT EXISTS ttlks.items_copy (id int PRIMARY KEY, body text);
CREATE TABLE IF NOT EXISTS ttlks.items_copy2 (id int PRIMARY KEY, body text);
"""
FLOWS = """
from async_triggers.flows import FanOut, Flow, Write, row, source
FLOWS = [
    Flow(name="ttl_by_name", source="ttlks.items",
         steps=[Write("ttlks.items_by_name", name=source.name, id=source.id, body=source.body)]),
    Flow(name="ttl_feed", source="ttlks.items",
         steps=[FanOut("ttlks.followers", match={"user_id": source.owner})
                .write("ttlks.feed", user_id=row.follower_id, id=source.id, body=source.body)]),
    Flow(name="ttl_copy", source="ttlks.items", steps=[Write("ttlks.items_copy", id=source.id, body=source.body)]),
    Flow(name="ttl_copy2", source="ttlks.items_copy", steps=[Write("ttlks.items_copy2", id=source.id, body=source.body)]),
]
"""
FLOW_NAMES = ("ttl_by_name", "ttl_feed", "ttl_copy", "ttl_copy2")
FOLLOWERS = {7: [70, 71], 8: [80]}


@pytest.fixture(scope="module")
def flows(cluster_settings, tmp_path_factory):
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("ttl"), FLOWS)
    write_followers(cluster_settings, "ttlks", [(u, f) for u, fs in FOLLOWERS.items() for f in fs])


def read(session, cql: str, *args):
    """At ALL: what every replica agrees on (derived writes are made at the flows' consistency, ONE)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return list(session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.ALL), args))


def ttl_of(session, table: str, where: str, *args):
    """TTL(body) of the row, or 'absent' when there is no such row."""
    rows = read(session, f"SELECT TTL(body) AS t FROM ttlks.{table} WHERE {where}", *args)
    return rows[0].t if rows else "absent"


def by_name(session, item: int):
    return sorted(r.name for r in read(session, "SELECT name, id FROM ttlks.items_by_name") if r.id == item)


def derived_ttls(session, item: int, name: str | None, followers) -> dict:
    out = {"copy": ttl_of(session, "items_copy", "id = %s", item),
           "copy2": ttl_of(session, "items_copy2", "id = %s", item)}
    if name is not None:
        out["by_name"] = ttl_of(session, "items_by_name", "name = %s AND id = %s", name, item)
    for f in followers:
        out[f"feed {f}"] = ttl_of(session, "feed", "user_id = %s AND id = %s", f, item)
    return out


def test_should_give_derived_rows_the_remaining_ttl_and_expire_them_with_the_source(flows, session):
    session.execute(f"INSERT INTO ttlks.items (id, name, owner, body) VALUES (1, 'ann', 7, 'short') USING TTL {TTL}")
    session.execute("INSERT INTO ttlks.items (id, name, owner, body) VALUES (2, 'bob', 7, 'forever')")
    session.execute("INSERT INTO ttlks.items (id, name, owner, body) VALUES (3, 'cid', 8, 'kept')")
    # an update that adds a TTL to one column of an existing row: only the rows computed from that column get it
    session.execute(f"UPDATE ttlks.items USING TTL {TTL} SET name = 'dee' WHERE id = 3")
    written = time.monotonic()
    drain(session, *FLOW_NAMES)
    drained = time.monotonic() - written

    source_ttl = ttl_of(session, "items", "id = %s", 1)
    assert isinstance(source_ttl, int) and 0 < source_ttl <= TTL, f"the drain took {drained:.0f} s of the {TTL} s TTL"
    ttls = derived_ttls(session, 1, "ann", FOLLOWERS[7])
    assert all(isinstance(t, int) and 0 < t <= source_ttl for t in ttls.values()), (source_ttl, ttls)

    assert derived_ttls(session, 2, "bob", FOLLOWERS[7]) == {
        "copy": None, "copy2": None, "by_name": None, "feed 70": None, "feed 71": None}, "no TTL at the source, none derived"

    name_ttl = read(session, "SELECT TTL(name) AS t FROM ttlks.items WHERE id = 3")[0].t
    assert 0 < ttl_of(session, "items_by_name", "name = %s AND id = %s", "dee", 3) <= name_ttl
    assert by_name(session, 3) == ["dee"], "the old name's entry went, as without TTL"
    assert derived_ttls(session, 3, None, FOLLOWERS[8]) == {"copy": None, "copy2": None, "feed 80": None}, \
        "the feed and the copies do not read the name: its TTL is not theirs"

    deadline = written + TTL + 15
    while read(session, "SELECT id FROM ttlks.items WHERE id = 1") or read(session, "SELECT name FROM ttlks.items WHERE id = 3")[0].name:
        assert time.monotonic() < deadline, "the source rows did not expire"
        time.sleep(0.5)

    assert derived_ttls(session, 1, "ann", FOLLOWERS[7]) == {
        "copy": "absent", "copy2": "absent", "by_name": "absent", "feed 70": "absent", "feed 71": "absent"}
    assert by_name(session, 3) == [], "the name expired at the source, so did its index entry"
    assert by_name(session, 2) == ["bob"]
    assert derived_ttls(session, 3, None, FOLLOWERS[8]) == {"copy": None, "copy2": None, "feed 80": None}
    assert read(session, "SELECT body FROM ttlks.feed WHERE user_id = 80 AND id = 3")[0].body == "kept"
