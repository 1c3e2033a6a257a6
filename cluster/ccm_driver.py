"""Local clusters through ccm's Python API (ccmlib 3.1.5): create, start, stop, kill, remove, plugin jar.

ccm keeps its clusters under Settings.ccm_dir (not ~/.ccm). Nodes are node1..nodeN on 127.0.0.1..N,
CQL port 9042, JMX port 7000 + 100*i. What ccm does not do well enough here, we do ourselves:
- waiting: after a start we poll every node over CQL (health.wait_for_cql) and watch the other nodes' logs
  for "<address> ... now UP", instead of trusting ccm's log-watching start;
- stopping and killing: signals sent to the pid, then waiting until the process is really gone (also when
  it lingers as a zombie, where PID 1 does not reap orphans), then ccm's node state set to DOWN;
- root: ccm passes `-R` to bin/cassandra only with start(allow_root=True), which we set when euid is 0.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from functools import wraps
from pathlib import Path
from typing import Callable, Iterator

from ..config import PLUGIN_JAR, Settings
from ..errors import ClusterError
from . import health, install
from .model import ClusterInfo, NodeStatus

Progress = Callable[[str], None]

# JVM system properties for fast local starts (passed at every node start, whatever the install dir)
FAST_START_JVM_ARGS = (
    "-Dcassandra.ring_delay_ms=5000",
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    # not 0: until every node is up, the role manager's setup fails and reschedules itself after this delay, and
    # at 0 it logs two lines per attempt in a tight loop (20,000 lines/s seen), rotating system.log within seconds
    "-Dcassandra.superuser_setup_delay_ms=1000",
)
CQL_PORT = 9042
MAX_NODES = 9   # ccm's JMX ports 7100..7900; 127.0.0.10 would collide with nothing, but keep it laptop-sized


def _noop(_: str) -> None:
    pass


def _quiet_ccm(fn):
    """ccmlib 3.1.5 compares versions with distutils' LooseVersion: hide its DeprecationWarnings."""
    @wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="distutils Version classes are deprecated",
                                    category=DeprecationWarning)
            return fn(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def _ccm(what: str, progress: Progress) -> Iterator[None]:
    """Run ccm code: its prints go to progress, its errors become ClusterError saying what we were doing."""
    from ccmlib.common import CCMError
    from ccmlib.node import NodeError, TimeoutError as NodeTimeout, ToolError

    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            yield
    except ClusterError:
        raise
    except (CCMError, NodeError, NodeTimeout, ToolError, OSError) as e:
        raise ClusterError(f"{what}: {e}") from e
    finally:
        for line in buf.getvalue().splitlines():
            if line.strip():
                progress(f"ccm: {line.strip()}")


def _resolve_name(settings: Settings, name: str | None) -> str:
    name = name or settings.cluster_name
    if not name or name.lower() == "current" or "/" in name:
        raise ClusterError(f"invalid cluster name '{name}'")
    return name


@_quiet_ccm
def load_cluster(settings: Settings, name: str | None = None):
    """The ccm Cluster called `name` in Settings.ccm_dir, or None when there is none."""
    name = _resolve_name(settings, name)
    path = settings.ccm_dir / name
    if not path.exists():
        return None
    if not (path / "cluster.conf").exists():
        raise ClusterError(f"{path} exists but holds no cluster.conf (a failed create?): "
                           f"remove it with `ctl cluster down --name {name}`")
    from ccmlib.cluster_factory import ClusterFactory
    with _ccm(f"loading cluster {name} from {settings.ccm_dir}", _noop):
        return ClusterFactory.load(str(settings.ccm_dir), name)


def _require_cluster(settings: Settings, name: str | None):
    cluster = load_cluster(settings, name)
    if cluster is None:
        raise ClusterError(f"no cluster '{_resolve_name(settings, name)}' in {settings.ccm_dir}: "
                           "create it with `ctl cluster up`")
    return cluster


def _node(cluster, node: str):
    if node.isdigit():
        node = f"node{node}"
    if node not in cluster.nodes:
        raise ClusterError(f"cluster {cluster.name} has no node '{node}' (nodes: {', '.join(sorted(cluster.nodes))})")
    return cluster.nodes[node]


def _address(node) -> str:
    return node.network_interfaces["binary"][0]


def _alive(node) -> bool:
    return health.process_alive(node.pid)


def _mark_down(node) -> None:
    """Tell ccm the node is down (its own check, os.kill(pid, 0), takes a zombie for a live process)."""
    from ccmlib.node import Status
    node.pid = None
    node.status = Status.DOWN
    node._update_config()


def _refresh(node) -> None:
    if node.pid and not _alive(node):
        _mark_down(node)


def _status(node) -> NodeStatus:
    alive = _alive(node)
    address = _address(node)
    return NodeStatus(name=node.name, address=address, state="up" if alive else "down",
                      pid=node.pid if alive else None,
                      cql=alive and health.port_open(address, CQL_PORT, timeout=0.5),
                      native_port=CQL_PORT, jmx_port=int(node.jmx_port), path=Path(node.get_path()))


def _info(cluster) -> ClusterInfo:
    nodes = tuple(_status(cluster.nodes[n]) for n in sorted(cluster.nodes, key=_node_order))
    return ClusterInfo(name=cluster.name, contact_points=tuple(n.address for n in nodes), nodes=nodes,
                       path=Path(cluster.get_path()), install_dir=Path(cluster.get_install_dir()))


def _node_order(name: str):
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits) if digits else 0, name)


