"""The scale point (the second point of Figure 8): saturating throughput and resources on ``fault_nodes`` nodes."""
from __future__ import annotations

from async_triggers.benchmarks.experiments import saturating
from async_triggers.benchmarks.harness.testbed import Testbed


def run(bed: Testbed) -> dict[str, dict]:
    return saturating.run(bed, nodes=bed.cfg.fault_nodes)
