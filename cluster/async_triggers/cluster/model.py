"""What the cluster functions return."""
from __future__ import annotations

import dataclasses
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class NodeStatus:
    name: str            # node1, node2...
    address: str         # 127.0.0.N: listen, RPC and CQL address
    state: str           # "up" (process alive) or "down"
    pid: int | None
    cql: bool            # the CQL port accepts connections
    native_port: int = 9042
    jmx_port: int = 7199
    path: Path | None = None   # the node's ccm directory (conf/, logs/, data0/...)
    metrics_url: str | None = None   # its Prometheus scrape URL, when the cluster has the JMX exporter

    @property
    def up(self) -> bool:
        return self.state == "up"


@dataclasses.dataclass(frozen=True)
class ClusterInfo:
    name: str
    contact_points: tuple[str, ...]
    nodes: tuple[NodeStatus, ...]
    path: Path | None = None          # the cluster's ccm directory
    install_dir: Path | None = None   # the Cassandra install the nodes run

    @property
    def replication_factor_hint(self) -> int:
        """The replication factor the project uses for its keyspaces: min(3, live nodes)."""
        return max(1, min(3, sum(1 for n in self.nodes if n.up)))

    def cqlsh_command(self, node: str | None = None) -> str:
        address = self.contact_points[0] if node is None else next(n.address for n in self.nodes if n.name == node)
        return f"cqlsh {address} 9042"
