"""Deploying against a live cluster: each validation error is reported with its message and a non-zero exit,
and the cluster is left exactly as it was."""
import textwrap

import pytest

from helpers import cluster_snapshot, create_schema, run_ctl


SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS val WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS val.a (id int PRIMARY KEY, v text, n bigint);
CREATE TABLE IF NOT EXISTS val.b (id int PRIMARY KEY, v text, n bigint);
"""

HEADER = "from async_triggers.flows import Flow, Write, source\n"

CASES = {
    "unknown_keyspace": ("FLOWS = [Flow(name='f1', source='nokeyspace.a', steps=[Write('val.b', id=source.id)])]",
                         "flow 'f1': keyspace 'nokeyspace' of source table 'nokeyspace.a' does not exist"),
    "unknown_table": ("FLOWS = [Flow(name='f2', source='val.a', steps=[Write('val.nosuch', id=source.id)])]",
                      "flow 'f2': target table 'val.nosuch' does not exist (tables in 'val': a, b)"),
    "unknown_column": ("FLOWS = [Flow(name='f3', source='val.a', steps=[Write('val.b', id=source.id, w=source.v)])]",
                       "flow 'f3': column 'w' does not exist in target table 'val.b' (columns: id, n, v)"),
    "type_mismatch": ("FLOWS = [Flow(name='f4', source='val.a', steps=[Write('val.b', id=source.id, n=source.v)])]",
                      "flow 'f4': type mismatch for column 'n' of 'val.b': it is bigint, but 'source.v' is text"),
    "system_keyspace": ("FLOWS = [Flow(name='f5', source='val.a', "
                        "steps=[Write('system_auth.roles', role=source.v)])]",
                        "flow 'f5': target table 'system_auth.roles' is in a system keyspace; "
                        "flows may not read from or write into system keyspaces"),
    "cycle": ("FLOWS = [Flow(name='f6', source='val.a', steps=[Write('val.b', id=source.id)]),\n"
              "         Flow(name='f7', source='val.b', steps=[Write('val.a', id=source.id)])]",
              "flow 'f6': flows form a cycle: val.a -> val.b -> val.a (flows: f6, f7)"),
}


@pytest.fixture(scope="module")
def val_schema(cluster_settings):
    create_schema(cluster_settings, SCHEMA)


@pytest.mark.parametrize("case", sorted(CASES))
def test_should_reject_invalid_flow_and_leave_cluster_unchanged(case, val_schema, session, cluster_settings,
                                                                tmp_path):
    body, message = CASES[case]
    flow_file = tmp_path / f"{case}.py"
    flow_file.write_text(HEADER + textwrap.dedent(body) + "\n")
    before = cluster_snapshot(session)
    result = run_ctl(cluster_settings, "trigger", "deploy", str(flow_file))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == f"error: {message}"
    assert cluster_snapshot(session) == before


def test_should_report_every_node_running_one_plugin_build_on_plugin_check(cluster, cluster_settings):
    import json
    from async_triggers.bundle import jar_version, sha256
    result = run_ctl(cluster_settings, "plugin", "check", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    jar = cluster_settings.plugin_jar
    assert sorted(n["address"] for n in report["nodes"]) == sorted(cluster.contact_points)
    assert {(n["state"], n["version"], n["jar_sha256"]) for n in report["nodes"]} == {("loaded", jar_version(jar), sha256(jar))}
    assert report["same_build"] is True and report["problems"] == []


def test_should_create_our_keyspace_with_network_topology_strategy_on_deploy(val_schema, session, cluster_settings, tmp_path):
    from async_triggers.keyspace import KEYSPACE
    flow_file = tmp_path / "copy.py"
    flow_file.write_text(HEADER + "FLOWS = [Flow(name='val_copy', source='val.a', steps=[Write('val.b', id=source.id)])]\n")
    result = run_ctl(cluster_settings, "trigger", "deploy", str(flow_file))
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        session.cluster.refresh_keyspace_metadata(KEYSPACE)
        strategy = session.cluster.metadata.keyspaces[KEYSPACE].replication_strategy
        # whichever deploy of the session created it: the per-DC mirror of a source keyspace (all are RF >= 2 here)
        assert type(strategy).__name__ == "NetworkTopologyStrategy"
        assert set(strategy.dc_replication_factors) == {"datacenter1"}
        assert strategy.dc_replication_factors["datacenter1"] >= 2
    finally:
        assert run_ctl(cluster_settings, "trigger", "drop", "val_copy", "--drain").returncode == 0
