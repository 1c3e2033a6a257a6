"""A local cluster's life: create (or reuse) and start it, remove it, and the plugin jar it runs (copied into the
cluster's dir; installing a new one restarts the running nodes one at a time)."""
from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from async_triggers.config import Settings
from async_triggers.errors import ClusterError
from . import ccm_driver as ccm, install, node_process, prometheus
from .ccm_driver import Progress
from .model import ClusterInfo

MAX_NODES = 9   # ccm's JMX ports 7100..7900; 127.0.0.10 would collide with nothing, but keep it laptop-sized


def _heap_env(heap: str) -> dict[str, str]:
    heap = heap.strip().upper()
    if not heap or not heap[:-1].isdigit() or heap[-1] not in "MG":
        raise ClusterError(f"invalid heap size '{heap}' (e.g. 512M, 1G)")
    return {"MAX_HEAP_SIZE": heap}


def _check_plugin(jar: Path | None) -> Path:
    if jar is None or not Path(jar).is_file():
        raise ClusterError(f"the trigger plugin jar {jar} does not exist: build it first with `make plugin` "
                           "(mvn -f trigger-plugin/pom.xml package)")
    return Path(jar)


@ccm.quiet
def up(settings: Settings, nodes: int | None = None, name: str | None = None, heap: str = install.DEFAULT_HEAP,
       progress: Progress | None = None, plugin_jar: Path | None = None, require_plugin: bool = True,
       timeout: float = 300.0, commitlog_sync: str | None = None,
       config_options: dict[str, object] | None = None) -> ClusterInfo:
    """Create (or reuse) the cluster `name` with `nodes` nodes, put the plugin jar in the cluster's dir, start the
    nodes that are down (with the plugin), and return once every node answers CQL and sees the others up.

    nodes: None means 3 for a new cluster, the existing count otherwise. plugin_jar: default Settings.plugin_jar;
    with require_plugin=False a missing jar is skipped instead of failing. commitlog_sync: install.COMMITLOG_SYNC's
    modes; None means periodic for a new cluster, whatever it has for an existing one (which must match if given).
    config_options: more cassandra.yaml settings for a new cluster (e.g. ``{"cdc_enabled": True}``)."""
    progress = progress or ccm.noop
    name = ccm.resolve_name(settings, name)
    if commitlog_sync is not None and commitlog_sync not in install.COMMITLOG_SYNC:
        raise ClusterError(f"--commitlog-sync must be one of {', '.join(install.COMMITLOG_SYNC)}, not '{commitlog_sync}'")
    jar = Path(plugin_jar) if plugin_jar is not None else settings.plugin_jar
    if require_plugin:
        _check_plugin(jar)
    env = _heap_env(heap)
    install_dir = install.ensure_install(settings, progress)
    settings.ccm_dir.mkdir(parents=True, exist_ok=True)

    cluster = ccm.load_cluster(settings, name)
    if cluster is None:
        count = 3 if nodes is None else nodes
        if not 1 <= count <= MAX_NODES:
            raise ClusterError(f"--nodes must be between 1 and {MAX_NODES}, not {count}")
        progress(f"creating cluster {name}: {count} nodes on 127.0.0.1..{count}, heap {env['MAX_HEAP_SIZE']} each")
        from ccmlib.cluster import Cluster
        try:
            with ccm.running(f"creating cluster {name} in {settings.ccm_dir}", progress):
                cluster = Cluster(str(settings.ccm_dir), name, install_dir=str(install_dir))
                cluster.set_configuration_options(values={**install.LAPTOP_TUNING,
                                                          **install.COMMITLOG_SYNC[commitlog_sync or "periodic"],
                                                          **(config_options or {})})
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
        if commitlog_sync is not None and ccm.commitlog_sync_of(cluster) != commitlog_sync:
            raise ClusterError(f"cluster {name} exists with commitlog_sync {ccm.commitlog_sync_of(cluster)}, not "
                               f"{commitlog_sync}: remove it first with `ctl cluster down --name {name}`")
        progress(f"reusing cluster {name} ({len(cluster.nodes)} nodes) from {cluster.get_path()}")
        with ccm.running(f"updating the nodes' heap of cluster {name}", progress):
            for node in cluster.nodes.values():
                for key, value in env.items():
                    if node._Node__environment_variables.get(key) != value:
                        node.set_environment_variable(key, value)
    (settings.ccm_dir / "CURRENT").write_text(name + "\n")   # so `ccm --config-dir <ccm_dir> ...` finds it

    for node in cluster.nodes.values():
        ccm.triggers_dir(node).mkdir(parents=True, exist_ok=True)   # where flows' Java handlers go
    if jar.is_file():
        _copy_plugin(cluster, jar, progress)
    else:
        progress(f"plugin jar {jar} not built: nodes start without it")

    node_process.start_nodes(cluster, [cluster.nodes[n] for n in sorted(cluster.nodes, key=ccm.node_order)], progress, timeout)
    info = ccm.info_of(cluster)
    progress(f"cluster {name} is up: " + ", ".join(f"{n.name}={n.address}" for n in info.nodes))
    return info


