"""A local cluster's membership changed as an operator changes a real one: a node bootstrapped into the ring, a node
decommissioned out of it, a dead node replaced by a new one that takes over its tokens (Cassandra's
``replace_address_first_boot``). Each waits until the ring has settled: every remaining node answers CQL and sees
the others up. The new nodes start as every node does (the cluster's plugin jar and metrics agent, its heap).
"""
from __future__ import annotations

import re

from async_triggers.config import Settings
from async_triggers.errors import ClusterError
from . import ccm_driver as ccm
from . import health, node_process
from .lifecycle import MAX_NODES
from .model import NodeStatus

Progress = ccm.Progress


def _seed_addresses(cluster) -> set[str]:
    return set(cluster.get_seeds())


def _remove(cluster, node, progress: Progress) -> None:
    """Remove a node from the cluster (stopped, its directory deleted); when it was the last seed, the first
    remaining node becomes one (a node whose seed list is empty cannot start)."""
    with ccm.running(f"removing {node.name} from cluster {cluster.name}", progress):
        cluster.remove(node)
        if not cluster.seeds and cluster.nodes:
            first = cluster.nodes[sorted(cluster.nodes, key=ccm.node_order)[0]]
            cluster.seeds.append(first)
            cluster._update_config()
            progress(f"{first.name} is now the cluster's seed")


def _ensure_live_seed(cluster, progress: Progress) -> None:
    """A new node learns the ring from its seeds: when none of them runs (a dead seed being replaced), the first
    running node becomes one."""
    if any(ccm.alive(n) for n in cluster.seeds if not isinstance(n, str)):
        return
    live = _live_others(cluster, None)
    if live:
        cluster.seeds.append(live[0])
        cluster._update_config()
        progress(f"{live[0].name} is now a seed (no seed of the cluster is running)")


def _free_slot(cluster) -> int:
    """The node number (node<i>, 127.0.0.<i>) after every one the cluster uses or uses as a seed (a node whose address
    is in the seed list does not bootstrap, and a replacement must); once those run out, the lowest number no node and
    no seed uses: the address of a node that left long enough ago (Cassandra keeps a decommissioned node's address
    as LEFT, a state a new node may join from, and forgets a replaced one's after its quarantine, a minute)."""
    taken = {int(m.group(1)) for n in cluster.nodes for m in [re.fullmatch(r"node(\d+)", n)] if m}
    taken |= {int(ccm.address_of(n).rsplit(".", 1)[1]) for n in cluster.nodes.values()}
    taken |= {int(a.rsplit(".", 1)[1]) for a in _seed_addresses(cluster) if a.startswith("127.0.0.")}
    slot = max(taken, default=0) + 1
    if slot <= MAX_NODES:
        return slot
    free = [i for i in range(1, MAX_NODES + 1) if i not in taken]
    if not free:
        raise ClusterError(f"cluster {cluster.name} has no room for another node (at most {MAX_NODES} addresses)")
    return free[0]


def _new_node(cluster, slot: int):
    """A node that bootstraps into the ring (not a seed, no initial token: Cassandra picks its share)."""
    address = f"127.0.0.{slot}"
    if health.port_open(address, ccm.CQL_PORT, timeout=0.5):
        raise ClusterError(f"{address}:{ccm.CQL_PORT} is already in use: is another cluster running?")
    node = cluster.create_node(name=f"node{slot}", auto_bootstrap=True, thrift_interface=None,
                               storage_interface=(address, 7000), jmx_port=str(7000 + slot * 100),
                               remote_debug_port="0", initial_token=None, binary_interface=(address, ccm.CQL_PORT),
                               environment_variables=dict(cluster._environment_variables))
    cluster.add(node, False)
    ccm.triggers_dir(node).mkdir(parents=True, exist_ok=True)
    return node


def _live_others(cluster, but) -> list:
    return [n for n in cluster.nodes.values() if n is not but and ccm.alive(n)]


