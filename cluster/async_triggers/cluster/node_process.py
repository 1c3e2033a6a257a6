"""Node processes of a ccm cluster: what a node starts with (the fast-start JVM properties, the plugin as a
``-javaagent:``), starting nodes and waiting until they answer CQL and see each other up, stopping and killing a
node's JVM with signals.

What ccm does not do well enough here, we do ourselves:
- waiting: after a start we poll every node over CQL (health.wait_for_cql) and watch the other nodes' logs
  for "<address> ... now UP", instead of trusting ccm's log-watching start;
- stopping and killing: signals sent to the pid, then waiting until the process is really gone (also when
  it lingers as a zombie, where PID 1 does not reap orphans), then ccm's node state set to DOWN;
- root: ccm passes `-R` to bin/cassandra only with start(allow_root=True), which we set when euid is 0.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from async_triggers.config import METRICS_EXPORTER_CONFIG, METRICS_EXPORTER_JAR, METRICS_PORT, PLUGIN_JAR, REPO_ROOT, Settings
from .ccm_driver import metrics_exporter_path, metrics_url
from async_triggers.errors import ClusterError
from . import ccm_driver as ccm, health, network
from .ccm_driver import Progress
from .model import NodeStatus

# JVM system properties for fast local starts (passed at every node start, whatever the install dir)
FAST_START_JVM_ARGS = (
    "-Dcassandra.ring_delay_ms=5000",
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    # not 0: until every node is up, the role manager's setup fails and reschedules itself after this delay, and
    # at 0 it logs two lines per attempt in a tight loop (20,000 lines/s seen), rotating system.log within seconds
    "-Dcassandra.superuser_setup_delay_ms=1000",
)


def plugin_path(cluster_dir: Path) -> Path:
    """The cluster's copy of the plugin jar: one per cluster, in its ccm directory beside the nodes."""
    return Path(cluster_dir) / PLUGIN_JAR


def metrics_exporter_sources(plugin_jar: Path) -> tuple[Path, Path]:
    """The Prometheus JMX exporter agent as Maven copied it beside the built plugin, and its config in the repo."""
    return (Path(plugin_jar).parent / "dist-lib" / METRICS_EXPORTER_JAR,
            REPO_ROOT / "trigger-plugin" / "dist" / "metrics" / METRICS_EXPORTER_CONFIG)


def node_jvm_args(cluster_dir: Path, address: str | None = None) -> list[str]:
    """The JVM arguments of every node start: the fast-start properties and, once the cluster has the plugin,
    ``-javaagent:`` with its jar, which puts the plugin on the node's class path (where Cassandra loads the capture
    index and the trigger from) without touching the shared install dir's lib/. Once the cluster also has the
    Prometheus JMX exporter, the node at ``address`` serves its metrics on ``address:METRICS_PORT``."""
    args = list(FAST_START_JVM_ARGS)
    plugin = plugin_path(cluster_dir)
    if plugin.is_file():
        args.append(f"-javaagent:{plugin}")
    if address is not None and metrics_url(cluster_dir, address) is not None:
        jar, config = metrics_exporter_path(cluster_dir)
        args.append(f"-javaagent:{jar}={address}:{METRICS_PORT}:{config}")
    return args


