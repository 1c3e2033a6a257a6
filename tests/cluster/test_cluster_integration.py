"""A real 2-node Cassandra cluster under ccm: up, CQL on both nodes, nodetool, plugin install (a rolling restart),
kill -9 and restart of a node (with the plugin on its class path), down. Uses its own cluster name; the plugin jar
is not needed (a stand-in jar that is a no-op java agent is used)."""
from __future__ import annotations

import subprocess
import time
import zipfile
from pathlib import Path

import psutil
import pytest

from async_triggers import cluster, config

NAME = "atc-ctest"
pytestmark = pytest.mark.timeout(900)


def _progress(msg: str) -> None:
    print(f"[cluster] {msg}", flush=True)


def _un_nodes(settings, node: str) -> list[str]:
    out = cluster.nodetool(settings, node, ["status"], name=NAME)
    return [line.split()[1] for line in out.splitlines() if line.startswith("UN ")]


def _wait_un(settings, node: str, count: int, timeout: float = 90.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        up = _un_nodes(settings, node)
        if len(up) == count or time.monotonic() > deadline:
            return up
        time.sleep(2)


def stand_in_plugin(folder: Path) -> Path:
    """A real java agent that does nothing, standing in for the plugin jar: a node must still start with it."""
    src = folder / "NoopAgent.java"
    src.write_text("public class NoopAgent { public static void premain(String args) { } }\n")
    subprocess.run(["javac", "--release", "11", "-d", str(folder), str(src)], check=True)
    jar = folder / "async-triggers-plugin.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nPremain-Class: NoopAgent\n")
        z.write(folder / "NoopAgent.class", "NoopAgent.class")
    return jar


@pytest.fixture(scope="module")
def settings():
    s = config.load(cluster_name=NAME)
    busy = [a for a in ("127.0.0.1", "127.0.0.2") if cluster.port_open(a, 9042, timeout=0.5)]
    if busy and cluster.load_cluster(s, NAME) is None:
        pytest.skip(f"another Cassandra is listening on {', '.join(busy)}:9042")
    return s


@pytest.fixture(scope="module")
def two_nodes(settings):
    info = cluster.up(settings, nodes=2, name=NAME, require_plugin=False, progress=_progress)
    try:
        yield info
    finally:
        cluster.down(settings, name=NAME, progress=_progress)
        assert cluster.load_cluster(settings, NAME) is None


def test_should_start_load_the_plugin_kill_and_restart_nodes_of_a_two_node_cluster(settings, two_nodes, tmp_path: Path):
    assert two_nodes.contact_points == ("127.0.0.1", "127.0.0.2")
    assert [n.state for n in two_nodes.nodes] == ["up", "up"]

    # CQL answers on each node, queried alone
    for address in two_nodes.contact_points:
        assert cluster.cql_query(address, "SELECT release_version FROM system.local") == [("5.0.9",)]

    # nodetool: both nodes Up/Normal
    assert sorted(_wait_un(settings, "node1", 2)) == ["127.0.0.1", "127.0.0.2"]

    # the plugin jar lands once in the cluster's dir, and the running nodes restart one at a time to load it
    jar = stand_in_plugin(tmp_path)
    before = {n.name: n.pid for n in cluster.node_status(settings, NAME)}
    copied = cluster.install_plugin(two_nodes, jar, _progress)
    assert copied == two_nodes.path / "async-triggers-plugin.jar"
    after = cluster.node_status(settings, NAME)
    assert all(n.state == "up" and n.pid != before[n.name] for n in after), (before, after)
    for node in after:
        assert f"-javaagent:{copied}" in psutil.Process(node.pid).cmdline()

    # kill -9 a node: it is down, then it comes back and answers CQL
    killed = cluster.kill_node(settings, "node2", name=NAME, progress=_progress)
    assert killed.state == "down" and killed.pid is None
    assert not cluster.port_open("127.0.0.2", 9042)
    statuses = {n.name: n.state for n in cluster.node_status(settings, NAME)}
    assert statuses == {"node1": "up", "node2": "down"}

    restarted = cluster.start_node(settings, "node2", name=NAME, progress=_progress)
    assert restarted.state == "up" and restarted.cql
    assert f"-javaagent:{two_nodes.path / 'async-triggers-plugin.jar'}" in psutil.Process(restarted.pid).cmdline()
    assert cluster.cql_query("127.0.0.2", "SELECT release_version FROM system.local") == [("5.0.9",)]
    assert sorted(_wait_un(settings, "node1", 2)) == ["127.0.0.1", "127.0.0.2"]