@ccm.quiet
def add_node(settings: Settings, name: str | None = None, progress: Progress | None = None,
             timeout: float = 900.0) -> NodeStatus:
    """Bootstrap a new node into the running cluster; returns it once it serves and the others see it up."""
    progress = progress or ccm.noop
    cluster = ccm.require_cluster(settings, name)
    if not _live_others(cluster, None):
        raise ClusterError(f"cluster {cluster.name} has no running node to join: `ctl cluster up` first")
    with ccm.running(f"adding a node to cluster {cluster.name}", progress):
        _ensure_live_seed(cluster, progress)
        node = _new_node(cluster, _free_slot(cluster))
    progress(f"bootstrapping {node.name} ({ccm.address_of(node)}) into cluster {cluster.name}")
    try:
        node_process.start_nodes(cluster, [node], progress, timeout)
    except ClusterError:
        progress(f"{node.name} did not join: its log and data stay in {node.get_path()} "
                 f"(remove it with `ctl cluster decommission {node.name}` once understood)")
        raise
    return ccm.status_of(node)


@ccm.quiet
def decommission(settings: Settings, node: str, name: str | None = None, progress: Progress | None = None,
                 timeout: float = 900.0, force: bool = False) -> str:
    """Stream a running node's data to the others (``nodetool decommission``), stop it and remove it from the
    cluster. Returns the node's name. ``force``: also when a keyspace's replication factor is larger than the nodes
    left (Cassandra refuses otherwise; a small local cluster's ``system_distributed`` has RF 3)."""
    progress = progress or ccm.noop
    cluster = ccm.require_cluster(settings, name)
    target = ccm.find_node(cluster, node)
    if not ccm.alive(target):
        raise ClusterError(f"{target.name} is not running: a decommission streams its data away from it "
                           f"(a dead node is replaced instead: `ctl cluster replace {target.name}`)")
    if not _live_others(cluster, target):
        raise ClusterError(f"{target.name} is the last running node of cluster {cluster.name}")
    progress(f"decommissioning {target.name} ({ccm.address_of(target)}): streaming its ranges to the others")
    result = ccm._run_nodetool(target, ["decommission"] + (["--force"] if force else []), timeout=timeout)
    if result.returncode != 0:
        raise ClusterError(f"nodetool decommission on {target.name} failed (exit {result.returncode}):\n"
                           f"{result.stdout}{result.stderr}")
    progress(f"{target.name} left the ring; stopping it and removing it from cluster {cluster.name}")
    _remove(cluster, target, progress)
    return target.name


@ccm.quiet
def replace(settings: Settings, node: str, name: str | None = None, progress: Progress | None = None,
            timeout: float = 900.0) -> NodeStatus:
    """Replace a dead node: a new node on a free address starts with ``-Dcassandra.replace_address_first_boot``
    of the dead one, streams its ranges from the other replicas and takes over its tokens; the dead node is then
    removed from the cluster (its directory with it). Returns the new node."""
    progress = progress or ccm.noop
    cluster = ccm.require_cluster(settings, name)
    dead = ccm.find_node(cluster, node)
    ccm.refresh(dead)
    if ccm.alive(dead):
        raise ClusterError(f"{dead.name} is running: a replacement takes the place of a dead node "
                           f"(stop it first with `ctl cluster kill {dead.name}`, or decommission it)")
    if not _live_others(cluster, dead):
        raise ClusterError(f"cluster {cluster.name} has no running node to stream from")
    old_address = ccm.address_of(dead)
    with ccm.running(f"adding the replacement of {dead.name}", progress):
        _ensure_live_seed(cluster, progress)
        new = _new_node(cluster, _free_slot(cluster))
    progress(f"replacing {dead.name} ({old_address}) by {new.name} ({ccm.address_of(new)})")
    node_process.start_nodes(cluster, [new], progress, timeout,
                             extra_jvm_args={new.name: [f"-Dcassandra.replace_address_first_boot={old_address}"]})
    _remove(cluster, dead, progress)
    return ccm.status_of(new)
