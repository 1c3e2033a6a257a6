"""Unit tests of the cluster library's argument checks (no cluster started)."""
from __future__ import annotations

from pathlib import Path

import pytest

from async_triggers import cluster, config
from async_triggers.cluster.model import ClusterInfo, NodeStatus
from async_triggers.errors import ClusterError


def test_should_say_how_to_build_the_plugin_jar_when_up_misses_it(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match=r"make plugin.*mvn -f trigger-plugin/pom.xml package"):
        cluster.up(settings, nodes=1, name="x", plugin_jar=tmp_path / "missing.jar")
    assert not (tmp_path / "ccm").exists(), "nothing is created before the check"


def test_should_reject_a_bad_heap_size_on_up(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match="invalid heap size"):
        cluster.up(settings, nodes=1, name="x", heap="lots", require_plugin=False)


def test_should_reject_an_unknown_commitlog_sync_before_creating_anything(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match="--commitlog-sync must be one of periodic, batch, not 'fast'"):
        cluster.up(settings, nodes=1, name="x", commitlog_sync="fast", require_plugin=False)
    assert not (tmp_path / "ccm").exists(), "nothing is created before the check"


def test_should_give_each_commitlog_sync_mode_the_period_cassandra_5_accepts():
    # DatabaseDescriptor refuses batch with a commitlog_sync_period other than 0, and periodic without one
    assert cluster.COMMITLOG_SYNC["batch"] == {"commitlog_sync": "batch", "commitlog_sync_period": "0ms"}
    assert cluster.COMMITLOG_SYNC["periodic"]["commitlog_sync_period"] == "10000ms"


def test_should_give_a_clear_error_for_an_unknown_cluster(tmp_path: Path):
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match="no cluster 'nope'.*ctl cluster up"):
        cluster.node_status(settings, "nope")
    assert cluster.down(settings, "nope") is False


def test_should_derive_replication_hint_cqlsh_command_and_triggers_dir_from_cluster_info(tmp_path: Path):
    nodes = (NodeStatus("node1", "127.0.0.1", "up", 1, True, path=tmp_path / "node1"),
             NodeStatus("node2", "127.0.0.2", "down", None, False, path=tmp_path / "node2"))
    info = ClusterInfo("c", ("127.0.0.1", "127.0.0.2"), nodes)
    assert info.replication_factor_hint == 1
    assert info.cqlsh_command("node2") == "cqlsh 127.0.0.2 9042"
    assert cluster.triggers_dir_of(nodes[0]) == tmp_path / "node1" / "conf" / "triggers"


def test_should_name_the_addresses_when_waiting_for_cql_times_out():
    with pytest.raises(ClusterError, match=r"127\.0\.0\.99"):
        cluster.wait_for_cql(["127.0.0.99"], timeout=1, port=1)


def test_should_start_nodes_with_the_plugin_agent_once_the_cluster_has_the_jar(tmp_path: Path):
    assert cluster.node_jvm_args(tmp_path) == list(cluster.FAST_START_JVM_ARGS)
    (tmp_path / "async-triggers-plugin.jar").write_bytes(b"PK")
    assert cluster.node_jvm_args(tmp_path) == [*cluster.FAST_START_JVM_ARGS,
                                               f"-javaagent:{tmp_path}/async-triggers-plugin.jar"]


def test_should_start_nodes_with_the_metrics_exporter_on_their_own_address_once_present(tmp_path: Path):
    (tmp_path / "async-triggers-plugin.jar").write_bytes(b"PK")
    assert cluster.node_jvm_args(tmp_path, "127.0.0.2") == [*cluster.FAST_START_JVM_ARGS,
                                                            f"-javaagent:{tmp_path}/async-triggers-plugin.jar"]
    assert cluster.metrics_url(tmp_path, "127.0.0.2") is None
    (tmp_path / "jmx_prometheus_javaagent.jar").write_bytes(b"PK")
    (tmp_path / "prometheus-jmx.yaml").write_text("rules: []\n")
    assert cluster.node_jvm_args(tmp_path, "127.0.0.2")[-1] == (
        f"-javaagent:{tmp_path}/jmx_prometheus_javaagent.jar=127.0.0.2:7070:{tmp_path}/prometheus-jmx.yaml")
    assert cluster.metrics_url(tmp_path, "127.0.0.2") == "http://127.0.0.2:7070/metrics"


class _FakeNode:
    """What the driver uses of a ccm node: a stopped node whose start is recorded."""

    def __init__(self, path: Path, name: str, address: str):
        self.name, self.path, self.pid = name, path / name, None
        self.network_interfaces = {"binary": (address, 9042)}
        self.jvm_args: list[list[str]] = []

    def get_conf_dir(self) -> str:
        return str(self.path / "conf")

    def mark_log(self) -> int:
        return 0

    def start(self, jvm_args, **_):
        self.jvm_args.append(list(jvm_args))
        self.pid = 4242


