"""A full queue on a real cluster: with the spill policy, a burst far larger than the queue loses nothing and
is executed once there is room (the Spill policy of AsterixDB's data feeds)."""
import json

import pytest

from helpers import create_schema, deploy_flow_text, drain, run_ctl, verify_ctl


FLOW = "ovf_copy"
SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS ovf WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS ovf.src (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS ovf.dst (id int PRIMARY KEY, v text);
"""
FLOW_FILE = f"""
from async_triggers.flows import Flow, Overflow, Queue, Write, source
FLOWS = [Flow(name={FLOW!r}, source="ovf.src", steps=[Write("ovf.dst", id=source.id, v=source.v)],
              queue=Queue(capacity=100, workers=1), overflow=Overflow(policy="spill"))]
"""


@pytest.fixture(scope="module")
def spill_flow(cluster_settings, tmp_path_factory):
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("ovf"), FLOW_FILE)


def test_should_spill_a_burst_of_10000_tasks_to_disk_and_lose_none(spill_flow, session, cluster_settings):
    from cassandra import OperationTimedOut, WriteTimeout
    from cassandra.concurrent import execute_concurrent_with_args
    insert = session.prepare("INSERT INTO ovf.src (id, v) VALUES (?, ?)")
    todo = list(range(10_000))
    for _ in range(5):   # as a client does, a write that timed out (on a busy 2-core machine) is sent again
        args = [(i, f"v{i}") for i in todo]
        results = execute_concurrent_with_args(session, insert, args, concurrency=200, raise_on_first_error=False)
        errors = [r for ok, r in results if not ok]
        assert all(isinstance(e, (WriteTimeout, OperationTimedOut)) for e in errors), errors[:3]
        todo = [a[0] for a, (ok, _) in zip(args, results) if not ok]
        if not todo:
            break
    assert not todo, f"{len(todo)} writes still timed out after 5 rounds"
    drain(session, FLOW, timeout=600)
    status = json.loads(run_ctl(cluster_settings, "trigger", "status", FLOW, "--nodes", "--json").stdout)
    assert sum(s.get("spilled", 0) for s in status) > 0, status
    assert sum(s.get("discarded", 0) for s in status) == 0
    verified = verify_ctl(cluster_settings, FLOW)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    [dst] = json.loads(verified.stdout.strip().splitlines()[-1])
    assert dst["expected"] == dst["present"] == 10_000 and dst["missing"] == 0
