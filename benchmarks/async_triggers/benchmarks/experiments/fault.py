"""The fault run (§6.4, Figure 7): 0.8 x the lowest saturating rate on ``fault_nodes`` nodes, node2 killed (-9)
at ``kill_at_s`` and restarted at ``restart_at_s``; then Spark verifies every propagation."""
from __future__ import annotations

import time

from async_triggers.benchmarks.experiments.saturating import saturating_rates
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed

VICTIM = "node2"


def run(bed: Testbed) -> list[dict]:
    from async_triggers import cluster as cluster_mod
    from async_triggers.spark_jobs.loadgen import Phase
    rate = 0.8 * min(saturating_rates(bed).values())
    bed.use_cluster(bed.cfg.fault_nodes)
    cfg = bed.cfg

    def kill_and_restart(launched: float) -> list[dict]:
        # the load generator starts its schedule a few seconds after launch (Spark, then a barrier)
        offset = launched + loadgen_start_s()
        time.sleep(max(0.0, offset + cfg.kill_at_s - time.time()))
        cluster_mod.kill_node(bed.settings, VICTIM, name=bed.cluster_name, progress=bed.progress)
        killed = time.time()
        time.sleep(max(0.0, offset + cfg.restart_at_s - time.time()))
        restarted = time.time()
        cluster_mod.start_node(bed.settings, VICTIM, name=bed.cluster_name, progress=bed.progress)
        return [{"at": killed, "what": f"kill -9 {VICTIM}"}, {"at": restarted, "what": f"restart {VICTIM}"},
                {"at": time.time(), "what": f"{VICTIM} answers CQL"}]

    return [run_app(bed, "fault", app, [Phase(cfg.fault_s, rate)], during=kill_and_restart, verify=True,
                    config={"base_rate": rate / 0.8, "victim": VICTIM})[0] for app in cfg.apps]


def loadgen_start_s() -> float:
    """How long after the Spark job is launched its schedule starts (Python workers, senders, barrier, delay)."""
    from async_triggers.spark_jobs.loadgen import DEFAULT_START_DELAY_S
    return 3.0 + DEFAULT_START_DELAY_S
