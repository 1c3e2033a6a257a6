"""Unit tests of the cluster library's argument checks (no cluster started)."""
from __future__ import annotations

from pathlib import Path

import pytest

from pycontrol import cluster, config
from pycontrol.cluster.model import ClusterInfo, NodeStatus
from pycontrol.errors import ClusterError


def test_up_without_plugin_jar_says_how_to_build_it(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match=r"make plugin.*mvn -f trigger-plugin/pom.xml package"):
        cluster.up(settings, nodes=1, name="x", plugin_jar=tmp_path / "missing.jar")
    assert not (tmp_path / "ccm").exists(), "nothing is created before the check"


def test_up_rejects_a_bad_heap(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match="invalid heap size"):
        cluster.up(settings, nodes=1, name="x", heap="lots", require_plugin=False)


def test_unknown_cluster_is_a_clear_error(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match="no cluster 'nope'.*ctl cluster up"):
        cluster.node_status(settings, "nope")
    assert cluster.down(settings, "nope") is False


def test_cluster_info_helpers(tmp_path: Path):
    nodes = (NodeStatus("node1", "127.0.0.1", "up", 1, True, path=tmp_path / "node1"),
             NodeStatus("node2", "127.0.0.2", "down", None, False, path=tmp_path / "node2"))
    info = ClusterInfo("c", ("127.0.0.1", "127.0.0.2"), nodes)
    assert info.replication_factor_hint == 1
    assert info.cqlsh_command("node2") == "cqlsh 127.0.0.2 9042"
    assert cluster.triggers_dir_of(nodes[0]) == tmp_path / "node1" / "conf" / "triggers"


def test_wait_for_cql_times_out_with_the_addresses():
    with pytest.raises(ClusterError, match=r"127\.0\.0\.99"):
        cluster.wait_for_cql(["127.0.0.99"], timeout=1, port=1)
