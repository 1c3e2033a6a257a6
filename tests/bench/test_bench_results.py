"""async_triggers.benchmarks.results: a run summarised from per-request records, its time series, the schema's checks, files."""
from __future__ import annotations

import copy
import csv
import json
import subprocess

import pytest

from async_triggers.benchmarks import results
from async_triggers.benchmarks.errors import ResultsError
from async_triggers.spark_jobs.loadgen import Record

T0 = 1_700_000_000.0
MACHINE = {"cpu": "test cpu", "cores": 2, "memory_gb": 24.0, "os": "Linux", "python": "3.11"}


def ok(seq: float, latency_ms: float, task: int = 0, late: bool = False) -> Record:
    t = T0 + seq
    return Record(task, int(seq * 10), t, t, t + latency_ms / 1000, "ok", late, None)


def summarise(records, **kw):
    kw.setdefault("experiment", "80pct")
    kw.setdefault("app", "integrated")
    kw.setdefault("db_nodes", 2)
    kw.setdefault("duration_s", 9.0)
    return results.summarise(records, machine=MACHINE, commit="abc123", **kw)


def test_should_compute_percentiles_by_nearest_rank():
    values = list(range(1, 1001))
    assert results.nearest_rank(values, 99) == 990
    assert results.nearest_rank(values, 99.9) == 999
    assert results.nearest_rank(values, 50) == 500
    assert results.nearest_rank([7.0], 99.9) == 7.0


def test_should_summarise_the_requests_of_a_run():
    records = [ok(0, 2), ok(1, 4), ok(2, 6), ok(4, 10, late=True),
               Record(1, 0, T0 + 5, T0 + 5, T0 + 5.5, "error", False, "Unavailable: 1 of 2 replicas"),
               Record(1, 1, T0 + 7, None, None, "dropped", True, None)]
    run = summarise(records, config={"rate": 0.67}, throughput_msg_s=0.4444, drain_s=1.23456,
                    propagation_lags_ms=[100, 300, 200], verification={"expected": 4, "present": 4, "missing": 0,
                                                                       "unexpected": 0})
    assert run["run_id"] == "20231114T221320Z-80pct-integrated-2n"
    assert run["requests"] == {"scheduled": 6, "ok": 4, "error": 1, "dropped": 1, "late": 2}
    assert run["offered_msg_s"] == 0.67 and run["acked_msg_s"] == 0.44 and run["throughput_msg_s"] == 0.44
    # from the scheduled time, ok requests only: 2, 4, 6, 10 ms
    assert run["response_ms"] == {"median": 5.0, "mean": 5.5, "stddev": 3.416, "max": 10.0, "p99": 10.0,
                                  "p999": 10.0}
    assert run["propagation_lag_ms"] == {"median": 200.0, "p99": 300.0, "max": 300.0}
    assert run["drain_s"] == 1.235 and run["config"] == {"rate": 0.67} and run["commit"] == "abc123"
    assert run["resources"] is None and run["events"] == [] and run["projected"] is False


def test_should_say_whether_the_load_generator_kept_its_schedule():
    on_time = [ok(i / 10, 2) for i in range(99)]
    waited = Record(0, 990, T0 + 10, T0 + 10.5, T0 + 11, "ok", True, None, True)   # the system was slow
    run = summarise(on_time + [waited], in_flight=256)
    assert run["valid"] is True and run["invalid_reason"] is None
    assert run["loadgen"] == {"in_flight": 256, "late": 1, "waited": 1, "own_late": 0, "own_late_fraction": 0.0,
                              "own_behind": 0, "own_lateness_ms": {"median": 0.0, "p99": 0.0, "max": 0.0}}
    stalled = Record(0, 991, T0 + 10, T0 + 10.2, T0 + 10.3, "ok", True, None)          # a 200-ms stall: late
    run = summarise(on_time + [stalled, stalled._replace(seq=992)])
    assert run["valid"] is True and run["loadgen"]["own_late"] == 2 and run["loadgen"]["own_behind"] == 0
    behind = Record(0, 991, T0 + 10, T0 + 10.6, T0 + 10.7, "ok", True, None)          # the generator was slow
    run = summarise(on_time + [behind, behind._replace(seq=992)])
    assert run["valid"] is False and run["loadgen"]["own_behind"] == 2
    assert run["invalid_reason"] == ("the load generator fell behind its schedule: 2 of 101 requests (2.0%, more "
                                     "than 1%) went out more than 250 ms late without waiting for the system under "
                                     "test")
    results.validate(run)


