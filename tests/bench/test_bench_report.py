"""async_triggers.benchmarks.report on a small synthetic results directory: the tables in the report's layout with its numbers
beside ours (exact cells), the targets' verdicts, and the PNG figures."""
from __future__ import annotations

import pytest

from async_triggers.benchmarks import report, results
from async_triggers.benchmarks.errors import ResultsError
from async_triggers.benchmarks.report import figures, format as report_format, targets
from async_triggers.benchmarks.report.__main__ import main as report_main
from async_triggers.spark_jobs.loadgen import Record

T0 = 1_700_000_000.0
MACHINE = {"cpu": "Test CPU 2.0GHz", "cores": 2, "memory_gb": 24.0, "os": "Linux-6.1", "python": "3.11.7"}


def comp(processes, cpu_s, memory_gb, net_bytes):
    return {"processes": processes, "cpu_s": cpu_s, "memory_gb": memory_gb, "net_bytes": net_bytes}


def make(experiment, app, latencies_ms, db_nodes=2, offset=0.0, lost=(0, 0), **kw):
    """A run whose ok requests answered in ``latencies_ms`` (one a second), plus ``lost`` = (dropped, failed)."""
    start = T0 + offset
    recs = [Record(0, i, start + i, start + i, start + i + lat / 1000, "ok", False, None)
            for i, lat in enumerate(latencies_ms)]
    n = len(recs)
    recs += [Record(1, i, start + n + i, None, None, "dropped", True, None, True) for i in range(lost[0])]
    recs += [Record(1, 100 + i, start + i, start + i, start + i + 2, "error", False, "WriteTimeout")
             for i in range(lost[1])]
    return results.summarise(recs, experiment=experiment, app=app, db_nodes=db_nodes,
                             duration_s=float(max(3, n + lost[0])), machine=MACHINE, commit="c0ffee", **kw)


@pytest.fixture()
def results_dir(tmp_path):
    d = tmp_path / "results"
    runs = [
        make("saturating", "synchronous", [10, 20, 30], throughput_msg_s=1210.4,
             resources={"window_s": 100, "messages": 100_000, "app": comp(1, 50, 1.5, 300e6),
                        "db": comp(2, 120, 6.0, 1000e6), "queue": None}),
        make("saturating", "external_queue", [1, 2, 3], offset=10, throughput_msg_s=1250,
             resources={"window_s": 100, "messages": 100_000, "app": comp(3, 90, 2.25, 400e6),
                        "db": comp(2, 110, 6.5, 900e6), "queue": comp(1, 20, 0.5, 50e6)}),
        make("saturating", "integrated", [0.5, 1.0, 1.5], offset=20, throughput_msg_s=1260, fanout_rows_s=9000,
             resources={"window_s": 100, "messages": 100_000, "app": comp(1, 5, 1.0, 20e6),
                        "db": comp(2, 130, 7.0, 800e6), "queue": None}),
        make("saturating", "integrated", [3], db_nodes=3, offset=25, throughput_msg_s=1800),
        make("bulk_writer", "bulk_writer", [1], offset=30, fanout_rows_s=10_000),
        make("80pct", "synchronous", [4, 5, 60], offset=40, throughput_msg_s=1000),
        make("80pct", "external_queue", [1, 2, 3], offset=50, throughput_msg_s=1000),
        make("80pct", "integrated", [1, 1.5, 2], offset=60, throughput_msg_s=999.6),
        make("80pct", "integrated", [2], db_nodes=3, offset=65, throughput_msg_s=1400),
        make("burst", "synchronous", [5, 25, 6], offset=70, lost=(2, 1),
             events=[{"t_s": 1, "what": "burst starts"}, {"t_s": 2, "what": "burst ends"}]),
        make("burst", "integrated", [1, 1, 1, 1], offset=80,
             events=[{"t_s": 1, "what": "burst starts"}, {"t_s": 2, "what": "burst ends"}]),
        make("fault", "synchronous", [5, 5000, 6], db_nodes=4, offset=90,
             verification={"expected": 30, "present": 28, "missing": 2, "unexpected": 0},
             events=[{"t_s": 1, "what": "kill -9 node2"}]),
        make("fault", "integrated", [1, 2, 1], db_nodes=4, offset=100,
             verification={"expected": 30, "present": 30, "missing": 0, "unexpected": 0},
             events=[{"t_s": 1, "what": "kill -9 node2"}]),
    ]
    for run in runs:
        results.write_run(d, run)
    return d


