"""The benchmark suite's smoke version on the session's 3-node cluster: every experiment of
``ctl bench all`` for the three applications, a few seconds per phase, with the real parts — Spark's open-loop
load generator, the flow in Cassandra, a private RabbitMQ node with worker processes — then the report.

It proves the machinery, not the figures: every run's requests are acknowledged, every propagation completes and
the fault runs' Spark verification finds nothing missing after a node was killed and restarted mid-run.
Its own target, ``make test-bench-smoke`` (~10 min): it proves no guarantee, so ``make test`` leaves it out."""
from __future__ import annotations

import json

import pytest

from broker_helpers import require_broker
from conftest import TEST_CLUSTER
from helpers import run_ctl

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.broker, pytest.mark.own_target]


@pytest.fixture(scope="module")
def smoke(cluster, cluster_settings, tmp_path_factory):
    """``ctl bench all --smoke --cluster attest`` (its own process: its Spark has the connector, the test
    suite's in-process Spark has not); the results directory and the report."""
    require_broker()
    out = tmp_path_factory.mktemp("bench")
    result = run_ctl(cluster_settings, "bench", "all", "--smoke", "--cluster", TEST_CLUSTER, "--out", str(out),
                     timeout=1800)
    print(result.stderr[-3000:])
    assert result.returncode == 0, result.stderr[-3000:]
    report = out / "report.md"
    assert f"report: {report}" in result.stdout
    return out, report


def _runs(out):
    from async_triggers.benchmarks import results
    return results.load_runs(out)


def test_should_run_every_experiment_for_each_application_and_complete_every_propagation(smoke):
    out, _ = smoke
    runs = [r for r in _runs(out) if not r["projected"]]
    # the approach whose own rate is the lowest (the common burst's base) had its own burst's schedule in the
    # common burst: that run stands for both, run once
    by_id = {r["run_id"]: r for r in runs}
    reused = [r for r in runs if r["experiment"] == "burst_own" and r["config"].get("same_run_as")]
    assert reused, "no own burst was the common burst of the same schedule"
    for run in reused:
        same = by_id[run["config"]["same_run_as"]]
        assert (same["experiment"], same["app"], same["requests"]) == ("burst", run["app"], run["requests"])
        assert run["config"]["base"] == "own" and same["config"]["base"] == "lowest"
    apps = ("synchronous", "external_queue", "integrated")
    for experiment in ("saturating", "80pct", "80pct_own", "burst", "burst_own", "fault"):
        got = {r["app"] for r in runs if r["experiment"] == experiment}
        # the plain write (no flow) is searched with the same rule beside the approaches, and runs at the integrated
        # approach's own 80 % rate beside it
        plain = {"plain"} if experiment in ("saturating", "80pct_own") else set()
        assert got == set(apps) | plain, f"{experiment}: {got}"
    for run in runs:
        if run["experiment"] in ("bulk_writer", "capacity"):
            continue
        # every run says how the generator kept its schedule, and its raw requests are compressed beside it (those
        # of the run whose schedule it shares, for an own burst that a common burst ran already)
        assert set(run["loadgen"]) >= {"own_late", "waited", "own_lateness_ms"} and isinstance(run["valid"], bool)
        measured = run["config"].get("same_run_as") or run["run_id"]
        assert (out / f"{measured}.requests.csv.gz").is_file(), run["run_id"]
        assert run["requests"]["ok"] > 0 and run["requests"]["error"] == 0, f"{run['run_id']}: {run['requests']}"
        assert run["config"]["drained"] is True, f"{run['run_id']}: propagations still pending"
        assert run["throughput_msg_s"] > 0, run["run_id"]
        if run["app"] == "plain":    # a tweet write and nothing to propagate
            assert run["propagation_lag_ms"] is None, run["run_id"]
            continue
        lag = run["propagation_lag_ms"]
        assert lag is not None and lag["max"] >= lag["median"] >= 0, run["run_id"]
        # a fault run's killed node comes back as a new process
        assert run["resources"]["db"]["processes"] == 3 + (run["experiment"] == "fault"), run["run_id"]
        assert run["resources"]["app"]["cpu_s"] > 0, run["run_id"]
        assert (run["resources"]["queue"] is not None) == (run["app"] == "external_queue"), run["run_id"]
        series = run["timeseries"]["propagated_msg_s"]
        assert series is not None and sum(series) > 0, run["run_id"]


def test_should_measure_the_load_generator_capacity_with_both_senders(smoke):
    out, _ = smoke
    capacity = {r["config"]["sender"]: r for r in _runs(out) if r["experiment"] == "capacity"}
    # release_version through the JVM sender, release_version_python through the Python driver beside it
    assert sorted(capacity) == ["null", "release_version", "release_version_python"]
    assert capacity["release_version"]["config"]["driver"] == "jvm"
    for sender, run in capacity.items():
        steps = run["config"]["steps"]
        assert steps and steps[0]["rate"] == 200.0 and run["app"] == "loadgen", sender
        kept = [s["rate"] for s in steps if s["kept_up"]]
        assert run["throughput_msg_s"] == (max(kept) if kept else 0.0), (sender, steps)


def test_should_lose_no_propagation_in_the_fault_runs(smoke):
    out, _ = smoke
    faults = [r for r in _runs(out) if r["experiment"] == "fault"]
    assert len(faults) == 3
    for run in faults:
        v = run["verification"]
        assert v["expected"] > 0 and v["unexpected"] == 0, f"{run['run_id']}: {v}"
        assert [e["what"] for e in run["events"]][:2] == ["kill -9 node2", "restart node2"], run["events"]
    missing = {r["app"]: r["verification"]["missing"] for r in faults}
    assert missing == {"synchronous": 0, "external_queue": 0, "integrated": 0}, missing


def test_should_measure_the_fan_out_of_the_bulk_writer_and_the_flow(smoke):
    out, _ = smoke
    bulk = {r["app"]: r for r in _runs(out) if r["experiment"] == "bulk_writer"}
    assert bulk["bulk_writer"]["fanout_rows_s"] > 0
    assert bulk["integrated"]["fanout_rows_s"] > 0
    assert bulk["integrated"]["config"]["rows"] >= bulk["integrated"]["config"]["followers"]


def test_should_write_a_report_with_every_table_and_figure(smoke):
    out, report = smoke
    text = report.read_text()
    for title in ("Table 1", "Table 2", "Table 3", "Table 4", "Targets"):
        assert title in text
    assert "not measured" not in text.split("## Tables")[0], "a target was left unmeasured"
    assert sorted(p.name for p in out.glob("*.png"))
    projected = [r for r in _runs(out) if r["projected"]]
    assert {r["app"] for r in projected} == {"synchronous", "external_queue", "integrated"}
    assert all(r["db_nodes"] == 16 for r in projected)
    assert "What we measured: " in text and "| load generator capacity >= 3x the highest offered rate, alone" in text
    raw = json.loads(next(out.glob("*-80pct-integrated-3n.json")).read_text())
    assert raw["timeseries"]["propagated_msg_s"] is not None