def _log_tail(node, lines: int = 15) -> str:
    out = []
    for fname in ("output.log", "system.log"):
        path = Path(node.get_path()) / "logs" / fname
        if path.exists():
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            if tail:
                out.append(f"--- {path} (last lines)\n" + "\n".join(tail))
    return "\n".join(out) if out else f"(no logs in {Path(node.get_path()) / 'logs'})"


def _heap_env(heap: str) -> dict[str, str]:
    heap = heap.strip().upper()
    if not heap or not heap[:-1].isdigit() or heap[-1] not in "MG":
        raise ClusterError(f"invalid heap size '{heap}' (e.g. 512M, 1G)")
    return {"MAX_HEAP_SIZE": heap}


@_quiet_ccm
def cluster_info(settings: Settings, name: str | None = None) -> ClusterInfo:
    return _info(_require_cluster(settings, name))


@_quiet_ccm
def node_status(settings: Settings, name: str | None = None) -> list[NodeStatus]:
    """One NodeStatus per node of the cluster, in node order."""
    return list(cluster_info(settings, name).nodes)


def _check_plugin(jar: Path | None) -> Path:
    if jar is None or not Path(jar).is_file():
        raise ClusterError(f"the trigger plugin jar {jar} does not exist: build it first with `make plugin` "
                           "(mvn -f trigger-plugin/pom.xml package)")
    return Path(jar)


def plugin_path(cluster_dir: Path) -> Path:
    """The cluster's copy of the plugin jar: one per cluster, in its ccm directory beside the nodes."""
    return Path(cluster_dir) / PLUGIN_JAR


def node_jvm_args(cluster_dir: Path) -> list[str]:
    """The JVM arguments of every node start: the fast-start properties and, once the cluster has the plugin,
    ``-javaagent:`` with its jar, which puts the plugin on the node's class path (where Cassandra loads the capture
    index and the trigger from) without touching the shared install dir's lib/."""
    args = list(FAST_START_JVM_ARGS)
    plugin = plugin_path(cluster_dir)
    if plugin.is_file():
        args.append(f"-javaagent:{plugin}")
    return args


def commitlog_sync_of(cluster) -> str:
    """The commitlog_sync a ccm cluster's nodes run with (ours set it at creation; periodic is Cassandra's default)."""
    return str(cluster._config_options.get("commitlog_sync", "periodic"))


