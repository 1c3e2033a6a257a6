"""async_triggers.benchmarks.report.projection: saturating runs projected from measured per-message costs, checked through the report's own
derivations (component_figures, app_cost_per_message, Table 4's cells) and the results schema."""
from __future__ import annotations

import pytest

from async_triggers.benchmarks import results
from async_triggers.benchmarks.report import projection, reference, runs as report_runs, tables
from async_triggers.benchmarks.errors import ResultsError
from async_triggers.spark_jobs.loadgen import Record

T0 = 1_700_000_000.0
MACHINE = {"cpu": "Test CPU 2.0GHz", "cores": 2, "memory_gb": 24.0, "os": "Linux-6.1", "python": "3.11.7"}


def comp(processes, cpu_s, memory_gb, net_bytes):
    return {"processes": processes, "cpu_s": cpu_s, "memory_gb": memory_gb, "net_bytes": net_bytes}


# 100 s windows of 100 000 completed messages, as a saturating run at 2 nodes would measure them
INTEGRATED = {"window_s": 100, "messages": 100_000, "app": comp(1, 5, 1.0, 20e6), "db": comp(2, 130, 7.0, 800e6),
              "queue": None}
EXTERNAL_QUEUE = {"window_s": 100, "messages": 100_000, "app": comp(3, 90, 2.25, 400e6),
                  "db": comp(2, 110, 6.5, 900e6), "queue": comp(1, 20, 0.5, 50e6)}


def measured(app, throughput_msg_s, resources=None, db_nodes=2, offset=0.0, experiment="saturating"):
    start = T0 + offset
    records = [Record(0, i, start + i, start + i, start + i + 0.002, "ok", False, None) for i in range(3)]
    return results.summarise(records, experiment=experiment, app=app, db_nodes=db_nodes, duration_s=3.0,
                             throughput_msg_s=throughput_msg_s, resources=resources, machine=MACHINE,
                             commit="c0ffee")


def test_should_project_the_report_figures_from_the_costs_per_message():
    run = measured("integrated", 1260, INTEGRATED)
    p = projection.project(run, 16, 10_080)
    results.validate(p)
    assert p["run_id"] == f"{run['run_id']}-projected-16n" == "20231114T221320Z-saturating-integrated-2n-projected-16n"
    assert (p["experiment"], p["app"], p["db_nodes"], p["projected"]) == ("saturating", "integrated", 16, True)
    assert p["throughput_msg_s"] == 10_080 and p["started_at"] == run["started_at"]
    assert p["resources"]["window_s"] == 1.0 and p["resources"]["messages"] == 10_080
    assert p["config"]["projected_from"] == run["run_id"] and p["config"]["rule"] == projection.RULE
    assert p["config"]["source_db_nodes"] == 2 and p["config"]["max_cpu_per_process"] == 0.8
    assert p["requests"] == {"scheduled": 0, "ok": 0, "error": 0, "dropped": 0, "late": 0}
    assert p["timeseries"]["t_s"] == [0.0] and p["response_ms"] is None
    # app: 0.05 ms per message * 10 080 msg/s = 0.504 cores -> one process at 50.4 %, 200 bytes per message
    app = report_runs.component_figures(p, "app")
    assert app["processes"] == 1
    assert app["cpu_pct"] == pytest.approx(50.4) and app["network_mb_s"] == pytest.approx(2.016)
    assert app["memory_gb"] == pytest.approx(1.0)
    # db: the 16 nodes asked for, 1.3 ms per message over them; 8000 bytes per message; 3.5 GB per node
    db = report_runs.component_figures(p, "db")
    assert db["processes"] == 16
    assert db["cpu_pct"] == pytest.approx(100 * 10_080 * 1.3e-3 / 16)
    assert db["network_mb_s"] == pytest.approx(80.64) and db["memory_gb"] == pytest.approx(56.0)
    assert report_runs.component_figures(p, "queue") is None and p["resources"]["queue"] is None
    # the application's cost per message is the measured one
    assert report_runs.app_cost_per_message(run) == pytest.approx((0.05, 200.0))
    assert report_runs.app_cost_per_message(p) == pytest.approx((0.05, 200.0))


def test_should_project_as_many_processes_as_the_cpu_needs():
    run = measured("external_queue", 1250, EXTERNAL_QUEUE)
    p = projection.project(run, 16, 10_000)
    # app: 0.9 ms per message * 10 000 msg/s = 9 cores, at most 0.8 each -> 12 processes at 75 %
    app, queue = report_runs.component_figures(p, "app"), report_runs.component_figures(p, "queue")
    assert app["processes"] == 12 and app["cpu_pct"] == pytest.approx(75.0)
    assert app["memory_gb"] == pytest.approx(0.75 * 12) and app["network_mb_s"] == pytest.approx(40.0)
    # queue: 0.2 ms per message -> 2 cores -> 3 processes at 66.7 %
    assert queue["processes"] == 3 and queue["cpu_pct"] == pytest.approx(200 / 3)
    assert queue["memory_gb"] == pytest.approx(1.5) and queue["network_mb_s"] == pytest.approx(5.0)
    # exactly a whole number of processes' worth is that number, not one more
    full = projection.project(run, 16, 10_000, max_cpu_per_process=1.0)
    assert report_runs.component_figures(full, "app")["processes"] == 9
    assert report_runs.component_figures(full, "queue")["processes"] == 2
    assert report_runs.component_figures(full, "app")["cpu_pct"] == pytest.approx(100.0)
    # too little work for one process is still one process
    small = projection.project(run, 1, 1)
    assert [small["resources"][c]["processes"] for c in ("app", "db", "queue")] == [1, 1, 1]


