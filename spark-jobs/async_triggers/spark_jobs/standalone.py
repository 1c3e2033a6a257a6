"""A Spark standalone cluster on this machine: one master and N workers, started from the pyspark installation's
own launcher (``bin/spark-class``: the pip wheel has no ``sbin/start-master.sh``), so that every Spark job here can
run against ``spark://HOST:PORT`` as it would on a real Spark cluster, not only ``local[N]``.

Each cluster lives in a state folder (``<home>/spark-standalone/<name>``): its processes' pids, ports, log files and
the workers' work directories. ``up`` waits until the master's status page (``/json/``) lists every worker ALIVE;
``down`` stops the processes it started (SIGTERM, then SIGKILL), and only those.

The jobs find the connector's jars through ``spark.jars`` (the driver serves them to the executors) and run the
same Python on the executors as on the driver (``spark.pyspark.python``): the workers are on this machine, so the
virtualenv's interpreter and its installed ``async_triggers`` are theirs too.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from async_triggers.errors import ConfigError

from .errors import AsyncTriggersError

HOST = "127.0.0.1"
DEFAULT_NAME = "local"
DEFAULT_PORT = 7177          # not Spark's 7077: a Spark installed on the machine keeps its own
DEFAULT_WEBUI_PORT = 8180
STATE = "spark-standalone"


class SparkClusterError(AsyncTriggersError):
    """The standalone Spark cluster could not be started, reached or stopped."""


@dataclasses.dataclass(frozen=True)
class Standalone:
    name: str
    folder: Path
    port: int
    webui_port: int
    workers: int
    cores: int
    memory: str

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def status_url(self) -> str:
        return f"http://{HOST}:{self.webui_port}/json/"

    def log(self, process: str) -> Path:
        return self.folder / f"{process}.log"


def spark_class() -> Path:
    """The pyspark installation's ``bin/spark-class``."""
    import pyspark
    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.is_file():
        raise SparkClusterError(f"no {path}: the installed pyspark has no launcher to start a standalone cluster")
    return path


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", HOST)
    env.setdefault("SPARK_DAEMON_MEMORY", "256m")     # the master's and workers' own heaps (executors: --memory)
    env["PYSPARK_PYTHON"] = sys.executable
    if not shutil.which("java") and not env.get("JAVA_HOME"):
        raise SparkClusterError("no java on PATH and no JAVA_HOME: Spark's master and workers are JVM processes")
    return env


def state(home: Path, name: str = DEFAULT_NAME) -> Standalone | None:
    """The cluster ``name`` as ``up`` recorded it, or None."""
    path = Path(home) / STATE / name / "cluster.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return Standalone(name=name, folder=path.parent, port=data["port"], webui_port=data["webui_port"],
                      workers=data["workers"], cores=data["cores"], memory=data["memory"])


