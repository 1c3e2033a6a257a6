"""A flow deployed onto a table that an application already writes with prepared statements (the usual case: the
benchmark's applications and every real driver prepare their INSERTs once). Cassandra keeps the table metadata of
a prepared statement as it was when prepared, triggers included; the tasks are captured by the replicas as they
apply the writes, whatever the coordinator's statement knew, so those writes are propagated from the deploy on."""
from __future__ import annotations

import time


from helpers import create_schema, deploy_flow_text, run_ctl
from async_triggers import deploy


SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS prep WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS prep.src (id int PRIMARY KEY, v text) WITH gc_grace_seconds = 3600;
CREATE TABLE IF NOT EXISTS prep.dst (id int PRIMARY KEY, v text);
"""
FLOW = """
from async_triggers.flows import Flow, Write, source
FLOWS = [Flow(name="prep_copy", source="prep.src", steps=[Write("prep.dst", id=source.id, v=source.v)])]
"""


def _rows(session, table):
    return {r.id: r.v for r in session.execute(f"SELECT id, v FROM prep.{table}")}


def _wait_for(session, ids, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = _rows(session, "dst")
        if set(ids) <= set(got):
            return got
        time.sleep(0.5)
    return _rows(session, "dst")


def test_should_capture_writes_prepared_before_the_deploy_once_it_is_deployed(cluster_settings, session, tmp_path):
    create_schema(cluster_settings, SCHEMA)
    for t in ("src", "dst"):
        session.execute(f"TRUNCATE prep.{t}")
    insert = session.prepare("INSERT INTO prep.src (id, v) VALUES (?, ?)")   # prepared before the trigger exists
    session.execute(insert, (0, "before"))
    try:
        deploy_flow_text(cluster_settings, tmp_path, FLOW)
        for i in range(1, 21):
            session.execute(insert, (i, f"v{i}"))   # the same prepared statement, re-prepared by the driver
        got = _wait_for(session, range(1, 21))
        assert {i: got.get(i) for i in range(1, 21)} == {i: f"v{i}" for i in range(1, 21)}
        assert 0 not in got, "a write from before the deploy was propagated"
    finally:
        result = run_ctl(cluster_settings, "trigger", "drop", "prep_copy", "--drain")
        assert result.returncode == 0, result.stderr
    session.execute(insert, (99, "after drop"))
    time.sleep(3)
    assert 99 not in _rows(session, "dst")
    assert "prep_copy" not in deploy.read_deployed(session)