def start_nodes(cluster, to_start: list, progress: Progress, timeout: float,
                extra_jvm_args: dict[str, list[str]] | None = None) -> None:
    """Start the given nodes that are down (concurrently), then wait for CQL on all of them and for every pair
    of live nodes to have seen each other come up. ``extra_jvm_args``: more JVM arguments by node name (a
    replacement's ``-Dcassandra.replace_address_first_boot``)."""
    for node in cluster.nodes.values():
        ccm.refresh(node)
    starting = [n for n in to_start if not ccm.alive(n)]
    if not starting:
        progress("all nodes already running")
    for node in starting:
        address = ccm.address_of(node)
        if health.port_open(address, ccm.CQL_PORT, timeout=0.5):
            raise ClusterError(f"{address}:{ccm.CQL_PORT} is already in use, so {node.name} of cluster {cluster.name} "
                               "cannot start: is another cluster running? (`ctl cluster status --name NAME`, "
                               "`ctl cluster down --name NAME`)")
    live_before = [n for n in cluster.nodes.values() if ccm.alive(n)]
    marks = {n.name: n.mark_log() for n in cluster.nodes.values()}
    allow_root = hasattr(os, "geteuid") and os.geteuid() == 0
    for node in starting:
        progress(f"starting {node.name} ({ccm.address_of(node)})")
        with ccm.running(f"starting {node.name} of cluster {cluster.name}", progress):
            node.start(wait_other_notice=False, wait_for_binary_proto=False, allow_root=allow_root,
                       jvm_args=node_jvm_args(Path(cluster.get_path()), ccm.address_of(node))
                       + list((extra_jvm_args or {}).get(node.name, [])))
        if not ccm.alive(node):
            raise ClusterError(f"{node.name} exited right after start\n{ccm.log_tail(node)}")
        # its own cgroup, seconds before it opens a connection to another node: what a partition's rules name
        network.confine(cluster.name, node.name, node.pid)

    by_address = {ccm.address_of(n): n for n in cluster.nodes.values()}

    def dead(address: str) -> str | None:
        node = by_address[address]
        if ccm.alive(node):
            return None
        return f"{node.name} ({address}) died while starting\n{ccm.log_tail(node)}"

    live = live_before + starting
    if starting:
        progress(f"waiting for CQL on {', '.join(ccm.address_of(n) for n in live)}")
    health.wait_for_cql([ccm.address_of(n) for n in live], timeout=timeout, progress=progress, still_alive=dead)
    if starting and len(live) > 1:
        progress("waiting for the nodes to see each other up (gossip)")
        started = {n.name for n in starting}
        for node in live:
            others = [o for o in live if o is not node and (node.name in started or o.name in started)]
            if others:
                _wait_seen_up(node, others, marks[node.name], timeout, progress)


def _wait_seen_up(node, others: list, mark: int, timeout: float, progress: Progress) -> None:
    """Wait until `node` logs that it sees each of `others` up; if the log does not say so in time (a rotated
    system.log loses the lines after the mark), ask the node itself with `nodetool status`."""
    from ccmlib.node import TimeoutError as NodeTimeout
    what = f"waiting for {node.name} to see {', '.join(o.name for o in others)} up"
    try:
        with ccm.running(what, progress):
            node.watch_log_for_alive(others, from_mark=mark, timeout=timeout)
        return
    except ClusterError as e:
        if not isinstance(e.__cause__, NodeTimeout):
            raise
        with ccm.running(f"{what} (nodetool status)", progress):
            out = node.nodetool("status").stdout
        up = {line.split()[1] for line in out.splitlines() if line.startswith("U") and len(line.split()) > 1}
        missing = [o.name for o in others if ccm.address_of(o) not in up]
        if missing:
            raise ClusterError(f"{node.name} does not see {', '.join(missing)} up after {timeout:.0f} s "
                               f"(nodetool status on {node.name}):\n{out}") from e
        progress(f"{node.name} sees {', '.join(o.name for o in others)} up (nodetool status; its log did not say)")


def signal_and_wait(node, sig: int, timeout: float) -> bool:
    """Send sig to the node's JVM and wait until it is gone; True if it went. ccm's state updated."""
    pid = node.pid
    if pid and ccm.alive(node):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while ccm.alive(node) and time.monotonic() < deadline:
            time.sleep(0.2)
        # the pid can read as gone while the kernel still tears the JVM down with its sockets: a node is
        # stopped when its CQL port no longer answers (seen here right after a kill -9)
        while health.port_open(ccm.address_of(node), ccm.CQL_PORT, timeout=0.5) and time.monotonic() < deadline:
            time.sleep(0.2)
    gone = not ccm.alive(node) and not health.port_open(ccm.address_of(node), ccm.CQL_PORT, timeout=0.5)
    if gone:
        ccm.mark_down(node)
    return gone