def _pids(cluster: Standalone) -> dict[str, int]:
    path = cluster.folder / "pids.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def status(cluster: Standalone, timeout: float = 3.0) -> dict:
    """The master's own account (``/json/``): its status and its workers' states and cores; or why it has none."""
    pids = _pids(cluster)
    out = {"name": cluster.name, "master": cluster.master_url, "status_page": cluster.status_url,
           "processes": {p: {"pid": pid, "alive": _alive(pid), "log": str(cluster.log(p))} for p, pid in pids.items()}}
    try:
        with urllib.request.urlopen(cluster.status_url, timeout=timeout) as r:
            page = json.loads(r.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as e:
        return {**out, "status": "DOWN", "error": str(e), "workers": [], "alive_workers": 0, "cores": 0}
    workers = [{"id": w.get("id"), "state": w.get("state"), "cores": w.get("cores"), "memory_mb": w.get("memory")}
               for w in page.get("workers", [])]
    alive = [w for w in workers if w["state"] == "ALIVE"]
    return {**out, "status": page.get("status", "UNKNOWN"), "workers": workers, "alive_workers": len(alive),
            "cores": sum(w["cores"] or 0 for w in alive)}


def up(home: Path, name: str = DEFAULT_NAME, workers: int = 2, cores: int = 1, memory: str = "1g",
       port: int = DEFAULT_PORT, webui_port: int = DEFAULT_WEBUI_PORT, timeout: float = 90.0,
       progress: Callable[[str], None] = print) -> Standalone:
    """Start the master and ``workers`` workers (``cores`` and ``memory`` each) unless this cluster runs already;
    return once the master lists them all ALIVE."""
    existing = state(home, name)
    if existing is not None and status(existing)["alive_workers"] >= existing.workers:
        progress(f"Spark cluster {name} is up: {existing.master_url}")
        return existing
    if existing is not None:
        down(home, name, progress=progress)
    if workers < 1 or cores < 1:
        raise ConfigError(f"a standalone cluster needs at least one worker with one core, found: "
                          f"{workers} worker(s) of {cores} core(s)")
    worker_ui = [webui_port + 1 + i for i in range(workers)]
    taken = [p for p in (port, webui_port, *worker_ui) if not _free(p)]
    if taken:
        raise ConfigError(f"port(s) {', '.join(map(str, taken))} on {HOST} already taken: stop what listens "
                          "there or choose --port / --webui-port")
    launcher, env = spark_class(), _env()
    folder = Path(home) / STATE / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cluster = Standalone(name, folder, port, webui_port, workers, cores, memory)
    (folder / "cluster.json").write_text(json.dumps({"port": port, "webui_port": webui_port, "workers": workers,
                                                     "cores": cores, "memory": memory}))
    pids: dict[str, int] = {}
    procs: dict[str, subprocess.Popen] = {}

    def start(process: str, args: list[str]) -> None:
        with open(cluster.log(process), "ab") as log:
            proc = subprocess.Popen([str(launcher), *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=folder, start_new_session=True)
        pids[process], procs[process] = proc.pid, proc
        (folder / "pids.json").write_text(json.dumps(pids))

    progress(f"starting Spark master {cluster.master_url} (status {cluster.status_url})")
    start("master", ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                     "--webui-port", str(webui_port)])
    for i in range(workers):
        work = folder / f"worker{i + 1}-work"
        work.mkdir()
        progress(f"starting Spark worker {i + 1} ({cores} core(s), {memory})")
        start(f"worker{i + 1}", ["org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", HOST,
                                 "--cores", str(cores), "--memory", memory, "--work-dir", str(work),
                                 "--webui-port", str(worker_ui[i])])
    deadline = time.monotonic() + timeout
    while True:
        s = status(cluster)
        dead = [p for p, proc in procs.items() if proc.poll() is not None]
        if dead:
            down(home, name, progress=lambda _: None)
            raise SparkClusterError(f"Spark {', '.join(dead)} exited at start: see {cluster.log(dead[0])}")
        if s["alive_workers"] >= workers:
            progress(f"Spark cluster {name} is up: {cluster.master_url}, {s['alive_workers']} workers, "
                     f"{s['cores']} cores")
            return cluster
        if time.monotonic() > deadline:
            logs = ", ".join(str(cluster.log(p)) for p in pids)
            down(home, name, progress=lambda _: None)
            raise SparkClusterError(f"{s['alive_workers']} of {workers} Spark workers registered with "
                                    f"{cluster.master_url} within {timeout:.0f} s (master: {s['status']}); "
                                    f"see {logs}")
        time.sleep(1.0)


def down(home: Path, name: str = DEFAULT_NAME, grace_s: float = 15.0,
         progress: Callable[[str], None] = print) -> bool:
    """Stop the processes this cluster started (workers first); False when there was no such cluster."""
    cluster = state(home, name)
    if cluster is None:
        return False
    pids = _pids(cluster)
    for process in sorted(pids, key=lambda p: p == "master"):     # the workers, then the master
        pid = pids[process]
        if not _alive(pid):
            continue
        progress(f"stopping Spark {process} (pid {pid})")
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + grace_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    (cluster.folder / "pids.json").unlink(missing_ok=True)
    (cluster.folder / "cluster.json").unlink(missing_ok=True)
    return True


def executor_conf(master: str) -> dict[str, str]:
    """What a job needs on a standalone master (nothing for ``local[...]``): the executors run this interpreter,
    small enough for the workers of this machine."""
    if not master.startswith("spark://"):
        return {}
    return {"spark.pyspark.python": sys.executable, "spark.executor.memory": "768m", "spark.executor.cores": "1",
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable}