def section(text: str, title: str) -> list[str]:
    """The table lines under the heading ``### <title>``."""
    lines = text.splitlines()
    start = lines.index(f"### {title}")
    body = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            body.append(line)
    return body


def test_should_report_table_1_saturating_beside_the_reference(results_dir):
    text = report.markdown(results.load_runs(results_dir))
    assert section(text, "Table 1: Saturating Workload, 2 Database Nodes.") == [
        "| | Throughput [msg/s] | Response Time [ms] median | stddev | max |",
        "| --- | ---: | ---: | ---: | ---: |",
        "| Synchronous | 1297 / 1210 | 20.66 / 20.00 | 286.8 / 10.00 | 49900 / 30.00 |",
        "| Ext. Queue | 1291 / 1250 | 0.83 / 2.00 | 3.46 / 1.00 | 413 / 3.00 |",
        "| Integrated | 1289 / 1260 | 1.26 / 1.00 | 5.17 / 0.50 | 445 / 1.50 |",
    ]
    assert ("Each cell: report / ours. Ours: 2 Cassandra node(s); with several repetitions, their median (min–max); runs: `20231114T221320Z-saturating-synchronous-2n`, "
            "`20231114T221330Z-saturating-external_queue-2n`, `20231114T221340Z-saturating-integrated-2n`.") in text


def test_should_report_table_2_eighty_percent_with_our_percentiles(results_dir):
    text = report.markdown(results.load_runs(results_dir))
    assert section(text, "Table 2: 80% Workload, 2 Database Nodes.") == [
        "| | Throughput [msg/s] | Response Time [ms] median | stddev | max | p99 | p99.9 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| Synchronous | 1000 / 1000 | 5.35 / 5.00 | 89.21 / 32.05 | 13800 / 60.00 | – / 60.00 | – / 60.00 |",
        "| Ext. Queue | 1000 / 1000 | 0.84 / 2.00 | 3.26 / 1.00 | 141 / 3.00 | – / 3.00 | – / 3.00 |",
        "| Integrated | 1000 / 1000 | 0.80 / 1.50 | 3.31 / 0.50 | 171 / 2.00 | – / 2.00 | – / 2.00 |",
    ]


