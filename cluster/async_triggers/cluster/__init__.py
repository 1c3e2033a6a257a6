"""Cassandra installs and local ccm clusters.

    ensure_install(settings, progress) -> Path          the install dir (assembled from Maven, cached)
    up(settings, nodes, name, heap, progress) -> ClusterInfo
    down(settings, name, progress) -> bool
    start_node / stop_node / kill_node(settings, node, name, progress) -> NodeStatus
    pause_node / resume_node(settings, node, name)       SIGSTOP / SIGCONT a node's JVM
    network.cut(cluster, links) / network.heal()         partitions between local nodes (iptables, per-node cgroups)
    node_status(settings, name) -> [NodeStatus];  cluster_info(settings, name) -> ClusterInfo
    add_node(settings, name, progress) -> NodeStatus     bootstrap a new node into the ring
    decommission(settings, node, name, progress)        stream a node's data away, then remove it
    replace_node(settings, node, name, progress)        a dead node replaced by a new one (replace_address_first_boot)
    install_plugin(cluster, jar, progress) -> Path       copy the jar to the cluster dir, restart running nodes
    node_jvm_args(cluster_dir, address) -> [str]         what every node starts with (-javaagent:<plugin jar>, and
                                                         the Prometheus JMX exporter when the cluster has it)
    metrics_url(cluster_dir, address) -> str | None      a node's Prometheus scrape URL (http://<address>:7070/metrics)
    nodetool(settings, node, args, name) -> str
    prometheus.up / down(settings, name, progress)       a Prometheus scraping the nodes' exporters (prometheus.py)
    wait_for_cql(addresses, timeout)

Library code raises async_triggers.errors.ClusterError and reports progress through the callback it is given.
"""
from .ccm_driver import (cluster_info, commitlog_sync_of, cqlsh_command, load_cluster, metrics_url, node_status,
                         nodetool, nodetool_command, triggers_dir, triggers_dir_of)
from .lifecycle import down, install_plugin, up
from .membership import add_node, decommission
from .membership import replace as replace_node
from .node_process import (FAST_START_JVM_ARGS, kill_node, node_jvm_args, pause_node, plugin_path, resume_node,
                           start_node, stop_node, storage_endpoint)
from . import network
from .health import cql_query, port_open, process_alive, wait_for_cql, wait_for_peers
from .install import COMMITLOG_SYNC, LAPTOP_TUNING, ensure_install, validate_distribution
from .model import ClusterInfo, NodeStatus

__all__ = [
    "ClusterInfo", "NodeStatus", "FAST_START_JVM_ARGS", "LAPTOP_TUNING", "COMMITLOG_SYNC", "commitlog_sync_of",
    "ensure_install", "validate_distribution",
    "up", "down", "add_node", "decommission", "replace_node", "start_node", "stop_node", "kill_node",
    "pause_node", "resume_node", "storage_endpoint", "network", "node_status", "cluster_info", "load_cluster",
    "install_plugin", "plugin_path", "node_jvm_args", "metrics_url", "triggers_dir", "triggers_dir_of", "nodetool", "nodetool_command", "cqlsh_command",
    "wait_for_cql", "wait_for_peers", "cql_query", "port_open", "process_alive",
]
