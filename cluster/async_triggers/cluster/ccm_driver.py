"""Local ccm clusters through ccm's Python API (ccmlib 3.1.5), seen through our model: loading a cluster, finding
its nodes, their state (NodeStatus, ClusterInfo), their dirs, nodetool and cqlsh against one node. ccm's prints
become progress lines and its errors ClusterError (``running``); starting and stopping nodes is in node_process,
creating and removing clusters in lifecycle.

ccm keeps its clusters under Settings.ccm_dir (not ~/.ccm). Nodes are node1..nodeN on 127.0.0.1..N,
CQL port 9042, JMX port 7000 + 100*i.
"""
from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings
from functools import wraps
from pathlib import Path
from typing import Callable, Iterator

from async_triggers.config import METRICS_EXPORTER_CONFIG, METRICS_EXPORTER_JAR, METRICS_PORT, Settings
from async_triggers.errors import ClusterError
from . import health
from .model import ClusterInfo, NodeStatus

Progress = Callable[[str], None]
CQL_PORT = 9042


def noop(_: str) -> None:
    pass


def quiet(fn):
    """ccmlib 3.1.5 compares versions with distutils' LooseVersion: hide its DeprecationWarnings."""
    @wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="distutils Version classes are deprecated",
                                    category=DeprecationWarning)
            return fn(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def running(what: str, progress: Progress) -> Iterator[None]:
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


def resolve_name(settings: Settings, name: str | None) -> str:
    name = name or settings.cluster_name
    if not name or name.lower() == "current" or "/" in name:
        raise ClusterError(f"invalid cluster name '{name}'")
    return name


@quiet
def load_cluster(settings: Settings, name: str | None = None):
    """The ccm Cluster called `name` in Settings.ccm_dir, or None when there is none."""
    name = resolve_name(settings, name)
    path = settings.ccm_dir / name
    if not path.exists():
        return None
    if not (path / "cluster.conf").exists():
        raise ClusterError(f"{path} exists but holds no cluster.conf (a failed create?): "
                           f"remove it with `ctl cluster down --name {name}`")
    from ccmlib.cluster_factory import ClusterFactory
    with running(f"loading cluster {name} from {settings.ccm_dir}", noop):
        return ClusterFactory.load(str(settings.ccm_dir), name)


def require_cluster(settings: Settings, name: str | None):
    cluster = load_cluster(settings, name)
    if cluster is None:
        raise ClusterError(f"no cluster '{resolve_name(settings, name)}' in {settings.ccm_dir}: "
                           "create it with `ctl cluster up`")
    return cluster


def find_node(cluster, node: str):
    if node.isdigit():
        node = f"node{node}"
    if node not in cluster.nodes:
        raise ClusterError(f"cluster {cluster.name} has no node '{node}' (nodes: {', '.join(sorted(cluster.nodes))})")
    return cluster.nodes[node]


def address_of(node) -> str:
    return node.network_interfaces["binary"][0]


def alive(node) -> bool:
    return health.process_alive(node.pid)


def mark_down(node) -> None:
    """Tell ccm the node is down (its own check, os.kill(pid, 0), takes a zombie for a live process)."""
    from ccmlib.node import Status
    node.pid = None
    node.status = Status.DOWN
    node._update_config()


def refresh(node) -> None:
    if node.pid and not alive(node):
        mark_down(node)


def status_of(node) -> NodeStatus:
    running = alive(node)
    address = address_of(node)
    return NodeStatus(name=node.name, address=address, state="up" if running else "down",
                      pid=node.pid if running else None,
                      cql=running and health.port_open(address, CQL_PORT, timeout=0.5),
                      native_port=CQL_PORT, jmx_port=int(node.jmx_port), path=Path(node.get_path()),
                      metrics_url=metrics_url(Path(node.get_path()).parent, address))


def metrics_exporter_path(cluster_dir: Path) -> tuple[Path, Path]:
    """The cluster's copy of the Prometheus JMX exporter agent and its config, beside its copy of the plugin."""
    return Path(cluster_dir) / METRICS_EXPORTER_JAR, Path(cluster_dir) / METRICS_EXPORTER_CONFIG


def metrics_url(cluster_dir: Path, address: str) -> str | None:
    """Where a node serves its Prometheus metrics, when its cluster has the exporter (nodes start with it then)."""
    jar, config = metrics_exporter_path(cluster_dir)
    return f"http://{address}:{METRICS_PORT}/metrics" if jar.is_file() and config.is_file() else None


def info_of(cluster) -> ClusterInfo:
    nodes = tuple(status_of(cluster.nodes[n]) for n in sorted(cluster.nodes, key=node_order))
    return ClusterInfo(name=cluster.name, contact_points=tuple(n.address for n in nodes), nodes=nodes,
                       path=Path(cluster.get_path()), install_dir=Path(cluster.get_install_dir()))


def node_order(name: str):
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits) if digits else 0, name)