def test_should_report_tables_3_and_4_resources_with_n_a_for_unmeasured_cells(results_dir):
    text = report.markdown(results.load_runs(results_dir))
    assert section(text, "Table 3: Resource Utilization, Saturating Workload, 2 Database Nodes.")[2:] == [
        "| Synchronous | 11.0 / 50.0 | 39.6 / 60.0 | – / – | 1.76 / 1.50 | 2.98 / 6.00 | – / – "
        "| 2.06 / 3.00 | 8.90 / 10.0 | – / – | 1 / 1 | 2 / 2 | – / – | 3 / 3 |",
        "| External Queue | 21.6 / 30.0 | 36.4 / 55.0 | 16.6 / 20.0 | 1.98 / 2.25 | 3.94 / 6.50 | 0.83 / 0.500 "
        "| 2.87 / 4.00 | 8.83 / 9.00 | 0.68 / 0.500 | 1 / 3 | 2 / 2 | 1 / 1 | 4 / 6 |",
        "| Integrated | 2.30 / 5.00 | 40.9 / 65.0 | – / – | 1.72 / 1.00 | 3.85 / 7.00 | – / – "
        "| 0.36 / 0.200 | 7.41 / 8.00 | – / – | 1 / 1 | 2 / 2 | – / – | 3 / 3 |",
    ]
    # no 16-node run: every one of our cells is n/a, the report's own are all there
    assert section(text, "Table 4: Resource Utilization, Saturating Workload, 16 Database Nodes.")[2:] == [
        "| Synchronous | 22.1 / n/a | 41.9 / n/a | – / n/a | 8.64 / n/a | 24.1 / n/a | – / n/a "
        "| 13.6 / n/a | 57.7 / n/a | – / n/a | 3 / n/a | 16 / n/a | – / n/a | 19 / n/a |",
        "| External Queue | 38.8 / n/a | 41.9 / n/a | 33.2 / n/a | 7.03 / n/a | 23.7 / n/a | 1.73 / n/a "
        "| 16.0 / n/a | 54.0 / n/a | 4.06 / n/a | 3 / n/a | 16 / n/a | 2 / n/a | 21 / n/a |",
        "| Integrated | 6.17 / n/a | 41.1 / n/a | – / n/a | 4.77 / n/a | 25.9 / n/a | – / n/a "
        "| 2.34 / n/a | 45.6 / n/a | – / n/a | 2 / n/a | 16 / n/a | – / n/a | 18 / n/a |",
    ]


def test_should_mark_each_target_met_missed_or_not_measured(results_dir):
    text = report.markdown(results.load_runs(results_dir))
    lines = text.splitlines()
    start = lines.index("## Targets")
    table = [line for line in lines[start:lines.index("## Tables")] if line.startswith("|")]
    assert table == [
        "| target | measured | verdict |",
        "| --- | ---: | ---: |",
        "| load generator capacity >= 3x the highest offered rate, alone (a sender answered at once) | n/a | "
        "not measured |",
        "| load generator capacity >= 3x the highest offered rate, through the driver, the idle cluster answering | "
        "n/a | not measured |",
        "| runs where the load generator kept its schedule (invalid runs are left out of every table) | 0 invalid "
        "| met |",
        "| saturating throughput: integrated >= 0.8x the plain write (tweets only, no flow) | n/a | not measured |",
        "| saturating throughput: integrated >= 2x external queue | 1.01x | MISSED |",
        "| saturating throughput: integrated >= synchronous | 1.04x | met |",
        "| 80 %: integrated median <= external queue's | 0.75x | met |",
        "| 80 %: integrated p99 <= external queue's | 0.67x | met |",
        "| 80 %: integrated median <= synchronous's | 0.30x | met |",
        "| 80 %: integrated p99 <= synchronous's | 0.03x | met |",
        "| 80 %: synchronous median >= 5x integrated's | 3.33x | MISSED |",
        "| application CPU per message: integrated <= 0.2x external queue's | 0.06x | met |",
        "| application network bytes per message: integrated <= 0.2x external queue's | 0.05x | met |",
        "| fan-out rows/s: integrated >= 0.9x plain bulk writer | 0.90x | met |",
        "| burst at a common rate: 0 lost requests, Ext. Queue | n/a | not measured |",
        "| burst at a common rate: 0 lost requests, Integrated | 0 lost | met |",
        "| burst: synchronous losses (counted, no target) | 2 dropped, 1 failed of 6 | counted |",
        "| fault: 0 missing propagations, Synchronous | 2 missing | MISSED |",
        "| fault: 0 missing propagations, Ext. Queue | n/a | not measured |",
        "| fault: 0 missing propagations, Integrated | 0 missing | met |",
        # no run at each approach's own rate: each says why it is not measured
        "| at 80 % of its own rate: integrated propagation lag p99 <= 250 ms | not measured (no 80pct_own run of "
        "the integrated approach) | not measured |",
        "| at 80 % of its own rate: integrated median ack <= 1.2x the plain write's at the same rate | not measured "
        "(no 80pct_own run of the integrated approach) | not measured |",
        "| burst at 200 % of its own rate: 0 lost requests, Ext. Queue | not measured (no burst_own run of the Ext. "
        "Queue approach) | not measured |",
        "| burst at 200 % of its own rate: 0 lost requests, Integrated | not measured (no burst_own run of the "
        "Integrated approach) | not measured |",
    ]


