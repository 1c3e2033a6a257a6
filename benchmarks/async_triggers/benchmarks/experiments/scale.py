"""Scalability (§6.5, Figure 8): at each size of ``scale_nodes`` (the db_nodes size is the other experiments'),
every approach's saturating throughput (the same search, stopped at ``scale_search_ratio``: the figure shows a
trend over sizes) and its response times at 80 % of that size's lowest saturating rate; each size's repetitions
one after the other (one cluster switch per size)."""
from __future__ import annotations

from async_triggers.benchmarks import results
from async_triggers.benchmarks.experiments import eighty_pct, saturating
from async_triggers.benchmarks.harness.testbed import Testbed

REPEATS_ITSELF = True   # run_experiments calls it once: the repetitions are inside, size by size


def run(bed: Testbed) -> dict[int, list[dict[str, dict]]]:
    out: dict[int, list[dict[str, dict]]] = {}
    for nodes in bed.cfg.scale_nodes:
        for repetition in range(1, bed.cfg.repeat + 1):
            bed.repetition = repetition
            bed.progress(f"scale: {nodes} nodes, repetition {repetition} of {bed.cfg.repeat}")
            best = saturating.run(bed, nodes=nodes, ratio=bed.cfg.scale_search_ratio)
            rates = {app: results.saturating_rate(run) for app, run in best.items() if results.saturating_rate(run)}
            eighty_pct.run(bed, nodes=nodes, rates=rates)
            out.setdefault(nodes, []).append(best)
    return out
