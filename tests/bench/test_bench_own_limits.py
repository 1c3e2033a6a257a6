"""The report on the runs at each approach's own limits (experiments 80pct_own and burst_own), from synthetic runs:
their tables (median and min–max over repetitions), their targets judged in every repetition (met, MISSED, or not
measured with why), their figure, and that they stay out of the tables and figures of the common-rate runs."""
from __future__ import annotations

import pytest

from async_triggers.benchmarks import report, results
from async_triggers.benchmarks.report import figures, targets
from async_triggers.spark_jobs.loadgen import Record

T0 = 1_700_000_000.0
MACHINE = {"cpu": "Test CPU 2.0GHz", "cores": 2, "memory_gb": 24.0, "os": "Linux-6.1", "python": "3.11.7"}
LAG_TARGET = "at 80 % of its own rate: integrated propagation lag p99 <= 250 ms"
ACK_TARGET = "at 80 % of its own rate: integrated median ack <= 1.2x the plain write's at the same rate"


def burst_target(label):
    return f"burst at 200 % of its own rate: 0 lost requests, {label}"


def own(experiment, app, rep, ack_ms=2.0, lags_ms=(100.0, 150.0, 200.0), lost=(0, 0), base=500.0, offset=0.0,
        rate=None, drain_s=None):
    """A run of repetition ``rep`` whose 4 ok requests answered in ``ack_ms``, with ``lost`` = (dropped, failed)
    and the probe's ``lags_ms``; an 80 % run offers ``rate`` (default 0.8 x ``base``)."""
    start = T0 + 1000 * rep + offset
    recs = [Record(0, i, start + i, start + i, start + i + ack_ms / 1000, "ok", False, None) for i in range(4)]
    recs += [Record(1, i, start + 4 + i, None, None, "dropped", True, None, True) for i in range(lost[0])]
    recs += [Record(1, 100 + i, start + i, start + i, start + i + 2, "error", False, "WriteTimeout")
             for i in range(lost[1])]
    if experiment == "80pct_own":
        phases = [{"duration_s": 25.0, "rate": rate or 0.8 * base}]
    else:
        phases = [{"duration_s": 10.0, "rate": 0.5 * base}, {"duration_s": 30.0, "rate": 2 * base},
                  {"duration_s": 10.0, "rate": 0.5 * base}]
    return results.summarise(recs, experiment=experiment, app=app, db_nodes=2, duration_s=4.0, machine=MACHINE,
                             commit="c0ffee", config={"repetition": rep, "base": "own", "base_rate": base,
                                                      "phases": phases},
                             throughput_msg_s=0.8 * base, drain_s=drain_s,
                             propagation_lags_ms=None if app == "plain" else (list(lags_ms) or None))


def own_runs(lag_p99=(200.0, 240.0, 180.0), ack=(2.2, 2.0, 2.4), plain_ack=(2.0, 2.0, 2.0),
             queue_lost=(0, 0, 0), integrated_lost=(0, 0, 0)) -> list[dict]:
    """Three repetitions of both experiments, each approach near its own rate."""
    runs = []
    for rep in (1, 2, 3):
        i = rep - 1
        for app, base, a in (("synchronous", 480.0, 20.0), ("external_queue", 220.0, 5.0),
                             ("integrated", 500.0 + 10 * i, ack[i])):
            runs.append(own("80pct_own", app, rep, ack_ms=a, base=base, offset=10 * len(runs),
                            lags_ms=(100.0, lag_p99[i]) if app == "integrated" else (300.0, 400.0)))
        runs.append(own("80pct_own", "plain", rep, ack_ms=plain_ack[i], base=500.0 + 10 * i, offset=10 * len(runs)))
        for app, base, lost in (("synchronous", 480.0, (40 + i, 0)), ("external_queue", 220.0, (queue_lost[i], 0)),
                                ("integrated", 500.0 + 10 * i, (0, integrated_lost[i]))):
            runs.append(own("burst_own", app, rep, base=base, lost=lost, offset=10 * len(runs), drain_s=12.0 + i,
                            lags_ms=(500.0, 900.0 + 100 * i)))
    return runs


def verdicts(runs) -> dict[str, tuple[str, str]]:
    return {name: (measured, verdict) for name, measured, verdict in targets.targets(runs)}


