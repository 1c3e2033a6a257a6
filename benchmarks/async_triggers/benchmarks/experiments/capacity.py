"""The load generator's own capacity (experiment ``capacity``, app ``loadgen``): what it can offer on this machine,
so that no experiment measures the generator instead of an approach (target: at least 3x the highest rate any
experiment offers).

Two senders, each with the experiments' Spark tasks and in-flight bound, in steps of growing rate
(:func:`async_triggers.spark_jobs.loadgen.measure_capacity`): one answered at once (the generator alone), and
``SELECT release_version FROM system.local`` through the driver against the run's cluster with nothing deployed (the
generator with the driver's request path, the cluster doing no work): the Java driver of the JVM sender the
experiments use (``jvm_sender``), and beside it the Python driver's sender (``release_version_python``). A step keeps up when at most 1 % of its
requests went out behind (more than 250 ms late) through the generator, at most 1 % waited for an answer, and none
failed; the capacity is the highest such step (when the first misses, the steps go down to the first that keeps
up). One results file per sender (``config.sender``), the capacity as
``throughput_msg_s``.
With ``capacity_blocking``, the same query also the way the generator sent before it was asynchronous
(``release_version_blocking``: ``concurrency`` blocking threads per task), for the ratio side by side.
"""
from __future__ import annotations

import dataclasses

from async_triggers.benchmarks import results
from async_triggers.benchmarks.apps.cassandra import SESSIONS, Target
from async_triggers.benchmarks.harness.testbed import Testbed

NULL, CLUSTER, BLOCKING = "null", "release_version", "release_version_blocking"
PYTHON_DRIVER = "release_version_python"   # the Python driver's asynchronous sender, beside the JVM's


class _ReleaseVersionQuery:
    """``SELECT release_version FROM system.local``, prepared once per sender on the target's shared session."""

    def __init__(self, target: Target):
        self.session = SESSIONS.get(target)
        self.query = self.session.prepare("SELECT release_version FROM system.local")

    def close(self) -> None:
        pass


class _ReleaseVersion(_ReleaseVersionQuery):
    def send_async(self, request, done) -> None:
        self.session.execute_async(self.query).add_callbacks(lambda _rows: done(None), done)


class _ReleaseVersionBlocking(_ReleaseVersionQuery):
    """The same query the way the generator sent before it was asynchronous: one blocking request per thread."""

    def send(self, request) -> None:
        self.session.execute(self.query)


@dataclasses.dataclass(frozen=True)
class ReleaseVersionApp:
    """A sender factory (picklable) asking the target's cluster for its release version: asynchronously, or with
    ``blocking`` from ``concurrency`` threads per task, as the generator sent before (for comparison); with ``jvm``
    through the Java driver (``spark_jobs/jvm_sender.py``)."""
    target: Target
    blocking: bool = False
    jvm: bool = False

    def __call__(self, slot) -> _ReleaseVersionQuery:
        return (_ReleaseVersionBlocking if self.blocking else _ReleaseVersion)(self.target)

    def jvm_requests(self):
        from async_triggers.spark_jobs.jvm_sender import QUERY, JvmRequests
        if not self.jvm or self.blocking:
            return None
        return JvmRequests(QUERY, "SELECT release_version FROM system.local", "LOCAL_ONE", self.target.contact_points,
                           self.target.port)


def run(bed: Testbed) -> dict[str, dict]:
    from async_triggers.spark_jobs import loadgen
    cfg = bed.cfg
    bed.use_cluster(cfg.db_nodes)
    out = {}
    senders = [(NULL, loadgen.async_null_sender), (CLUSTER, ReleaseVersionApp(bed.target(), jvm=cfg.jvm_sender))]
    if cfg.jvm_sender:
        senders.append((PYTHON_DRIVER, ReleaseVersionApp(bed.target())))
    if cfg.capacity_blocking:
        senders.append((BLOCKING, ReleaseVersionApp(bed.target(), blocking=True)))
    for name, factory in senders:
        bound = (f"{cfg.concurrency} threads" if name == BLOCKING else f"{cfg.in_flight} in flight"
                 + (", the JVM's driver" if name == CLUSTER and cfg.jvm_sender else ""))
        bed.progress(f"load generator capacity, sender {name}: {cfg.partitions} tasks, {bound} each, steps of "
                     f"{cfg.capacity_step_s:g} s from {cfg.capacity_start_rate:g}/s")
        found = loadgen.measure_capacity(bed.spark_session(), cfg.partitions, factory,
                                         start_rate=cfg.capacity_start_rate, factor=cfg.rate_factor,
                                         max_rate=cfg.capacity_max_rate, step_s=cfg.capacity_step_s,
                                         concurrency=cfg.concurrency, in_flight=cfg.in_flight, seed=cfg.seed,
                                         progress=lambda m: bed.progress("  " + m), keep_records=True)
        records = found.pop("records")
        run = results.summarise(records, experiment="capacity", app="loadgen", db_nodes=bed.nodes,
                                duration_s=cfg.capacity_step_s,
                                in_flight=cfg.concurrency if name == BLOCKING else cfg.in_flight,
                                config={**bed.run_config(), "sender": name,
                                        "driver": "jvm" if name == CLUSTER and cfg.jvm_sender else "python", **found},
                                throughput_msg_s=found["capacity_msg_s"] or 0.0)
        run["run_id"] += f"-{name}"
        results.write_run(cfg.out, run)
        best = found["capacity_msg_s"]
        bed.progress(f"  capacity with sender {name}: "
                     + (f"below the lowest step ({found['steps'][-1]['rate']:,.0f}/s)" if best is None
                        else f"{best:,.0f} requests/s")
                     + ("" if best is None or best < cfg.capacity_max_rate else " (the highest step tried)"))
        out[name] = run
    return out