def test_should_still_load_a_run_written_before_the_generator_reported_its_schedule(tmp_path):
    run = summarise([ok(0, 2), ok(1, 4)])
    for key in ("loadgen", "valid", "invalid_reason"):
        run.pop(key)
    results.validate(run, "old.json")


def test_should_bucket_the_time_series_by_three_seconds():
    records = [ok(0, 2), ok(1, 4), ok(2.5, 1000), ok(4, 10),
               Record(1, 0, T0 + 5, T0 + 5, T0 + 6.5, "error", False, "Timeout"),
               Record(1, 1, T0 + 7, None, None, "dropped", True, None)]
    ts = summarise(records)["timeseries"]
    assert ts["bucket_s"] == 3.0 and ts["t_s"] == [0.0, 3.0, 6.0]
    assert ts["offered_msg_s"] == [1.0, 0.67, 0.33]         # by scheduled time: 3, 2 (incl. the error), 1
    assert ts["handled_msg_s"] == [0.67, 0.67, 0.0]         # by ack time: the 1 s answer lands in bucket 2
    assert ts["errors"] == [0, 0, 1] and ts["dropped"] == [0, 0, 1]
    # by scheduled time: the slow request counts where it was due, not where it came back
    assert ts["response_ms_median"] == [4.0, 10.0, None]
    assert ts["response_ms_max"] == [1000.0, 10.0, None]
    assert ts["propagated_msg_s"] is None


def test_should_give_answers_after_the_schedule_buckets_of_their_own():
    ts = summarise([ok(0, 2), ok(1, 7000)], duration_s=3.0)["timeseries"]
    assert ts["t_s"] == [0.0, 3.0, 6.0] and ts["handled_msg_s"] == [0.33, 0.0, 0.33]


def test_should_refuse_to_summarise_a_run_without_requests():
    with pytest.raises(ResultsError, match="run 80pct/integrated: no requests were recorded"):
        summarise([])


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(schema="v0"), "'schema' must be 'async-triggers-bench/1', found: 'v0'"),
    (lambda r: r.pop("requests"), "'requests' is missing"),
    (lambda r: r.update(experiment="soak"),
     "'experiment' must be one of saturating, 80pct, burst, fault, bulk_writer, capacity, 80pct_own, burst_own, "
     "lag_fanout, "
     "found: 'soak'"),
    (lambda r: r.update(app="kafka"),
     "'app' must be one of synchronous, external_queue, integrated, bulk_writer, plain, loadgen, found: 'kafka'"),
    (lambda r: r.update(db_nodes=0), "'db_nodes' must be a positive integer, found: 0"),
    (lambda r: r["requests"].pop("late"), "'requests' lacks 'late'"),
    (lambda r: r["response_ms"].update(p99="fast"), "'response_ms.p99' must be a number, found: 'fast'"),
    (lambda r: r["timeseries"]["handled_msg_s"].pop(),
     "'timeseries.handled_msg_s' must be a list as long as 'timeseries.t_s' (3)"),
    (lambda r: r["timeseries"]["offered_msg_s"].__setitem__(1, None),
     "'timeseries.offered_msg_s[1]' must be a number, found: None"),
    (lambda r: r.update(resources={"window_s": 10, "messages": 5, "app": None, "db": None}),
     "'resources' lacks 'queue' (null when the approach has no such component)"),
    (lambda r: r.update(resources={"window_s": 10, "messages": 5, "app": {"processes": 1, "cpu_s": 1},
                                   "db": None, "queue": None}), "'resources.app' lacks 'memory_gb'"),
    (lambda r: r.update(events=[{"t_s": 60}]), "'events[0]' must be an object with 't_s' and 'what', found: "),
    (lambda r: r.update(projected="yes"), "'projected' must be true or false, found: 'yes'"),
    (lambda r: r.update(valid="yes"), "'valid' must be true or false, found: 'yes'"),
    (lambda r: r.update(valid=False), "'invalid_reason' must say why a run is not valid"),
    (lambda r: r["loadgen"].pop("own_late"), "'loadgen' lacks 'own_late'"),
    (lambda r: r["loadgen"]["own_lateness_ms"].pop("p99"), "'loadgen.own_lateness_ms' lacks 'p99'"),
])
def test_should_name_the_file_and_the_field_a_run_breaks_the_schema_with(change, message):
    run = summarise([ok(0, 2), ok(1, 4), ok(4, 3)])
    bad = copy.deepcopy(run)
    change(bad)
    with pytest.raises(ResultsError) as e:
        results.validate(bad, "results/x.json")
    assert str(e.value).startswith(f"results/x.json: {message}")