def section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    body = []
    for line in lines[lines.index(f"### {title}") + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            body.append(line)
    return body


def test_should_table_each_approach_at_80_percent_of_its_own_rate_with_median_and_range():
    text = report.markdown(own_runs())
    table = section(text, "Ours only: each approach at 80 % of its own saturating rate.")
    assert table[0] == ("| | Base rate [msg/s] | Offered [msg/s] | Throughput [msg/s] | Response Time [ms] median "
                        "| p99 | max | Propagation Lag [ms] p50 | p99 | max | Lost requests |")
    assert table[2:] == [
        "| Synchronous | 480 | 1 | 384 | 20.00 | 20.00 | 20.00 | 350.0 | 400.0 | 400.0 | 0 |",
        "| Ext. Queue | 220 | 1 | 176 | 5.00 | 5.00 | 5.00 | 350.0 | 400.0 | 400.0 | 0 |",
        "| Integrated | 510 (500–520) | 1 | 408 (400–416) | 2.20 (2.00–2.40) | 2.20 (2.00–2.40) | 2.20 (2.00–2.40) "
        "| 150.0 (140.0–170.0) | 200.0 (180.0–240.0) | 200.0 (180.0–240.0) | 0 |",
        # the plain write propagates nothing: no lag, a dash as for a component an approach does not have
        "| Plain write at the integrated rate, no flow | 510 (500–520) | 1 | 408 (400–416) | 2.00 | 2.00 | 2.00 "
        "| – | – | – | 0 |",
    ]


def test_should_table_the_burst_at_each_approach_own_rate_with_its_peak_losses_and_drain():
    text = report.markdown(own_runs())
    table = section(text, "Ours only: the burst at 50 % / 200 % / 50 % of each approach's own saturating rate.")
    assert table[0].endswith("| Lost requests | Drain [s] |") and "Peak [msg/s]" in table[0]
    assert table[2] == ("| Synchronous | 480 | 960 | 384 | 2.00 | 2.00 | 2.00 | 750.0 (700.0–800.0) "
                        "| 1000 (900.0–1100) | 1000 (900.0–1100) | 41 (40–42) | 13.0 (12.0–14.0) |")
    assert table[4].startswith("| Integrated | 510 (500–520) | 1020 (1000–1040) |")
    assert "Plain write" not in "\n".join(table)


def test_should_say_how_many_lag_probes_stand_behind_the_lag_columns():
    def with_probes(runs, counts):
        for run in runs:
            if run["app"] != "plain":
                run["config"]["probes"] = counts[run["experiment"]]
        return report.markdown(runs)

    text = with_probes(own_runs(), {"80pct_own": 29, "burst_own": 150})
    eighty = "each approach offered 0.8x the median of its own"
    line = next(t for t in text.splitlines() if t.startswith("Ours:") and eighty in t)
    assert ("Propagation lag: probe tweets, one a second, from acknowledgement to readable timeline rows, 29–29 per "
            "run (with fewer than 100, p99 is the largest).") in line
    burst = next(t for t in text.splitlines() if t.startswith("Ours:") and "50 %, 200 %, then 50 %" in t)
    assert "150–150 per run. With several" in burst   # p99 below the largest: no caveat
    assert "Propagation lag: probe" not in report.markdown(own_runs())   # runs that did not count their probes


def test_should_meet_the_own_limit_targets_only_when_every_repetition_does():
    rows = verdicts(own_runs())
    assert rows[LAG_TARGET] == ("200, 240, 180 ms", "met")
    assert rows[ACK_TARGET] == ("1.00x–1.20x (3 repetitions)", "met")
    assert rows[burst_target("Ext. Queue")] == ("0, 0, 0 lost", "met")
    assert rows[burst_target("Integrated")] == ("0, 0, 0 lost", "met")
    assert rows["burst at 200 % of its own rate: synchronous losses (counted, no target)"] == (
        "40 dropped, 0 failed of 44; 41 dropped, 0 failed of 45; 42 dropped, 0 failed of 46", "counted")
    # one repetition over the bar misses each target, whatever the others did
    rows = verdicts(own_runs(lag_p99=(200.0, 260.0, 180.0), ack=(2.2, 2.6, 2.0), integrated_lost=(0, 0, 1)))
    assert rows[LAG_TARGET] == ("200, 260, 180 ms", "MISSED")
    assert rows[ACK_TARGET] == ("1.00x–1.30x (3 repetitions)", "MISSED")
    assert rows[burst_target("Integrated")] == ("0, 0, 1 lost", "MISSED")


def test_should_say_why_an_own_limit_target_is_not_measured():
    runs = own_runs()
    rows = verdicts([r for r in runs if r["experiment"] != "80pct_own" or r["app"] != "plain"])
    assert rows[ACK_TARGET] == ("not measured (no plain write run at the integrated approach's own rate)",
                                "not measured")
    rows = verdicts([r for r in runs if not (r["app"] == "plain" and r["config"]["repetition"] == 2)])
    assert rows[ACK_TARGET] == ("not measured (repetition 2: no plain write run; the others: 1.10x–1.20x "
                                "(2 repetitions))", "not measured")
    # the plain write must offer the integrated approach's rate: another rate compares nothing
    elsewhere = [own("80pct_own", "plain", 3, base=520.0, rate=300.0) if r["app"] == "plain"
                 and r["config"]["repetition"] == 3 else r for r in runs]
    assert verdicts(elsewhere)[ACK_TARGET] == (
        "not measured (repetition 3: the plain write ran at 300 msg/s, the integrated approach at 416; the others: "
        "1.00x–1.10x (2 repetitions))", "not measured")
    no_lag = [own("80pct_own", "integrated", 2, base=510.0, lags_ms=()) if r["app"] == "integrated"
              and r["experiment"] == "80pct_own" and r["config"]["repetition"] == 2 else r for r in runs]
    assert verdicts(no_lag)[LAG_TARGET] == (
        "not measured (repetition 2: no propagation lag measured; the others: 200, 180 ms)", "not measured")
    rows = verdicts([r for r in runs if r["experiment"] != "burst_own"])
    assert rows[burst_target("Ext. Queue")] == ("not measured (no burst_own run of the Ext. Queue approach)",
                                                "not measured")
    assert "burst at 200 % of its own rate: synchronous losses (counted, no target)" not in rows


def test_should_leave_an_invalid_repetition_unmeasured_unless_another_already_missed():
    runs = own_runs(queue_lost=(0, 5, 0))
    for run in runs:
        if run["experiment"] == "burst_own" and run["config"]["repetition"] == 3:
            run.update(valid=False, invalid_reason="the load generator fell behind its schedule")
    rows = verdicts(runs)
    assert rows[burst_target("Ext. Queue")] == ("0, 5 lost (repetition 3: the run is invalid)", "MISSED")
    assert rows[burst_target("Integrated")] == (
        "not measured (repetition 3: the run is invalid; the others: 0, 0 lost)", "not measured")


def test_should_keep_the_own_limit_runs_out_of_the_common_rate_tables_and_figures(tmp_path):
    common = [own("80pct_own", "integrated", 1, base=900.0)]
    common[0]["experiment"] = "80pct"        # the same run, at the common rate: Table 2 has it
    runs = own_runs() + common
    text = report.markdown(runs)
    assert section(text, "Table 2: 80% Workload, 2 Database Nodes.")[4].startswith("| Integrated | 1000 / 720 |")
    assert "runs: `" + common[0]["run_id"] + "`." in text      # Table 2 lists only the common-rate run
    assert "Ours: n/a (no burst run)." in text                # Figure 6 is the common-rate burst only
    assert "## Each approach at its own limits (ours only)" in text
    rows = verdicts(runs)
    assert rows["burst at a common rate: 0 lost requests, Integrated"] == ("n/a", "not measured")


def test_should_report_no_own_limit_run_as_n_a():
    text = report.markdown([own("80pct_own", "integrated", 1)])
    table = section(text, "Ours only: the burst at 50 % / 200 % / 50 % of each approach's own saturating rate.")
    assert table[2] == "| Synchronous | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |"
    assert "Ours: n/a (no burst_own run)." in text


def test_should_draw_the_burst_at_each_approach_own_rate_as_figure_6c(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the 'bench' extra: make bench-deps")
    d = tmp_path / "r"
    for run in own_runs():
        results.write_run(d, run)
    written = figures.figures(results.load_runs(d), tmp_path / "out")
    assert sorted(written) == ["figure6c"]
    text = report.build(d, tmp_path / "out").read_text()
    assert "](figure6c_burst_own.png)" in text
    assert ("What we measured (the latest repetition): Synchronous at 200 % of 480 msg/s: 42 requests lost, "
            "propagation lag p99 1100 ms; Ext. Queue at 200 % of 220 msg/s: 0 requests lost") in text


class _Bed:
    """What run_app.same_run reads of a testbed: where runs go and its progress line."""

    def __init__(self, out):
        self.cfg = type("Cfg", (), {"out": out})()
        self.lines = []

    def progress(self, line):
        self.lines.append(line)


def test_should_let_the_common_burst_of_the_same_schedule_stand_for_an_own_burst_counted_once(tmp_path):
    from async_triggers.benchmarks.harness.run_app import same_run
    from async_triggers.benchmarks.report import generated_docs
    common = own("burst", "integrated", 3, base=885.0, offset=5.0)
    common["config"].update(base="highest")
    common.update(valid=False, invalid_reason="the generator fell 1.1 % behind")
    results.write_run(tmp_path, common)
    bed = _Bed(tmp_path)
    reused = same_run(bed, common, "burst_own", {"base_rate": 885.0, "base": "own"}, write=True)
    assert reused["experiment"] == "burst_own" and reused["run_id"] != common["run_id"]
    assert reused["run_id"] == common["run_id"].replace("-burst-", "-burst_own-")
    assert reused["config"]["same_run_as"] == common["run_id"] and reused["config"]["base"] == "own"
    assert reused["requests"] == common["requests"] and reused["valid"] is False
    assert common["config"]["base"] == "highest" and "same_run_as" not in common["config"]   # the original untouched
    assert common["run_id"] in bed.lines[0]
    runs = results.load_runs(tmp_path)
    assert [r["run_id"] for r in runs if r["experiment"] == "burst_own"] == [reused["run_id"]]
    # one measurement: named once among the invalid runs, and said to be another experiment's run
    invalid = next(m for name, m, _ in targets.targets(runs) if name.startswith("runs where the load generator"))
    assert invalid == f"1 invalid: {common['run_id']}"
    assert "(1 of them a run of another experiment with the same schedule, measured once)" in generated_docs.which_run(runs)


def test_should_count_the_synchronous_common_burst_losses_of_every_repetition():
    runs = [own("burst", "synchronous", rep, base=276.0, lost=(rep * 10, rep - 1), offset=rep) for rep in (1, 2, 3)]
    for run in runs:
        run["config"]["base"] = "lowest"
    highest = own("burst", "synchronous", 3, base=785.0, lost=(9999, 0), offset=50.0)   # Figure 6b's: not counted
    highest["config"]["base"] = "highest"
    measured, verdict = verdicts(runs + [highest])["burst: synchronous losses (counted, no target)"]
    assert verdict == "counted"
    assert measured == "10 dropped, 0 failed of 14; 20 dropped, 1 failed of 25; 30 dropped, 2 failed of 36"


class _Testbed(_Bed):
    """A testbed whose cluster is already up (no ccm): what burst and burst_own read before they run anything."""

    def __init__(self, out, rates):
        super().__init__(out)
        from async_triggers.benchmarks.harness.config import BenchConfig
        self.cfg = BenchConfig(out=out)
        self.saturating_rates = {app: [rate] for app, rate in rates.items()}
        self.runs_by_schedule, self.nodes, self.repetition = {}, 2, 1

    def use_cluster(self, nodes):
        assert nodes == self.nodes


def test_should_find_the_common_bursts_run_for_the_approaches_whose_own_rate_was_its_base(tmp_path, monkeypatch):
    from async_triggers.benchmarks.experiments import burst, burst_own
    from async_triggers.benchmarks.harness import run_app as run_app_module
    rates = {"synchronous": 610.0, "external_queue": 276.3, "integrated": 884.7}
    bed = _Testbed(tmp_path, rates)
    bases = burst.base_rates(rates)
    for name in burst.BASES:   # as burst.run registers its runs: keyed by what run_app keys them by
        for app in rates:
            phases = burst.burst_phases(bed.cfg.burst_s, bases[name])
            run = own("burst", app, 1, base=bases[name], offset=len(bed.runs_by_schedule))
            run["config"]["base"] = name
            bed.runs_by_schedule[run_app_module.schedule_key(bed, app, phases, bed.cfg.drop_after_s)] = run
    ran = []

    def measured(bed_, experiment, app, phases, **kwargs):   # the real run_app for the reused ones, this for the rest
        if (earlier := bed_.runs_by_schedule.get(run_app_module.schedule_key(bed_, app, phases,
                                                                             kwargs["drop_after_s"]))) is None:
            ran.append(app)
            return own(experiment, app, 1, base=rates[app]), []
        return run_app_module.run_app(bed_, experiment, app, phases, **kwargs)

    monkeypatch.setattr(burst_own, "run_app", measured)
    runs = {r["app"]: r for r in burst_own.run(bed)}
    assert ran == ["synchronous"]        # its own rate is neither base: measured
    assert runs["external_queue"]["config"]["same_run_as"].endswith("burst-external_queue-2n")
    assert runs["integrated"]["config"]["same_run_as"].endswith("burst-integrated-2n")
    assert {runs[a]["config"]["base"] for a in rates} == {"own"}
    assert runs["external_queue"]["config"]["base_rate"] == rates["external_queue"]