@ccm.quiet
def down(settings: Settings, name: str | None = None, progress: Progress | None = None) -> bool:
    """Kill every node (kill -9: the data is removed anyway) and remove the cluster. False if there was none."""
    progress = progress or ccm.noop
    name = ccm.resolve_name(settings, name)
    path = settings.ccm_dir / name
    if not path.exists():
        return False
    cluster = None
    if (path / "cluster.conf").exists():
        cluster = ccm.load_cluster(settings, name)
        for node in cluster.nodes.values():
            if ccm.alive(node):
                progress(f"killing {node.name} (pid {node.pid})")
                node_process.signal_and_wait(node, signal.SIGKILL, 30.0)
    prometheus.stop(path / prometheus.FOLDER, progress)   # `ctl cluster prometheus up`'s server, if it runs
    progress(f"removing {path}")
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        raise ClusterError(f"could not remove {path}")
    current = settings.ccm_dir / "CURRENT"
    if current.exists() and current.read_text().strip() == name:
        current.unlink()
    return True


def _copy_plugin(cluster, jar: Path, progress: Progress) -> Path:
    target = node_process.plugin_path(Path(cluster.get_path()))
    if any(ch.isspace() for ch in str(target)):
        # ccm hands JVM options to bin/cassandra in JVM_EXTRA_OPTS, which is split on whitespace
        raise ClusterError(f"the cluster directory {target.parent} contains whitespace, so -javaagent:{target} "
                           "cannot be passed to the nodes: set ASYNC_TRIGGERS_HOME to a path without spaces")
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(jar, tmp)
    os.replace(tmp, target)     # a running node keeps the jar it opened
    progress(f"plugin {jar.name} copied to {target} (nodes load it when they start)")
    sources = node_process.metrics_exporter_sources(jar)
    if all(source.is_file() for source in sources):
        for source, copy in zip(sources, node_process.metrics_exporter_path(target.parent)):
            tmp = copy.with_name(f".{copy.name}.tmp")
            shutil.copyfile(source, tmp)
            os.replace(tmp, copy)
        progress(f"metrics exporter {sources[0].name} copied beside it (nodes serve Prometheus metrics on port "
                 f"{node_process.METRICS_PORT})")
    return target


@ccm.quiet
def install_plugin(cluster, jar: Path, progress: Progress | None = None, timeout: float = 180.0) -> Path:
    """Copy the plugin jar into the cluster's dir and restart the running nodes one at a time (a graceful stop,
    then a start that waits until the node answers CQL and the others see it up), so each loads the new jar: the
    plugin is on the node's class path, which only a restart changes. Returns the copied jar.

    cluster: a ccm Cluster or a ClusterInfo."""
    progress = progress or ccm.noop
    jar = _check_plugin(Path(jar))
    cluster = ccm.as_ccm_cluster(cluster)
    copied = _copy_plugin(cluster, jar, progress)
    for name in sorted(cluster.nodes, key=ccm.node_order):
        node = cluster.nodes[name]
        if not ccm.alive(node):
            continue
        progress(f"restarting {name} to load the plugin")
        if not node_process.signal_and_wait(node, signal.SIGTERM, 60.0) and not node_process.signal_and_wait(node, signal.SIGKILL, 15.0):
            raise ClusterError(f"could not stop {name} (pid {node.pid}) to restart it")
        node_process.start_nodes(cluster, [node], progress, timeout)
    return copied