def log_tail(node, lines: int = 15) -> str:
    out = []
    for fname in ("output.log", "system.log"):
        path = Path(node.get_path()) / "logs" / fname
        if path.exists():
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            if tail:
                out.append(f"--- {path} (last lines)\n" + "\n".join(tail))
    return "\n".join(out) if out else f"(no logs in {Path(node.get_path()) / 'logs'})"


@quiet
def cluster_info(settings: Settings, name: str | None = None) -> ClusterInfo:
    return info_of(require_cluster(settings, name))


@quiet
def node_status(settings: Settings, name: str | None = None) -> list[NodeStatus]:
    """One NodeStatus per node of the cluster, in node order."""
    return list(cluster_info(settings, name).nodes)


def commitlog_sync_of(cluster) -> str:
    """The commitlog_sync a ccm cluster's nodes run with (ours set it at creation; periodic is Cassandra's default)."""
    return str(cluster._config_options.get("commitlog_sync", "periodic"))


def as_ccm_cluster(cluster):
    if isinstance(cluster, ClusterInfo):
        if cluster.path is None:
            raise ClusterError(f"cluster {cluster.name}: no ccm path known")
        from ccmlib.cluster_factory import ClusterFactory
        with running(f"loading cluster {cluster.name}", noop):
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


@quiet
def nodetool_command(settings: Settings, node: str, args: list[str],
                     name: str | None = None) -> tuple[list[str], dict[str, str]]:
    """argv and environment to run `nodetool ARGS` against one node (what `ccm nodeN nodetool` runs)."""
    cluster = require_cluster(settings, name)
    n = find_node(cluster, node)
    return _nodetool_argv(n, args), _tool_env(n)


def _nodetool_argv(node, args: list[str]) -> list[str]:
    return [node.get_tool("nodetool"), "-h", "localhost", "-p", str(node.jmx_port), *args]


def _tool_env(node) -> dict[str, str]:
    with running("preparing the node environment", noop):
        env = node.get_env()
    env["CQLSH_PYTHON"] = sys.executable
    return env


def _run_nodetool(node, args: list[str], timeout: float = 120.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(_nodetool_argv(node, args), env=_tool_env(node), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ClusterError(f"nodetool {' '.join(args)} on {node.name} timed out after {timeout:.0f}s") from e


@quiet
def nodetool(settings: Settings, node: str, args: list[str], name: str | None = None,
             timeout: float = 120.0) -> str:
    """Run nodetool against one node and return its output; ClusterError (with the output) if it fails."""
    cluster = require_cluster(settings, name)
    n = find_node(cluster, node)
    proc = _run_nodetool(n, args, timeout)
    if proc.returncode != 0:
        raise ClusterError(f"nodetool {' '.join(args)} on {n.name} failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


@quiet
def cqlsh_command(settings: Settings, node: str, args: list[str] | None = None,
                  name: str | None = None) -> list[str]:
    """argv of cqlsh (this Python's cqlshlib) connected to one node."""
    cluster = require_cluster(settings, name)
    n = find_node(cluster, node)
    return [sys.executable, "-m", "cqlshlib", *(args or []), address_of(n), str(CQL_PORT)]