@_quiet_ccm
def up(settings: Settings, nodes: int | None = None, name: str | None = None, heap: str = install.DEFAULT_HEAP,
       progress: Progress | None = None, plugin_jar: Path | None = None, require_plugin: bool = True,
       timeout: float = 300.0, commitlog_sync: str | None = None) -> ClusterInfo:
    """Create (or reuse) the cluster `name` with `nodes` nodes, put the plugin jar in the cluster's dir, start the
    nodes that are down (with the plugin), and return once every node answers CQL and sees the others up.

    nodes: None means 3 for a new cluster, the existing count otherwise. plugin_jar: default Settings.plugin_jar;
    with require_plugin=False a missing jar is skipped instead of failing. commitlog_sync: install.COMMITLOG_SYNC's
    modes; None means periodic for a new cluster, whatever it has for an existing one (which must match if given)."""
    progress = progress or _noop
    name = _resolve_name(settings, name)
    if commitlog_sync is not None and commitlog_sync not in install.COMMITLOG_SYNC:
        raise ClusterError(f"--commitlog-sync must be one of {', '.join(install.COMMITLOG_SYNC)}, not '{commitlog_sync}'")
    jar = Path(plugin_jar) if plugin_jar is not None else settings.plugin_jar
    if require_plugin:
        _check_plugin(jar)
    env = _heap_env(heap)
    install_dir = install.ensure_install(settings, progress)
    settings.ccm_dir.mkdir(parents=True, exist_ok=True)

    cluster = load_cluster(settings, name)
    if cluster is None:
        count = 3 if nodes is None else nodes
        if not 1 <= count <= MAX_NODES:
            raise ClusterError(f"--nodes must be between 1 and {MAX_NODES}, not {count}")
        progress(f"creating cluster {name}: {count} nodes on 127.0.0.1..{count}, heap {env['MAX_HEAP_SIZE']} each")
        from ccmlib.cluster import Cluster
        try:
            with _ccm(f"creating cluster {name} in {settings.ccm_dir}", progress):
                cluster = Cluster(str(settings.ccm_dir), name, install_dir=str(install_dir))
                cluster.set_configuration_options(values={**install.LAPTOP_TUNING,
                                                          **install.COMMITLOG_SYNC[commitlog_sync or "periodic"]})
                for key, value in env.items():
                    cluster.set_environment_variable(key, value)
                cluster.populate(count)
        except ClusterError:
            shutil.rmtree(settings.ccm_dir / name, ignore_errors=True)
            raise
    else:
        if nodes is not None and nodes != len(cluster.nodes):
            raise ClusterError(f"cluster {name} exists with {len(cluster.nodes)} nodes, not {nodes}: "
                               f"remove it first with `ctl cluster down --name {name}`")
        if commitlog_sync is not None and commitlog_sync_of(cluster) != commitlog_sync:
            raise ClusterError(f"cluster {name} exists with commitlog_sync {commitlog_sync_of(cluster)}, not "
                               f"{commitlog_sync}: remove it first with `ctl cluster down --name {name}`")
        progress(f"reusing cluster {name} ({len(cluster.nodes)} nodes) from {cluster.get_path()}")
        with _ccm(f"updating the nodes' heap of cluster {name}", progress):
            for node in cluster.nodes.values():
                for key, value in env.items():
                    if node._Node__environment_variables.get(key) != value:
                        node.set_environment_variable(key, value)
    (settings.ccm_dir / "CURRENT").write_text(name + "\n")   # so `ccm --config-dir <ccm_dir> ...` finds it

    for node in cluster.nodes.values():
        triggers_dir(node).mkdir(parents=True, exist_ok=True)   # where flows' Java handlers go
    if jar.is_file():
        _copy_plugin(cluster, jar, progress)
    else:
        progress(f"plugin jar {jar} not built: nodes start without it")

    _start_nodes(cluster, [cluster.nodes[n] for n in sorted(cluster.nodes, key=_node_order)], progress, timeout)
    info = _info(cluster)
    progress(f"cluster {name} is up: " + ", ".join(f"{n.name}={n.address}" for n in info.nodes))
    return info