def test_should_project_table_4_from_the_smallest_measured_cluster(tmp_path):
    runs = [
        measured("integrated", 1260, INTEGRATED),
        measured("integrated", 1800, {**INTEGRATED, "db": comp(3, 200, 10.0, 900e6)}, db_nodes=3, offset=10),
        measured("integrated", 1300, None, db_nodes=1, offset=15),          # no resources: not a source
        measured("external_queue", 1250, EXTERNAL_QUEUE, offset=20),
        measured("synchronous", 1210, None, offset=30),                     # no resources: no projection
    ]
    projected = projection.report_scale(runs)
    assert [(p["app"], p["db_nodes"], p["throughput_msg_s"]) for p in projected] == [
        ("external_queue", 16, 10_000), ("integrated", 16, 10_080)]         # x 16/2, from the 2-node runs
    assert all(p["config"]["projected_from"].endswith("-2n") for p in projected)
    for p in projected:
        results.write_run(tmp_path, p)
    for r in runs:
        results.write_run(tmp_path, r)
    loaded = results.load_runs(tmp_path)                                    # validated again, from files
    table = tables.resource_table(loaded, reference.TABLE_4)
    rows = [line for line in table if line.startswith("|")][2:]
    assert rows == [
        "| Synchronous | 22.1 / n/a | 41.9 / n/a | – / n/a | 8.64 / n/a | 24.1 / n/a | – / n/a "
        "| 13.6 / n/a | 57.7 / n/a | – / n/a | 3 / n/a | 16 / n/a | – / n/a | 19 / n/a |",
        "| External Queue | 38.8 / 75.0 | 41.9 / 68.8 | 33.2 / 66.7 | 7.03 / 9.00 | 23.7 / 52.0 | 1.73 / 1.50 "
        "| 16.0 / 40.0 | 54.0 / 90.0 | 4.06 / 5.00 | 3 / 12 | 16 / 16 | 2 / 3 | 21 / 31 |",
        "| Integrated | 6.17 / 50.4 | 41.1 / 81.9 | – / – | 4.77 / 1.00 | 25.9 / 56.0 | – / – "
        "| 2.34 / 2.02 | 45.6 / 80.6 | – / – | 2 / 1 | 16 / 16 | – / – | 18 / 17 |",
    ]
    assert any("*projected* from measured per-message costs" in line for line in table)
    # projections are not sources, and an approach measured at 16 nodes is not projected
    assert projection.report_scale(runs + projected) == projected
    at_16 = measured("integrated", 9000, INTEGRATED, db_nodes=16, offset=40)
    assert [p["app"] for p in projection.report_scale(runs + [at_16])] == ["external_queue"]


def test_should_name_a_run_without_resources_as_not_projectable():
    run = measured("synchronous", 1210, None)
    with pytest.raises(ResultsError, match=f"run {run['run_id']}: no resources were measured, so there are no "
                                           "per-message costs to project from"):
        projection.project(run, 16, 9680)


@pytest.mark.parametrize("change, args, message", [
    (lambda r: r["resources"].update(messages=0), (16, 100),
     "run {rid}: 'resources.messages' is 0: no messages completed in the measured window"),
    (lambda r: r.update(projected=True), (16, 100), "run {rid} is itself a projection: project from a measured run"),
    (lambda r: r.update(experiment="80pct"), (16, 100),
     "run {rid} is a '80pct' run: the model projects the costs of a saturating run"),
    (lambda r: None, (0, 100), "'db_nodes' must be a positive integer, found: 0"),
    (lambda r: None, (16, 0), "'throughput_msg_s' must be a number above 0, found: 0"),
    (lambda r: None, (16, float("nan")), "'throughput_msg_s' must be a number above 0, found: nan"),
])
def test_should_say_why_a_run_cannot_be_projected(change, args, message):
    run = measured("integrated", 1260, INTEGRATED)
    change(run)
    with pytest.raises(ResultsError) as e:
        projection.project(run, *args)
    assert str(e.value).startswith(message.format(rid=run["run_id"]))
    with pytest.raises(ResultsError, match="'max_cpu_per_process' must be a number above 0, found: -1"):
        projection.project(measured("integrated", 1260, INTEGRATED), 16, 100, max_cpu_per_process=-1)
