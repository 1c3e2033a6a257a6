"""Tables 3–4's node counts projected from measured per-message costs.

The report measured Table 4 on 21 machines: 16 Cassandra nodes, and as many application and queue machines as it
took to saturate them. We have one machine, so we measure a saturating run at a few nodes with resources
(benchmarks/async_triggers/benchmarks/harness/resources.py) and project: every component's cost per completed message (CPU seconds, network bytes)
times the throughput to be carried, spread over as many processes as that work needs.

    for run in report_scale(load_runs(results_dir)):     # 16 nodes, throughput scaled linearly
        write_run(results_dir, run)                      # Table 4 then shows them, marked projected

The rule, per component of the measured run (``messages`` completed in ``window_s``):

* CPU per message = ``cpu_s / messages``, network bytes per message = ``net_bytes / messages``, memory per process
  = ``memory_gb / processes``;
* application and queue processes = max(1, ceil(throughput × CPU per message / ``max_cpu_per_process``)): one
  process stands for one machine of the report, and does at most ``max_cpu_per_process`` cores' worth of work
  (0.8: 80 % of one core, the headroom a loaded machine keeps). One core, because our CPU % is per process with
  100 % = one core busy, the unit in which we compare with the report's "average CPU load" per machine; a
  component whose processes use several cores each (a JVM, the broker) gets more processes than it would
  machines;
* database processes = the database nodes asked for (they are the experiment's variable, not a consequence);
* the projected run carries one second of that work: ``window_s`` = 1 and ``messages`` = throughput, ``cpu_s`` =
  throughput × CPU per message, ``net_bytes`` = throughput × bytes per message, ``memory_gb`` = memory per process ×
  processes. The report's derivations (``report.runs.component_figures``) then give CPU % = 100 × throughput × CPU per
  message / processes, network = throughput × bytes per message, and the application's cost per message is the
  measured one.

Costs per message are assumed constant across node counts: the model cannot see a database node's fixed costs
(gossip, compaction) grow or shrink with the cluster.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from async_triggers.benchmarks.report import reference
from async_triggers.benchmarks.errors import ResultsError
from async_triggers.benchmarks.report.runs import latest
from async_triggers.benchmarks.results import COMPONENTS, SCHEMA, SERIES_KEYS, validate

MAX_CPU_PER_PROCESS = 0.8
RULE = ("app and queue processes = max(1, ceil(throughput * cpu_s per message / max_cpu_per_process)); db processes "
        "= db_nodes; cpu_s and net_bytes = throughput * per-message cost over window_s = 1; memory_gb = measured "
        "memory per process * processes")


def per_message_costs(run: dict) -> dict[str, dict | None]:
    """Per component of a measured run: ``cpu_s`` and ``net_bytes`` per completed message, ``memory_gb`` per
    process; None for a component the approach does not have."""
    rid = run.get("run_id", "run")
    res = run.get("resources")
    if res is None:
        raise ResultsError(f"run {rid}: no resources were measured, so there are no per-message costs to project "
                           "from (sample them with async_triggers.benchmarks.harness.resources.Sampler)")
    messages = res.get("messages")
    if not messages:
        raise ResultsError(f"run {rid}: 'resources.messages' is {messages!r}: no messages completed in the "
                           "measured window, so there are no per-message costs")
    costs: dict[str, dict | None] = {}
    for comp in COMPONENTS:
        c = res.get(comp)
        if c is None:
            costs[comp] = None
            continue
        if not c["processes"]:
            raise ResultsError(f"run {rid}: 'resources.{comp}.processes' is 0, so it has no memory per process")
        costs[comp] = {"cpu_s": c["cpu_s"] / messages, "net_bytes": c["net_bytes"] / messages,
                       "memory_gb": c["memory_gb"] / c["processes"]}
    return costs


def processes_for(throughput_msg_s: float, cpu_s_per_message: float, max_cpu_per_process: float) -> int:
    """How many processes carry ``throughput_msg_s`` when none may be busier than ``max_cpu_per_process`` cores."""
    cores = throughput_msg_s * cpu_s_per_message / max_cpu_per_process
    return max(1, math.ceil(round(cores, 9)))    # round: 0.8 * 3 / 0.8 must be 3, not 4


def project(run: dict, db_nodes: int, throughput_msg_s: float,
            max_cpu_per_process: float = MAX_CPU_PER_PROCESS) -> dict:
    """A saturating run of ``run``'s approach at ``db_nodes`` database nodes carrying ``throughput_msg_s``,
    projected from ``run``'s measured per-message costs (the rule is in the module docstring), ``projected`` true.

    Nothing was sent, so the requests are all zero and the time series one empty bucket; ``started_at`` is the
    measured run's, so a real run at the same node count made later is the one the report prefers.
    """
    rid = run.get("run_id", "run")
    if run.get("projected"):
        raise ResultsError(f"run {rid} is itself a projection: project from a measured run")
    if run.get("experiment") != "saturating":
        raise ResultsError(f"run {rid} is a {run.get('experiment')!r} run: the model projects the costs of a "
                           "saturating run (Tables 3-4)")
    if isinstance(db_nodes, bool) or not isinstance(db_nodes, int) or db_nodes < 1:
        raise ResultsError(f"'db_nodes' must be a positive integer, found: {db_nodes!r}")
    for name, value in (("throughput_msg_s", throughput_msg_s), ("max_cpu_per_process", max_cpu_per_process)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
            raise ResultsError(f"'{name}' must be a number above 0, found: {value!r}")
    costs = per_message_costs(run)
    throughput = float(throughput_msg_s)
    resources: dict[str, Any] = {"window_s": 1.0, "messages": throughput}
    for comp in COMPONENTS:
        cost = costs[comp]
        if cost is None:
            resources[comp] = None
            continue
        processes = db_nodes if comp == "db" else processes_for(throughput, cost["cpu_s"], max_cpu_per_process)
        resources[comp] = {"processes": processes, "cpu_s": throughput * cost["cpu_s"],
                           "memory_gb": cost["memory_gb"] * processes, "net_bytes": throughput * cost["net_bytes"]}
    source_res = run["resources"]
    projected = {
        "schema": SCHEMA,
        "run_id": f"{rid}-projected-{db_nodes}n",
        "experiment": "saturating",
        "app": run["app"],
        "db_nodes": db_nodes,
        "started_at": run["started_at"],
        "duration_s": 1.0,
        "config": {
            "projected_from": rid,
            "source_db_nodes": run["db_nodes"],
            "source_throughput_msg_s": run.get("throughput_msg_s"),
            "source_window_s": source_res["window_s"],
            "source_messages": source_res["messages"],
            "per_message": costs,
            "max_cpu_per_process": max_cpu_per_process,
            "rule": RULE,
            "note": "projected by async_triggers.benchmarks.report.projection, not measured: no requests were sent, the time series is empty",
        },
        "requests": {"scheduled": 0, "ok": 0, "error": 0, "dropped": 0, "late": 0},
        "offered_msg_s": None,
        "acked_msg_s": None,
        "throughput_msg_s": throughput,
        "response_ms": None,
        "propagation_lag_ms": None,
        "drain_s": None,
        "fanout_rows_s": None,
        "verification": None,
        "resources": resources,
        "projected": True,
        "timeseries": {"bucket_s": 1.0, "t_s": [0.0], **{k: [None if k.startswith("response_ms") else 0]
                                                          for k in SERIES_KEYS}, "propagated_msg_s": None},
        "events": [],
        "machine": run.get("machine"),
        "commit": run.get("commit"),
    }
    validate(projected, projected["run_id"])
    return projected


def report_scale(runs: Sequence[dict], db_nodes: int = reference.TABLE_4["db_nodes"],
                 max_cpu_per_process: float = MAX_CPU_PER_PROCESS) -> list[dict]:
    """Table 4's runs, projected: for each of the report's approaches, its latest measured saturating run with
    resources and a throughput at the smallest node count measured, projected to ``db_nodes`` (16) at that
    throughput scaled linearly, × ``db_nodes`` / measured nodes.

    Linear scaling is what the report's Figure 8(a) shows ("All approaches scale equally well as the number of
    nodes are increased") and what Table 4's node counts imply; ours is an assumption, not a measurement, and the
    projected runs say so (``projected``). An approach with a measured run at ``db_nodes`` already, or none with
    resources, gets no projection.
    """
    projected = []
    for app in reference.APPROACHES:
        measured = [r for r in runs if r["experiment"] == "saturating" and r["app"] == app
                    and not r.get("projected")]
        if any(r["db_nodes"] == db_nodes and r.get("resources") is not None for r in measured):
            continue
        usable = [r for r in measured if r.get("resources") is not None and r.get("throughput_msg_s")]
        if not usable:
            continue
        nodes = min(r["db_nodes"] for r in usable)
        source = latest(usable, "saturating", app, nodes)
        projected.append(project(source, db_nodes, source["throughput_msg_s"] * db_nodes / nodes,
                                 max_cpu_per_process))
    return projected
