"""A short differential fuzz campaign (``ctl fuzz run``, pycontrol/async_triggers/fuzz) on the session's real 3-node cluster (RF 2):
two seeded random histories of the CQL write shapes, from concurrent clients with skewed clocks, against the flows of
a drawn design (copies, lineage indexes, a fan-out of several pages following its table while the histories add and
remove its rows, a direct write and an index into one table, a
cascade, a target partitioned by a clustering column; collections, UDTs, statics, empty values), the first with a
replica stopped (hints off) and read repair after; each drained, then every flow checked by the verify job.
``make fuzz`` runs 50 seeds of five designs on a cluster of its own."""
from __future__ import annotations

import json

import pytest

from helpers import run_ctl
from async_triggers.fuzz import generator, schema

SEED, SEEDS, OPS = 4, 2, 25   # seed 4 stops node2 for six operations, seed 5 stops nothing (both of design 0)


def test_should_draw_a_stopped_replica_for_one_seed_and_none_for_the_next():
    assert generator.generate(SEED, schema.draw(0), OPS).fault is not None
    assert generator.generate(SEED + 1, schema.draw(0), OPS).fault is None


@pytest.mark.spark
@pytest.mark.timeout(1800)
def test_should_derive_exactly_what_the_source_holds_after_random_histories_of_every_write_shape(
        cluster, cluster_settings, tmp_path):
    from conftest import TEST_CLUSTER
    result = run_ctl(cluster_settings, "fuzz", "run", "--cluster", TEST_CLUSTER, "--seeds", str(SEEDS), "--seed",
                     str(SEED), "--ops", str(OPS), "--out", str(tmp_path), "--no-shrink", timeout=1800)
    print(result.stdout)
    print(result.stderr[-3000:])
    seeds = [line for line in result.stdout.splitlines() if line.startswith("seed ")]
    assert len(seeds) == SEEDS, result.stdout + result.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"] == SEEDS and summary["ops"] == SEEDS * OPS
    assert summary["shapes"]["replica_down"] == 1 and summary["shapes"]["batch_unlogged"] > 0, summary["shapes"]
    assert summary["failed_seeds"] == [] and result.returncode == 0, "\n".join(seeds)
