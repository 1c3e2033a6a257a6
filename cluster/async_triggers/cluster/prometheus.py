"""A Prometheus server for a local cluster: Debian's /usr/bin/prometheus scraping every node's JMX exporter every
2 s, listening on a free port of 127.0.0.1, its config, data and log in <cluster dir>/prometheus/ (removed with the
cluster). What `ctl trigger dashboard` reads when there is no Grafana.

    start(directory, targets, port=None, progress) -> Server     any targets (the unit tests scrape Prometheus itself)
    up(settings, name, progress) -> Server                       the cluster's nodes; a running one is reloaded
    running(directory) -> Server | None;  stop(directory, progress) -> bool
    down(settings, name, progress) -> bool
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import yaml

from async_triggers.config import Settings
from async_triggers.errors import ClusterError
from . import ccm_driver as ccm
from .ccm_driver import Progress

BINARY = "/usr/bin/prometheus"
SCRAPE_INTERVAL = "2s"
FOLDER = "prometheus"
CONFIG, STATE = "prometheus.yml", "server.json"   # in the server's directory, with data/ and prometheus.log


@dataclasses.dataclass(frozen=True)
class Server:
    url: str                  # http://127.0.0.1:<port>
    pid: int
    directory: Path
    targets: tuple[str, ...]  # the scrape URLs

    def as_dict(self) -> dict:
        return {"url": self.url, "pid": self.pid, "directory": str(self.directory), "targets": list(self.targets)}


def binary() -> str:
    found = BINARY if os.access(BINARY, os.X_OK) else shutil.which("prometheus")
    if not found:
        raise ClusterError(f"{BINARY} is missing: `make promtool` installs Debian's prometheus package")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_config(targets: list[str], interval: str = SCRAPE_INTERVAL) -> dict:
    """prometheus.yml for scrape URLs (http://host:port/path): one job, a static config per path; the instance
    label is host:port, what the dashboard's $node matches."""
    by_path: dict[tuple[str, str], list[str]] = {}
    for url in targets:
        parts = urlsplit(url)
        if not parts.scheme or not parts.netloc:
            raise ClusterError(f"not a scrape URL: '{url}'")
        by_path.setdefault((parts.scheme, parts.path or "/metrics"), []).append(parts.netloc)
    jobs = [{"job_name": "async-triggers" if len(by_path) == 1 else f"async-triggers-{i}", "scheme": scheme,
             "metrics_path": path, "static_configs": [{"targets": hosts}]}
            for i, ((scheme, path), hosts) in enumerate(sorted(by_path.items()))]
    return {"global": {"scrape_interval": interval, "evaluation_interval": interval}, "scrape_configs": jobs}


def running(directory: Path) -> Server | None:
    """The server started in ``directory`` when it still runs (its pid is checked to be that Prometheus)."""
    try:
        state = json.loads((Path(directory) / STATE).read_text())
        process = psutil.Process(state["pid"])
        ours = f"--config.file={Path(directory) / CONFIG}" in process.cmdline()
        alive = process.status() != psutil.STATUS_ZOMBIE
    except (OSError, ValueError, KeyError, psutil.Error):
        return None
    return Server(state["url"], state["pid"], Path(directory), tuple(state["targets"])) if ours and alive else None


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as answer:
            return answer.status == 200
    except OSError:     # URLError is one
        return False


def start(directory: Path, targets: list[str], port: int | None = None, progress: Progress = ccm.noop,
          timeout: float = 30.0) -> Server:
    """Write the config and start Prometheus in ``directory`` (config, data/, prometheus.log); wait until ready.
    A server already running there reloads the new config (SIGHUP) instead."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG).write_text(yaml.safe_dump(scrape_config(list(targets)), sort_keys=False))
    server = running(directory)
    if server is not None:
        os.kill(server.pid, signal.SIGHUP)
        server = dataclasses.replace(server, targets=tuple(targets))
        (directory / STATE).write_text(json.dumps(server.as_dict()))
        progress(f"prometheus (pid {server.pid}) reloaded its config: {len(targets)} target(s)")
        return server
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [binary(), f"--config.file={directory / CONFIG}", f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=7d"]
    log = directory / "prometheus.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=directory, start_new_session=True)
    server = Server(url, process.pid, directory, tuple(targets))
    (directory / STATE).write_text(json.dumps(server.as_dict()))
    deadline = time.monotonic() + timeout
    while not _ready(url):
        if process.poll() is not None or time.monotonic() > deadline:
            _terminate(process.pid, 5.0)
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-10:])
            raise ClusterError(f"prometheus did not become ready on {url} (log {log}):\n{tail}")
        time.sleep(0.2)
    progress(f"prometheus (pid {process.pid}) serves {url}, scraping {len(targets)} target(s) every "
             f"{SCRAPE_INTERVAL}")
    return server


def _terminate(pid: int, timeout: float) -> None:
    try:
        process = psutil.Process(pid)
        process.terminate()
        if not psutil.wait_procs([process], timeout)[0]:
            process.kill()
            process.wait(timeout)
    except psutil.NoSuchProcess:
        pass


def stop(directory: Path, progress: Progress = ccm.noop, timeout: float = 15.0) -> bool:
    """Stop the server started in ``directory`` (SIGTERM, then SIGKILL); False when none ran. Its data stays."""
    server = running(directory)
    (Path(directory) / STATE).unlink(missing_ok=True)
    if server is None:
        return False
    _terminate(server.pid, timeout)
    progress(f"prometheus (pid {server.pid}) stopped")
    return True


def directory_of(settings: Settings, name: str | None) -> Path:
    return settings.ccm_dir / ccm.resolve_name(settings, name) / FOLDER


def up(settings: Settings, name: str | None = None, progress: Progress = ccm.noop) -> Server:
    """Prometheus scraping every node of the local cluster ``name`` (its nodes need the JMX exporter: the plugin
    built with `make plugin`)."""
    info = ccm.cluster_info(settings, name)
    targets = [n.metrics_url for n in info.nodes if n.metrics_url]
    if not targets:
        raise ClusterError(f"the nodes of cluster {info.name} serve no Prometheus metrics: `make plugin` builds the "
                           f"JMX exporter, then `ctl cluster install-plugin --name {info.name}`")
    return start(directory_of(settings, info.name), targets, progress=progress)


def down(settings: Settings, name: str | None = None, progress: Progress = ccm.noop) -> bool:
    return stop(directory_of(settings, name), progress)