def test_should_judge_capacity_plain_write_and_invalid_runs_in_the_targets(results_dir):
    runs = results.load_runs(results_dir)
    burst = make("burst", "external_queue", [1, 2], offset=85, config={"phases": [
        {"duration_s": 1, "rate": 1000}, {"duration_s": 1, "rate": 2500}]})
    generator_behind = [Record(0, i, T0 + 200 + i, T0 + 200.5 + i, T0 + 201 + i, "ok", True, None) for i in range(3)]
    invalid = results.summarise(generator_behind, experiment="80pct", app="synchronous", db_nodes=2,
                                duration_s=3.0, machine=MACHINE, commit="c0ffee", throughput_msg_s=1)
    capacity = [make("capacity", "loadgen", [0.1], offset=-10 - i, throughput_msg_s=rate, config={"sender": name})
                for i, (name, rate) in enumerate((("null", 12000.0), ("release_version", 6000.0),
                                                   ("release_version_blocking", 700.0),
                                                   ("release_version_python", 1500.0)))]
    # the plain write's search offered more than any approach: a baseline at the cluster's own limit, not counted
    plain = make("saturating", "plain", [1], offset=5, throughput_msg_s=1400,
                 config={"phases": [{"duration_s": 1, "rate": 4000}]})
    rows = {name: (measured, verdict) for name, measured, verdict in
            targets.targets(runs + [burst, invalid, plain] + capacity)}
    assert rows["load generator capacity >= 3x the highest offered rate, alone (a sender answered at once)"] == (
        "4.80x", "met")                                                                               # 12000 / 2500
    assert rows["load generator capacity >= 3x the highest offered rate, through the driver, the idle cluster "
                "answering"] == ("2.40x", "MISSED")                                                   # 6000 / 2500
    assert rows["load generator capacity against the cluster: asynchronous vs the former blocking threads"] == (
        "6000 vs 700 requests/s (8.6x)", "counted")
    assert rows["load generator capacity against the cluster: the JVM sender (Java driver) vs the Python driver"] == (
        "6000 vs 1500 requests/s (4.0x)", "counted")
    assert rows["runs where the load generator kept its schedule (invalid runs are left out of every table)"] == (
        f"1 invalid: {invalid['run_id']}", "MISSED")
    assert rows["saturating throughput: integrated >= 0.8x the plain write (tweets only, no flow)"] == ("0.90x", "met")
    # the invalid 80 % run is used nowhere: the synchronous 80 % figures are the valid run's
    assert rows["80 %: synchronous median >= 5x integrated's"] == ("3.33x", "MISSED")


def test_should_name_the_machine_and_say_one_commit_in_the_header_and_quote_the_report(results_dir):
    text = report.markdown(results.load_runs(results_dir))
    assert "ours run on one machine: Test CPU 2.0GHz, 2 cores, 24.0 GB, Linux-6.1." in text
    assert "From one commit (each run's file names it). Runs: 13; measured " in text
    assert "c0ffee" not in text   # the report speaks to a reader: the hash stays in the run files
    assert "> It has to drop requests in case of bursts." in text
    assert "> Throughput stabilizes at around 350 messages per second 20 seconds after the fault." in text