def _start_nodes(cluster, to_start: list, progress: Progress, timeout: float) -> None:
    """Start the given nodes that are down (concurrently), then wait for CQL on all of them and for every pair
    of live nodes to have seen each other come up."""
    for node in cluster.nodes.values():
        _refresh(node)
    starting = [n for n in to_start if not _alive(n)]
    if not starting:
        progress("all nodes already running")
    for node in starting:
        address = _address(node)
        if health.port_open(address, CQL_PORT, timeout=0.5):
            raise ClusterError(f"{address}:{CQL_PORT} is already in use, so {node.name} of cluster {cluster.name} "
                               "cannot start: is another cluster running? (`ctl cluster status --name NAME`, "
                               "`ctl cluster down --name NAME`)")
    live_before = [n for n in cluster.nodes.values() if _alive(n)]
    marks = {n.name: n.mark_log() for n in cluster.nodes.values()}
    allow_root = hasattr(os, "geteuid") and os.geteuid() == 0
    for node in starting:
        progress(f"starting {node.name} ({_address(node)})")
        with _ccm(f"starting {node.name} of cluster {cluster.name}", progress):
            node.start(wait_other_notice=False, wait_for_binary_proto=False, allow_root=allow_root,
                       jvm_args=node_jvm_args(Path(cluster.get_path())))
        if not _alive(node):
            raise ClusterError(f"{node.name} exited right after start\n{_log_tail(node)}")

    by_address = {_address(n): n for n in cluster.nodes.values()}

    def dead(address: str) -> str | None:
        node = by_address[address]
        if _alive(node):
            return None
        return f"{node.name} ({address}) died while starting\n{_log_tail(node)}"

    live = live_before + starting
    if starting:
        progress(f"waiting for CQL on {', '.join(_address(n) for n in live)}")
    health.wait_for_cql([_address(n) for n in live], timeout=timeout, progress=progress, still_alive=dead)
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
        with _ccm(what, progress):
            node.watch_log_for_alive(others, from_mark=mark, timeout=timeout)
        return
    except ClusterError as e:
        if not isinstance(e.__cause__, NodeTimeout):
            raise
        with _ccm(f"{what} (nodetool status)", progress):
            out = node.nodetool("status").stdout
        up = {line.split()[1] for line in out.splitlines() if line.startswith("U") and len(line.split()) > 1}
        missing = [o.name for o in others if _address(o) not in up]
        if missing:
            raise ClusterError(f"{node.name} does not see {', '.join(missing)} up after {timeout:.0f} s "
                               f"(nodetool status on {node.name}):\n{out}") from e
        progress(f"{node.name} sees {', '.join(o.name for o in others)} up (nodetool status; its log did not say)")


@_quiet_ccm
def down(settings: Settings, name: str | None = None, progress: Progress | None = None) -> bool:
    """Kill every node (kill -9: the data is removed anyway) and remove the cluster. False if there was none."""
    progress = progress or _noop
    name = _resolve_name(settings, name)
    path = settings.ccm_dir / name
    if not path.exists():
        return False
    cluster = None
    if (path / "cluster.conf").exists():
        cluster = load_cluster(settings, name)
        for node in cluster.nodes.values():
            if _alive(node):
                progress(f"killing {node.name} (pid {node.pid})")
                _signal_and_wait(node, signal.SIGKILL, 30.0)
    progress(f"removing {path}")
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        raise ClusterError(f"could not remove {path}")
    current = settings.ccm_dir / "CURRENT"
    if current.exists() and current.read_text().strip() == name:
        current.unlink()
    return True