def _still_running(node, progress: Progress) -> bool:
    """True when the node runs; otherwise says so and records it as down (ccm may still think it is up)."""
    if ccm.alive(node):
        return True
    progress(f"{node.name} is not running")
    ccm.mark_down(node)
    return False


@ccm.quiet
def stop_node(settings: Settings, node: str, name: str | None = None, progress: Progress | None = None,
              timeout: float = 60.0) -> NodeStatus:
    """Stop one node gracefully (SIGTERM: Cassandra drains), kill -9 after `timeout` seconds."""
    progress = progress or ccm.noop
    n = ccm.find_node(ccm.require_cluster(settings, name), node)
    if not _still_running(n, progress):
        return ccm.status_of(n)
    progress(f"stopping {n.name} (pid {n.pid})")
    if not signal_and_wait(n, signal.SIGTERM, timeout):
        progress(f"{n.name} still running after {timeout:.0f}s: kill -9")
        if not signal_and_wait(n, signal.SIGKILL, 15.0):
            raise ClusterError(f"could not stop {n.name} (pid {n.pid})")
    return ccm.status_of(n)


@ccm.quiet
def kill_node(settings: Settings, node: str, name: str | None = None,
              progress: Progress | None = None) -> NodeStatus:
    """kill -9 the node's JVM (for fault tests) and wait until the process is gone."""
    progress = progress or ccm.noop
    n = ccm.find_node(ccm.require_cluster(settings, name), node)
    if not _still_running(n, progress):
        return ccm.status_of(n)
    progress(f"kill -9 {n.name} (pid {n.pid})")
    if not signal_and_wait(n, signal.SIGKILL, 15.0):
        raise ClusterError(f"{n.name} (pid {n.pid}) survived kill -9")
    return ccm.status_of(n)


@ccm.quiet
def start_node(settings: Settings, node: str, name: str | None = None, progress: Progress | None = None,
               timeout: float = 180.0, jvm_args: list[str] | None = None) -> NodeStatus:
    """Start one node (no-op if running) and wait until it answers CQL and the live nodes see it up;
    ``jvm_args``: more JVM arguments for this start."""
    progress = progress or ccm.noop
    cluster = ccm.require_cluster(settings, name)
    n = ccm.find_node(cluster, node)
    start_nodes(cluster, [n], progress, timeout, extra_jvm_args={n.name: list(jvm_args or [])})
    return ccm.status_of(n)


def pause_node(settings: Settings, node: str, name: str | None = None) -> NodeStatus:
    """SIGSTOP the node's JVM: every thread frozen, its sockets open (a stop-the-world pause, a VM stall)."""
    n = ccm.find_node(ccm.require_cluster(settings, name), node)
    if not ccm.alive(n):
        raise ClusterError(f"{n.name} is not running: nothing to pause")
    os.kill(n.pid, signal.SIGSTOP)
    return ccm.status_of(n)


def resume_node(settings: Settings, node: str, name: str | None = None) -> NodeStatus:
    """SIGCONT a node's JVM (a no-op on a running one, and on one that is not running)."""
    n = ccm.find_node(ccm.require_cluster(settings, name), node)
    if n.pid and ccm.alive(n):
        try:
            os.kill(n.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass   # gone since: nothing to resume
    return ccm.status_of(n)


def storage_endpoint(settings: Settings, node: str, name: str | None = None) -> tuple[int | None, str, int]:
    """(pid, listen address, storage port) of a node: what a partition's rules name."""
    n = ccm.find_node(ccm.require_cluster(settings, name), node)
    address, port = n.network_interfaces["storage"]
    return (n.pid if ccm.alive(n) else None), address, int(port)