class _FakeCluster:
    def __init__(self, path: Path):
        self.name, self.path = "fake", path
        self.nodes = {"node1": _FakeNode(path, "node1", "127.0.0.1")}

    def get_path(self) -> str:
        return str(self.path)


def test_should_copy_the_plugin_jar_once_per_cluster_and_restart_running_nodes_with_it(tmp_path: Path, monkeypatch):
    from async_triggers.cluster import ccm_driver, health, node_process
    monkeypatch.setattr(ccm_driver, "alive", lambda node: node.pid is not None)
    monkeypatch.setattr(health, "port_open", lambda *a, **kw: False)
    monkeypatch.setattr(health, "wait_for_cql", lambda *a, **kw: None)
    stopped = []

    def stop(node, sig, timeout):
        stopped.append((node.name, sig))
        node.pid = None
        return True

    monkeypatch.setattr(node_process, "signal_and_wait", stop)
    build = tmp_path / "target"
    build.mkdir()
    (build / "async-triggers-plugin.jar").write_bytes(b"plugin")
    fake = _FakeCluster(tmp_path / "ccm" / "fake")
    fake.path.mkdir(parents=True)
    fake.nodes["node1"].pid = 1234   # running: it restarts to load the jar

    copied = cluster.install_plugin(fake, build / "async-triggers-plugin.jar")
    assert copied == fake.path / "async-triggers-plugin.jar"
    assert copied.read_bytes() == b"plugin"
    assert stopped == [("node1", node_process.signal.SIGTERM)]
    assert fake.nodes["node1"].jvm_args == [[*cluster.FAST_START_JVM_ARGS, f"-javaagent:{fake.path}/async-triggers-plugin.jar"]]


def test_should_give_a_clear_error_when_installing_a_missing_plugin_jar(tmp_path: Path):
    with pytest.raises(ClusterError, match=r"the trigger plugin jar .*missing\.jar does not exist: build it "
                                           r"first with `make plugin`"):
        cluster.install_plugin(_FakeCluster(tmp_path / "c"), tmp_path / "missing.jar")
    assert not (tmp_path / "c").exists(), "nothing is copied before the check"


def test_should_copy_the_metrics_exporter_beside_the_plugin_and_restart_nodes_serving_metrics(
        tmp_path: Path, monkeypatch):
    from async_triggers.cluster import ccm_driver, health, node_process
    monkeypatch.setattr(ccm_driver, "alive", lambda node: node.pid is not None)
    monkeypatch.setattr(health, "port_open", lambda *a, **kw: False)
    monkeypatch.setattr(health, "wait_for_cql", lambda *a, **kw: None)
    monkeypatch.setattr(node_process, "signal_and_wait", lambda node, sig, timeout: setattr(node, "pid", None) or True)
    build = tmp_path / "target"
    (build / "dist-lib").mkdir(parents=True)
    (build / "async-triggers-plugin.jar").write_bytes(b"plugin")
    (build / "dist-lib" / "jmx_prometheus_javaagent.jar").write_bytes(b"agent")
    fake = _FakeCluster(tmp_path / "ccm" / "fake")
    fake.path.mkdir(parents=True)
    fake.nodes["node1"].pid = 1234

    cluster.install_plugin(fake, build / "async-triggers-plugin.jar")

    assert (fake.path / "jmx_prometheus_javaagent.jar").read_bytes() == b"agent"
    config = (fake.path / "prometheus-jmx.yaml").read_text()
    assert config == (node_process.REPO_ROOT / "trigger-plugin/dist/metrics/prometheus-jmx.yaml").read_text()
    assert fake.nodes["node1"].jvm_args[-1][-1] == (
        f"-javaagent:{fake.path}/jmx_prometheus_javaagent.jar=127.0.0.1:7070:{fake.path}/prometheus-jmx.yaml")


def test_should_refuse_down_of_an_unknown_cluster_unless_missing_ok(tmp_path: Path):
    import json
    import subprocess
    import sys
    env = {"ASYNC_TRIGGERS_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def down(*args):
        return subprocess.run([sys.executable, "-m", "async_triggers", "cluster", "down", "--name", "nope", *args],
                              capture_output=True, text=True, env=env, timeout=120)

    refused = down()
    assert refused.returncode == 2 and "no cluster named 'nope'" in refused.stderr, refused.stderr
    fine = down("--missing-ok", "--json")
    assert fine.returncode == 0 and json.loads(fine.stdout) == {"cluster": "nope", "removed": False}, fine.stderr