def _signal_and_wait(node, sig: int, timeout: float) -> bool:
    """Send sig to the node's JVM and wait until it is gone; True if it went. ccm's state updated."""
    pid = node.pid
    if pid and _alive(node):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while _alive(node) and time.monotonic() < deadline:
            time.sleep(0.2)
        # the pid can read as gone while the kernel still tears the JVM down with its sockets: a node is
        # stopped when its CQL port no longer answers (seen here right after a kill -9)
        while health.port_open(_address(node), CQL_PORT, timeout=0.5) and time.monotonic() < deadline:
            time.sleep(0.2)
    gone = not _alive(node) and not health.port_open(_address(node), CQL_PORT, timeout=0.5)
    if gone:
        _mark_down(node)
    return gone


def _still_running(node, progress: Progress) -> bool:
    """True when the node runs; otherwise says so and records it as down (ccm may still think it is up)."""
    if _alive(node):
        return True
    progress(f"{node.name} is not running")
    _mark_down(node)
    return False


@_quiet_ccm
def stop_node(settings: Settings, node: str, name: str | None = None, progress: Progress | None = None,
              timeout: float = 60.0) -> NodeStatus:
    """Stop one node gracefully (SIGTERM: Cassandra drains), kill -9 after `timeout` seconds."""
    progress = progress or _noop
    n = _node(_require_cluster(settings, name), node)
    if not _still_running(n, progress):
        return _status(n)
    progress(f"stopping {n.name} (pid {n.pid})")
    if not _signal_and_wait(n, signal.SIGTERM, timeout):
        progress(f"{n.name} still running after {timeout:.0f}s: kill -9")
        if not _signal_and_wait(n, signal.SIGKILL, 15.0):
            raise ClusterError(f"could not stop {n.name} (pid {n.pid})")
    return _status(n)


@_quiet_ccm
def kill_node(settings: Settings, node: str, name: str | None = None,
              progress: Progress | None = None) -> NodeStatus:
    """kill -9 the node's JVM (for fault tests) and wait until the process is gone."""
    progress = progress or _noop
    n = _node(_require_cluster(settings, name), node)
    if not _still_running(n, progress):
        return _status(n)
    progress(f"kill -9 {n.name} (pid {n.pid})")
    if not _signal_and_wait(n, signal.SIGKILL, 15.0):
        raise ClusterError(f"{n.name} (pid {n.pid}) survived kill -9")
    return _status(n)


@_quiet_ccm
def start_node(settings: Settings, node: str, name: str | None = None, progress: Progress | None = None,
               timeout: float = 180.0) -> NodeStatus:
    """Start one node (no-op if running) and wait until it answers CQL and the live nodes see it up."""
    progress = progress or _noop
    cluster = _require_cluster(settings, name)
    n = _node(cluster, node)
    _start_nodes(cluster, [n], progress, timeout)
    return _status(n)


def _as_ccm_cluster(cluster):
    if isinstance(cluster, ClusterInfo):
        if cluster.path is None:
            raise ClusterError(f"cluster {cluster.name}: no ccm path known")
        from ccmlib.cluster_factory import ClusterFactory
        with _ccm(f"loading cluster {cluster.name}", _noop):
            return ClusterFactory.load(str(cluster.path.parent), cluster.name)
    return cluster


def triggers_dir(node) -> Path:
    """Where a ccm node's Cassandra loads trigger jars, and the plugin flows' Java handlers, from:
    <node>/conf/triggers. Our bin/cassandra passes -Dcassandra.triggers_dir=$CASSANDRA_CONF/triggers; an official
    distribution finds the same directory as the class path resource `triggers` (the node's conf dir is first on
    its class path)."""
    return Path(node.get_conf_dir()) / "triggers"


def triggers_dir_of(node: NodeStatus) -> Path:
    """The triggers dir of a node given as NodeStatus (see triggers_dir)."""
    if node.path is None:
        raise ClusterError(f"{node.name}: node path unknown")
    return node.path / "conf" / "triggers"