def test_should_round_trip_runs_and_their_requests_through_files(tmp_path):
    records = [ok(0, 2), ok(1, 4), Record(1, 0, T0 + 2, T0 + 2, T0 + 2.1, "error", False, "Timeout: 2 s")]
    older = summarise(records, app="synchronous")
    newer = summarise([ok(10, 3)], app="integrated")
    plain = summarise([ok(20, 2)], app="plain")   # the baseline of the 80 % run: a tweet write, no flow
    results.write_run(tmp_path / "plain", plain)
    assert [r["app"] for r in results.load_runs(tmp_path / "plain")] == ["plain"]
    path = results.write_run(tmp_path, newer)
    results.write_run(tmp_path, older, records)
    assert path.name == "20231114T221330Z-80pct-integrated-2n.json"
    loaded = results.load_runs(tmp_path)
    assert [r["app"] for r in loaded] == ["synchronous", "integrated"]
    assert {k: v for k, v in loaded[0].items() if k != "_path"} == older
    rows = results.read_requests(tmp_path / f"{older['run_id']}.requests.csv.gz")
    assert [(r["seq"], r["status"], r["error"], r["waited"]) for r in rows] == [
        ("0", "ok", "", "False"), ("10", "ok", "", "False"), ("0", "error", "Timeout: 2 s", "False")]
    assert float(rows[2]["acked"]) - float(rows[2]["scheduled"]) == pytest.approx(0.1)
    # an older run's uncompressed file reads the same
    plain_csv = tmp_path / "old.requests.csv"
    with open(plain_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert results.read_requests(plain_csv) == rows
    with pytest.raises(ResultsError, match="not.gz: not readable as the raw requests of a run"):
        (tmp_path / "not.gz").write_text("plain text")
        results.read_requests(tmp_path / "not.gz")


def test_should_report_what_is_wrong_when_loading_results(tmp_path):
    with pytest.raises(ResultsError, match=f"no results directory at {tmp_path / 'none'}"):
        results.load_runs(tmp_path / "none")
    with pytest.raises(ResultsError, match=r"no results \(\*\.json\) in "):
        results.load_runs(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ResultsError, match=r"bad\.json: not readable as JSON"):
        results.load_runs(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"schema": results.SCHEMA}))
    with pytest.raises(ResultsError, match=r"bad\.json: 'run_id' is missing"):
        results.load_runs(tmp_path)


def test_should_describe_this_machine_and_checkout_commit():
    m = results.machine_description()
    assert m["cores"] >= 1 and m["python"].count(".") == 2
    commit = results.git_commit()
    assert commit is None or len(commit.split("-")[0]) == 40


def test_should_mark_the_commit_dirty_for_changed_code_not_for_replaced_results(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "old-run.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    (tmp_path / "benchmarks" / "results" / "old-run.json").unlink()     # what --replace does before the first run
    assert not results.git_commit.__wrapped__(tmp_path).endswith("-dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.git_commit.__wrapped__(tmp_path).endswith("-dirty")
