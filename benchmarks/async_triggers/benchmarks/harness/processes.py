"""The processes of a run: the external queue's worker processes, and which processes count as the application,
the database and the queue for the resource sampler."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence

from async_triggers import config as pconfig
from async_triggers.benchmarks.apps.cassandra import Target, worker_args, worker_env
from async_triggers.benchmarks.harness import resources

SCRATCH = Path(tempfile.gettempdir()) / "async-triggers-bench"   # the workers' logs and done files


def start_queue_workers(count: int, url: str, target: Target) -> tuple[list[subprocess.Popen], list[Path]]:
    """``count`` external-queue workers consuming from ``url`` and writing to ``target``; each records the tweets
    it completed in its own done file."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    procs, files = [], []
    for i in range(count):
        done = SCRATCH / f"done-{i}.csv"
        done.unlink(missing_ok=True)
        files.append(done)
        log = open(SCRATCH / f"worker-{i}.log", "w")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "async_triggers.benchmarks.apps.external_queue", "worker", "--url", url,
             *worker_args(target), "--record", str(done)], stdout=log, stderr=subprocess.STDOUT,
            cwd=str(pconfig.REPO_ROOT), env=worker_env(target)))
    return procs, files


def stop_workers(procs: Iterable[subprocess.Popen]) -> None:
    """SIGTERM, then SIGKILL to those still running 30 s later."""
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


def node_pids(settings, cluster_name: str) -> list[int]:
    """The pids of the cluster's Cassandra nodes that are up now."""
    from async_triggers import cluster as cluster_mod
    return [n.pid for n in cluster_mod.node_status(settings, cluster_name) if n.pid and n.up]


def resource_groups(settings, cluster_name: str, workers: Sequence[subprocess.Popen],
                    broker_pids: Callable[[], dict] | None,
                    jvm_sends: bool = False) -> dict[str, Callable[[], list[int]]]:
    """The pids of each component, asked anew at every sample: the application (Spark's Python workers of this
    process, its Spark JVM when the JVM sender sends from it, and the queue workers), the Cassandra nodes, and the
    broker when the approach has one."""
    me = os.getpid()

    def spark_worker(p) -> bool:
        # the Python workers Spark's pyspark.daemon forks to run the tasks (not the daemon, not the JVM)
        daemon = resources.cmdline_contains("pyspark.daemon")
        return daemon(p) and p.parent() is not None and daemon(p.parent())

    def app_pids():
        spark = resources.descendants(me, spark_worker)
        # local Spark's JVM (pyspark starts it through SparkSubmit): the JVM sender's requests go out from it
        jvm = resources.descendants(me, resources.cmdline_contains("org.apache.spark.deploy.SparkSubmit")) if jvm_sends else []
        return [*spark, *jvm, *(w.pid for w in workers if w.poll() is None)]

    groups = {"app": app_pids, "db": lambda: node_pids(settings, cluster_name)}
    if workers:
        groups["queue"] = lambda: list(broker_pids().values())
    return groups