def _copy_plugin(cluster, jar: Path, progress: Progress) -> Path:
    target = plugin_path(Path(cluster.get_path()))
    if any(ch.isspace() for ch in str(target)):
        # ccm hands JVM options to bin/cassandra in JVM_EXTRA_OPTS, which is split on whitespace
        raise ClusterError(f"the cluster directory {target.parent} contains whitespace, so -javaagent:{target} "
                           "cannot be passed to the nodes: set ASYNC_TRIGGERS_HOME to a path without spaces")
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(jar, tmp)
    os.replace(tmp, target)     # a running node keeps the jar it opened
    progress(f"plugin {jar.name} copied to {target} (nodes load it when they start)")
    return target


@_quiet_ccm
def install_plugin(cluster, jar: Path, progress: Progress | None = None, timeout: float = 180.0) -> Path:
    """Copy the plugin jar into the cluster's dir and restart the running nodes one at a time (a graceful stop,
    then a start that waits until the node answers CQL and the others see it up), so each loads the new jar: the
    plugin is on the node's class path, which only a restart changes. Returns the copied jar.

    cluster: a ccm Cluster or a ClusterInfo."""
    progress = progress or _noop
    jar = _check_plugin(Path(jar))
    cluster = _as_ccm_cluster(cluster)
    copied = _copy_plugin(cluster, jar, progress)
    for name in sorted(cluster.nodes, key=_node_order):
        node = cluster.nodes[name]
        if not _alive(node):
            continue
        progress(f"restarting {name} to load the plugin")
        if not _signal_and_wait(node, signal.SIGTERM, 60.0) and not _signal_and_wait(node, signal.SIGKILL, 15.0):
            raise ClusterError(f"could not stop {name} (pid {node.pid}) to restart it")
        _start_nodes(cluster, [node], progress, timeout)
    return copied


@_quiet_ccm
def nodetool_command(settings: Settings, node: str, args: list[str],
                     name: str | None = None) -> tuple[list[str], dict[str, str]]:
    """argv and environment to run `nodetool ARGS` against one node (what `ccm nodeN nodetool` runs)."""
    cluster = _require_cluster(settings, name)
    n = _node(cluster, node)
    return _nodetool_argv(n, args), _tool_env(n)


def _nodetool_argv(node, args: list[str]) -> list[str]:
    return [node.get_tool("nodetool"), "-h", "localhost", "-p", str(node.jmx_port), *args]


def _tool_env(node) -> dict[str, str]:
    with _ccm("preparing the node environment", _noop):
        env = node.get_env()
    env["CQLSH_PYTHON"] = sys.executable
    return env


def _run_nodetool(node, args: list[str], timeout: float = 120.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(_nodetool_argv(node, args), env=_tool_env(node), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ClusterError(f"nodetool {' '.join(args)} on {node.name} timed out after {timeout:.0f}s") from e


@_quiet_ccm
def nodetool(settings: Settings, node: str, args: list[str], name: str | None = None,
             timeout: float = 120.0) -> str:
    """Run nodetool against one node and return its output; ClusterError (with the output) if it fails."""
    cluster = _require_cluster(settings, name)
    n = _node(cluster, node)
    proc = _run_nodetool(n, args, timeout)
    if proc.returncode != 0:
        raise ClusterError(f"nodetool {' '.join(args)} on {n.name} failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


@_quiet_ccm
def cqlsh_command(settings: Settings, node: str, args: list[str] | None = None,
                  name: str | None = None) -> list[str]:
    """argv of cqlsh (this Python's cqlshlib) connected to one node."""
    cluster = _require_cluster(settings, name)
    n = _node(cluster, node)
    return [sys.executable, "-m", "cqlshlib", *(args or []), _address(n), str(CQL_PORT)]
