"""Shared fixtures. Integration tests (marker ``cluster``) run against a real Cassandra 5.0 cluster under ccm,
started once per session with the plugin jar installed, and torn down at the end."""
from __future__ import annotations

import atexit
import functools
import os
from pathlib import Path

import pytest

from async_triggers import config

ROOT = Path(__file__).resolve().parent.parent
TEST_CLUSTER = os.environ.get("ASYNC_TRIGGERS_TEST_CLUSTER", "attest")


def _progress(msg: str) -> None:
    print(f"[cluster] {msg}", flush=True)


OWN_CLUSTERS_FIRST = {"test_cluster_integration.py", "test_own_cluster.py", "test_membership.py"}
# A test's tier is its folder: tests/unit (no cluster, no Spark), tests/cluster (a real Cassandra cluster),
# tests/spark (a local Spark), tests/bench (the benchmarks' parts; a private RabbitMQ node). The folder sets the marker.
TIERS = {"unit": "unit", "cluster": "cluster", "spark": "spark", "bench": "bench"}


LOCAL_NODES = {f"127.0.0.{i}" for i in range(1, 9)}


@pytest.fixture(autouse=True)
def _unit_tier_reaches_no_cluster(request, monkeypatch):
    """Unit tests run without a cluster: one that reached for a session would talk to whatever answers on 127.0.0.1
    (a developer's cluster, a campaign's), so there the driver's connect to a local node's address fails, naming the
    test's mistake. Tests of unreachable clusters use 127.0.0.9 or a host DNS does not know, where no node runs."""
    if TIERS.get(request.node.path.parent.name) != "unit":
        return
    from cassandra.cluster import Cluster
    connect = Cluster.connect

    def guarded(self, *args, **kwargs):
        points = {str(p).rsplit(":", 1)[0] if str(p).count(":") == 1 else str(p) for p in self.contact_points}
        if points & LOCAL_NODES:
            raise AssertionError(f"a unit test connected to {sorted(points)}, where a node of a local cluster may "
                                 "run: replace the command's connect (or acting_on)")
        return connect(self, *args, **kwargs)

    monkeypatch.setattr(Cluster, "connect", guarded)


def pytest_collection_modifyitems(session, config, items):
    """Every test gets its folder's marker, and the cluster tests listed in tests/extended.py the marker
    ``extended``. Modules that make and remove a cluster of their own on 127.0.0.x run
    before the session's cluster starts (it holds those addresses until the end, and such a module would skip)."""
    from extended import is_extended
    for item in items:
        tier = TIERS.get(item.path.parent.name)
        if tier:
            item.add_marker(tier)
        if tier == "cluster" and is_extended(item.path.name, item.originalname):
            item.add_marker("extended")
    first = [item for item in items if item.path.name in OWN_CLUSTERS_FIRST]
    if first:
        items[:] = first + [item for item in items if item.path.name not in OWN_CLUSTERS_FIRST]


@pytest.fixture(scope="session")
def settings():
    return config.load(cluster_name=TEST_CLUSTER)


@pytest.fixture(scope="session")
def cluster(settings):
    """A 3-node cluster (RF 2 keyspaces, commit log synced before each acknowledgement) for the session; reused if it
    is already up, removed at the end."""
    from async_triggers import cluster as cluster_mod
    if not settings.plugin_jar.is_file():
        pytest.fail(f"{settings.plugin_jar} is missing: run 'make plugin' first")
    # batch commit log: the chaos test kills every node, and a periodic commit log forgets acknowledged writes then
    cluster_mod.network.heal()   # no partition rule of an interrupted campaign reaches this session's cluster
    info = cluster_mod.up(settings, nodes=3, name=TEST_CLUSTER, progress=_progress, commitlog_sync="batch")
    yield info
    from verifier import close_shared
    close_shared()
    cluster_mod.network.heal()
    if not os.environ.get("ASYNC_TRIGGERS_KEEP_CLUSTER"):
        cluster_mod.down(settings, name=TEST_CLUSTER, progress=_progress)


@pytest.fixture(scope="session")
def cluster_settings(settings, cluster):
    from verifier import shared
    s = config.load(cluster_name=TEST_CLUSTER, contact_points=tuple(cluster.contact_points))
    shared(s)   # the session's verifier starts its Spark now, beside the first tests
    return s


@pytest.fixture()
def session(cluster_settings):
    from async_triggers.cql import connect
    with connect(cluster_settings) as s:
        yield s


@functools.lru_cache(maxsize=None)
def _spark_session():
    from async_triggers.spark_jobs.session import build_session
    spark = build_session(master="local[2]", app_name="async-triggers-tests", jars=(),
                          conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    atexit.register(spark.stop)
    return spark


@pytest.fixture(scope="session")
def spark():
    """One local Spark (without the connector: the transforms under test need no Cassandra) per test run."""
    return _spark_session()