def test_should_report_a_missing_experiment_as_n_a_not_invent_it(tmp_path):
    d = tmp_path / "only-80"
    results.write_run(d, make("80pct", "integrated", [1, 2, 3]))
    text = report.markdown(results.load_runs(d))
    assert "| Synchronous | 1297 / n/a | 20.66 / n/a | 286.8 / n/a | 49900 / n/a |" in text
    assert "Ours: n/a (no burst run)." in text and "Ours: n/a (no fault run)." in text
    assert "| fan-out rows/s: integrated >= 0.9x plain bulk writer | n/a | not measured |" in text


def test_should_format_numbers_as_the_report_does():
    assert [report_format.fmt_sig(v) for v in (1297.4, 8.9, 0.36, 2.3, 49900, 9.996, 0.0999, 0)] == [
        "1297", "8.90", "0.360", "2.30", "49900", "10.0", "0.0999", "0"]
    assert [report_format.fmt_ms(v) for v in (0.834, 20.655, 286.84, 13800.2)] == ["0.83", "20.66", "286.8", "13800"]


def test_should_write_the_report_and_the_figures_on_build(results_dir, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the 'bench' extra: make bench-deps")
    out = tmp_path / "report"
    path = report.build(results_dir, out)
    assert path == out / "report.md"
    text = path.read_text()
    for name in ("figure6_burst.png", "figure7_fault.png", "figure8_scalability.png"):
        png = out / name
        assert png.is_file() and png.stat().st_size > 10_000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in text
    assert "### Table 1: Saturating Workload, 2 Database Nodes." in text
    # the captions say what we measured, computed from the runs
    assert ("What we measured: saturating throughput (median of the repetitions): Synchronous 1210 msg/s at 2 nodes "
            "only; Ext. Queue 1250 msg/s at 2 nodes only; Integrated 1260 msg/s at 2 nodes, 1800 at 3 (1.43x).") in text
    assert "What we measured: propagations missing after the fault, by Spark's verification: Synchronous 2, " in text


def test_should_draw_each_event_once_at_the_median_of_its_times():
    runs = [{"events": [{"t_s": t, "what": "kill -9 node2"}, {"t_s": t + 30, "what": "restart node2"}]}
            for t in (60.1, 60.3, 60.2)]
    assert figures.events_once(runs) == [(60.2, "kill -9 node2"), (90.2, "restart node2")]


def test_should_draw_the_highest_rate_burst_as_figure_6b_and_keep_it_out_of_the_targets(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the 'bench' extra: make bench-deps")
    d = tmp_path / "r"
    results.write_run(d, make("burst", "integrated", [1, 1, 1], config={"base": "lowest", "base_rate": 100}))
    results.write_run(d, make("burst", "integrated", [1, 1], offset=10, lost=(3, 0),
                              config={"base": "highest", "base_rate": 300}))
    results.write_run(d, make("saturating", "plain", [0.5, 0.7], offset=20, throughput_msg_s=1500))
    written = figures.figures(results.load_runs(d), tmp_path / "out")
    assert sorted(written) == ["figure6", "figure6b"]
    text = report.build(d, tmp_path / "out").read_text()
    assert "| burst at a common rate: 0 lost requests, Integrated | 0 lost | met |" in text
    assert "Requests lost (dropped or failed) per approach: Integrated 3." in text
    assert "](figure6b_burst_highest.png)" in text
    assert "| Plain write, no flow (ours only) | – / 1500 | – / 0.60 |" in text


def test_should_leave_out_figures_no_run_allows(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the 'bench' extra: make bench-deps")
    d = tmp_path / "r"
    results.write_run(d, make("burst", "integrated", [1, 1, 1]))
    written = figures.figures(results.load_runs(d), tmp_path / "out")
    assert sorted(written) == ["figure6"] and sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "figure6_burst.png"]


def test_should_report_an_empty_results_directory_on_the_command_line(tmp_path, capsys):
    assert report_main([str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: no results (*.json) in {tmp_path}\n"


def test_should_take_a_burst_base_common_to_the_approaches_ignoring_the_plain_write():
    from async_triggers.benchmarks.experiments.burst import base_rates
    assert base_rates({"synchronous": 900.0, "external_queue": 1200.0, "integrated": 1300.0, "plain": 400.0}) == {
        "lowest": 900.0, "highest": 1300.0}


def _reps(experiment, app, values, offset, key="throughput_msg_s", commit="c0ffee"):
    """One run per repetition; ``values`` are the throughputs (or, with key="median", 80 % response times)."""
    runs = []
    for i, v in enumerate(values, start=1):
        lat = [v, v, v] if key == "median" else [1, 2, 3]
        run = make(experiment, app, lat, offset=offset + 100 * i, config={"repetition": i},
                   **({"throughput_msg_s": v} if key != "median" else {"throughput_msg_s": 1000}))
        run["commit"] = commit
        runs.append(run)
    return runs


def test_should_give_median_and_range_of_repetitions_and_hold_targets_in_each(tmp_path):
    runs = (_reps("saturating", "integrated", [1200, 1300, 1250], 0)
            + _reps("saturating", "external_queue", [1100, 1350, 1200], 10)
            + _reps("saturating", "synchronous", [900, 950, 1000], 20)
            + _reps("80pct", "integrated", [1.0, 1.2, 1.1], 30, key="median")
            + _reps("80pct", "external_queue", [2.0, 2.5, 2.2], 40, key="median"))
    d = tmp_path / "r"
    for run in runs:
        results.write_run(d, run)
    text = report.markdown(results.load_runs(d))
    assert "Runs: 15, in 3 repetitions; measured " in text
    assert section(text, "Table 1: Saturating Workload, 2 Database Nodes.")[4] == (
        "| Integrated | 1289 / 1250 (1200–1300) | 1.26 / 2.00 | 5.17 / 1.00 | 445 / 3.00 |")
    rows = {name: (measured, verdict) for name, measured, verdict in targets.targets(results.load_runs(d))}
    # integrated beats the queue in repetitions 1 and 3, not in 2 (1300 < 1350): MISSED
    assert rows["saturating throughput: integrated >= 2x external queue"] == ("0.96x–1.09x (3 repetitions)", "MISSED")
    assert rows["saturating throughput: integrated >= synchronous"] == ("1.25x–1.37x (3 repetitions)", "met")
    assert rows["80 %: integrated median <= external queue's"] == ("0.48x–0.50x (3 repetitions)", "met")


def test_should_refuse_runs_of_different_commits_unless_asked(tmp_path):
    d = tmp_path / "r"
    results.write_run(d, _reps("saturating", "integrated", [1200], 0, commit="aaa111")[0])
    results.write_run(d, _reps("saturating", "synchronous", [900], 10, commit="bbb222")[0])
    with pytest.raises(ResultsError, match=r"the runs come from 2 commits \(aaa111: 1 run\(s\), e.g. "
                                           r"\S+-saturating-integrated-2n; bbb222: 1 run\(s\), e\.g\. .*"
                                           r"--allow-mixed-commits"):
        report.build(d, tmp_path / "out", plots=False)
    text = report.build(d, tmp_path / "out", plots=False, allow_mixed_commits=True).read_text()
    assert "From 2 commits (each run's file names it)." in text and "mixed on purpose" in text


def test_should_require_repeat_to_be_a_positive_whole_number(tmp_path):
    from async_triggers.benchmarks.errors import BenchError
    from async_triggers.benchmarks.harness.config import BenchConfig, smoke_config
    assert BenchConfig().repeat == 3 and smoke_config(tmp_path).repeat == 1
    with pytest.raises(BenchError, match="'repeat' must be a positive whole number, found: 0"):
        BenchConfig(repeat=0)


def test_should_refuse_a_results_directory_of_another_commit_before_a_run_starts(tmp_path):
    from async_triggers.benchmarks.experiments import prepare_out
    d = tmp_path / "r"
    old = _reps("saturating", "integrated", [1200], 0, commit="0ld")[0]
    results.write_run(d, old, [Record(0, 0, T0, T0, T0 + 0.001, "ok", False, None)])
    with pytest.raises(ResultsError, match=r"holds runs of other commits \(0ld; this checkout is .*--replace deletes "
                                           r"them first"):
        prepare_out(d)
    prepare_out(d, allow_mixed_commits=True)          # kept, on purpose
    assert (d / f"{old['run_id']}.json").exists()
    (d / "report.md").write_text("old report")
    prepare_out(d, replace=True)
    assert sorted(p.name for p in d.iterdir()) == []
    prepare_out(tmp_path / "new")                     # nothing there yet: nothing to refuse


def test_should_hold_the_fan_out_target_only_in_every_repetition_and_not_divide_by_no_capacity():
    # the committed run's three repetitions: 0.71x, 1.33x and 1.39x of the bulk writer (reported met from the latest)
    runs = []
    for i, (flow, bulk) in enumerate(((710.0, 1000.0), (1330.0, 1000.0), (1390.0, 1000.0)), start=1):
        for app, rows_s in (("integrated", flow), ("bulk_writer", bulk)):
            run = make("bulk_writer", app, [1], offset=300 * i + (5 if app == "bulk_writer" else 0),
                       config={"repetition": i}, fanout_rows_s=rows_s)
            runs.append(run)
    runs += [make("capacity", "loadgen", [0.1], offset=-10 - i, throughput_msg_s=rate, config={"sender": "null"})
             for i, rate in enumerate((0.0, 9000.0))]
    rows = {name: (measured, verdict) for name, measured, verdict in targets.targets(runs)}
    assert rows["fan-out rows/s: integrated >= 0.9x plain bulk writer"] == ("0.71x–1.39x (3 repetitions)", "MISSED")
    assert rows["load generator capacity >= 3x the highest offered rate, alone (a sender answered at once)"] == (
        "not measured (1 of 2 repetitions measured no throughput)", "not measured")


def test_should_give_every_repetition_in_table_3_and_hold_the_cost_targets_in_each(tmp_path):
    d = tmp_path / "r"
    # the application's CPU seconds per 100,000 messages in three repetitions: integrated 5, 8, 2; queue 90, 30, 80
    for i, (ours, theirs) in enumerate(((5, 90), (8, 30), (2, 80)), start=1):
        for app, cpu, offset in (("integrated", ours, 0), ("external_queue", theirs, 10)):
            run = make("saturating", app, [1, 2, 3], offset=offset + 100 * i, config={"repetition": i},
                       throughput_msg_s=1000,
                       resources={"window_s": 100, "messages": 100_000, "app": comp(1, cpu, 1.0, 20e6),
                                  "db": comp(2, 130, 7.0, 800e6),
                                  "queue": comp(1, 20, 0.5, 50e6) if app == "external_queue" else None})
            results.write_run(d, run)
    runs = results.load_runs(d)
    text = report.markdown(runs)
    table = section(text, "Table 3: Resource Utilization, Saturating Workload, 2 Database Nodes.")
    integrated = next(line for line in table if line.startswith("| Integrated |"))
    assert integrated.startswith("| Integrated | 2.30 / 5.00 (2.00–8.00) | 40.9 / 65.0 |"), integrated
    assert "runs: `" in text and text.count("-saturating-integrated-") >= 3
    rows = {name: (measured, verdict) for name, measured, verdict in targets.targets(runs)}
    # 5/90, 8/30 (0.27x: missed), 2/80 (0.025x)
    assert rows["application CPU per message: integrated <= 0.2x external queue's"] == (
        "0.02x–0.27x (3 repetitions)", "MISSED")
    # the same bytes per message in each repetition
    assert rows["application network bytes per message: integrated <= 0.2x external queue's"] == (
        "1.00x–1.00x (3 repetitions)", "MISSED")
