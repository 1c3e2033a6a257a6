"""Unit tests run without a cluster: one that reaches for a session would talk to whatever answers on 127.0.0.1
(a developer's cluster, a campaign's), so the driver's connect to a local node's address fails here, naming the
test's mistake. Tests of unreachable clusters use 127.0.0.9 or a host DNS does not know, where no node runs."""
import pytest

LOCAL_NODES = {f"127.0.0.{i}" for i in range(1, 9)}


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
    from cassandra.cluster import Cluster
    connect = Cluster.connect

    def guarded(self, *args, **kwargs):
        points = {str(p).rsplit(":", 1)[0] if str(p).count(":") == 1 else str(p) for p in self.contact_points}
        if points & LOCAL_NODES:
            raise AssertionError(f"a unit test connected to {sorted(points)}, where a node of a local cluster may "
                                 "run: replace the command's connect (or acting_on)")
        return connect(self, *args, **kwargs)

    monkeypatch.setattr(Cluster, "connect", guarded)
