"""The saturation search's decisions without a cluster (harness/rate_search.py): sequences of bounded and unbounded
steps and the rates it proposes; the record of its trials; the rates of the runs at each approach's own limit; and
the time model that counts the search's steps with the same rule (`ctl bench plan`)."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.harness import plan
from async_triggers.benchmarks.harness.config import APPS, PLAIN, BenchConfig, smoke_config
from async_triggers.benchmarks.harness.rate_search import RateSearch, Trial, simulate

B, U = True, False


def feed(search: RateSearch, outcomes) -> list[tuple[float, bool]]:
    """Each outcome recorded at the rate the search proposed: (rate, repeat) of every trial, rates rounded."""
    proposed = []
    for bounded in outcomes:
        rate = search.next_rate()
        assert rate is not None, f"the search stopped after {proposed}"
        proposed.append((round(rate, 2), search.next_is_repeat()))
        search.record(bounded)
    return proposed


def test_should_grow_by_the_factor_while_every_step_is_bounded():
    search = RateSearch(100, 1.5, 1.1, 10)
    assert feed(search, [B, B, B]) == [(100, False), (150, False), (225, False)]
    assert search.next_rate() == pytest.approx(337.5)
    assert (search.bounded_rate, search.unbounded_rate) == (225, None)


def test_should_try_an_unbounded_step_once_more_before_it_counts_as_a_miss():
    search = RateSearch(100, 1.5, 1.1, 10)
    # 150 misses once (an unlucky trial), then is bounded: it counts bounded, the search grows on
    assert feed(search, [B, U, B]) == [(100, False), (150, False), (150, True)]
    assert search.next_rate() == pytest.approx(225) and search.unbounded_rate is None
    assert search.trials == [Trial(100, True, False), Trial(150, False, False), Trial(150, True, True)]


def test_should_bisect_at_the_geometric_middle_until_the_bounds_are_within_the_ratio():
    search = RateSearch(100, 1.5, 1.1, 20)
    assert feed(search, [B, U, U, B, B]) == [(100, False), (150, False), (150, True),
                                             (round(math.sqrt(100 * 150), 2), False),
                                             (round(math.sqrt(math.sqrt(100 * 150) * 150), 2), False)]
    # 135.55 bounded, 150 not: 1.107x apart, more than 1.1x: one more step
    lo, hi = search.bounded_rate, search.unbounded_rate
    assert hi == 150 and hi / lo == pytest.approx(1.1067, abs=1e-4)
    assert search.next_rate() == pytest.approx(math.sqrt(lo * hi))
    search.record(U)                                   # a miss at the middle: tried again, then it counts
    assert search.next_is_repeat() and search.next_rate() == pytest.approx(math.sqrt(lo * hi))
    search.record(U)
    assert search.done and search.next_rate() is None
    assert search.unbounded_rate == pytest.approx(math.sqrt(lo * hi)) and search.bounded_rate == lo


def test_should_stop_as_soon_as_the_bounds_are_within_the_ratio():
    search = RateSearch(100, 1.5, 1.23, 20)
    feed(search, [B, U, U, B])                         # 122.5 bounded, 150 not: 1.22x
    assert search.done and search.next_rate() is None and len(search.trials) == 4


def test_should_go_down_by_the_factor_while_no_step_is_bounded_then_bisect():
    search = RateSearch(100, 1.5, 1.1, 20)
    assert feed(search, [U, U, U, U, B]) == [(100, False), (100, True), (66.67, False), (66.67, True),
                                             (44.44, False)]
    assert search.unbounded_rate == pytest.approx(66.67, abs=0.01)
    assert search.next_rate() == pytest.approx(math.sqrt(44.444 * 66.667), abs=0.01)


def test_should_count_repeats_as_steps_and_stop_after_max_steps():
    search = RateSearch(100, 1.5, 1.1, 3)
    feed(search, [B, U, U])
    assert search.done and search.next_rate() is None
    assert [t.repeat for t in search.trials] == [False, False, True]
    with pytest.raises(ValueError, match="the search is over"):
        search.record(True)
    one = RateSearch(40, 1.5, 1.1, 1)                  # a fixed rate: one trial, even unbounded
    feed(one, [U])
    assert one.done and one.bounded_rate is None and one.unbounded_rate is None


def test_should_not_let_one_unlucky_trial_halve_a_repetition_rate():
    # the first step misses the drain rule by a fraction of a second, once: before, the search went down a whole
    # factor; now the step is tried again, counts bounded, and the search climbs from there
    search = RateSearch(400, 1.5, 1.11, 10)
    feed(search, [U, B, B, U, U, B, U, U])
    assert search.done
    assert [round(t.rate) for t in search.trials] == [400, 400, 600, 900, 900, 735, 813, 813]
    assert search.bounded_rate > 400 * 1.5 and search.unbounded_rate / search.bounded_rate <= 1.11


@pytest.mark.parametrize("limit", [150.0, 333.0, 540.0, 2500.0])
def test_should_close_in_on_a_limit_with_every_miss_tried_twice(limit):
    search = simulate(200, limit, 1.5, 1.11, 30)
    lo, hi = search.bounded_rate, search.unbounded_rate
    assert lo <= limit < hi and hi / lo <= 1.11
    misses = [t for t in search.trials if not t.bounded]
    assert len(misses) % 2 == 0 and all(t.repeat for t in misses[1::2])


def test_should_refuse_a_search_that_cannot_move():
    with pytest.raises(ValueError, match="positive rate"):
        RateSearch(0, 1.5, 1.1, 5)
    with pytest.raises(ValueError, match="greater than 1"):
        RateSearch(100, 1.5, 1.0, 5)


def test_should_record_each_trial_with_the_fields_of_before_and_a_repeat_flag():
    from async_triggers.benchmarks.experiments.saturating import new_search, search_entry
    step = {"throughput_msg_s": 480.0, "drain_s": 5.3, "requests": {"error": 0, "dropped": 0}, "valid": True,
            "run_id": "20261125T073841Z-saturating-integrated-2n", "config": {"kept_up": 0.97}}
    assert search_entry(675.0, step, False, True) == {
        "rate": 675.0, "throughput_msg_s": 480.0, "drain_s": 5.3, "errors": 0, "dropped": 0, "bounded": False,
        "valid": True, "invalid_reason": None, "run_id": "20261125T073841Z-saturating-integrated-2n", "repeat": True,
        "kept_up": 0.97}
    late = {**step, "valid": False, "invalid_reason": "the load generator fell 1.1 % behind"}
    assert search_entry(675.0, late, False, False)["invalid_reason"] == "the load generator fell 1.1 % behind"
    cfg = BenchConfig()
    assert new_search(cfg, 300).next_rate() == 300 and new_search(cfg, 300).ratio == cfg.search_ratio
    assert new_search(cfg, 300, cfg.scale_search_ratio).ratio == cfg.scale_search_ratio
    fixed = new_search(dataclasses.replace(cfg, fixed_rate=40.0), 300)
    assert fixed.next_rate() == 40.0 and fixed.max_steps == 1


def test_should_bound_only_a_step_the_approach_kept_up_with_while_it_lasted():
    from async_triggers.benchmarks.experiments.saturating import bounded
    cfg = BenchConfig()
    step = {"drain_s": 3.2, "requests": {"error": 0, "dropped": 0}, "valid": True, "config": {"kept_up": 0.97}}
    assert bounded(cfg, step)
    # drained within the bound, but completed 1,300 of 1,860 a second while offered: the backlog waited
    assert not bounded(cfg, {**step, "config": {"kept_up": 0.72}})
    assert bounded(cfg, {**step, "config": {}})           # recorded before the rule: the other rules judge it
    assert not bounded(cfg, {**step, "drain_s": 6.0})


def test_should_count_the_propagations_done_by_the_end_of_the_schedule_as_each_approach_counts_them(tmp_path):
    from async_triggers.benchmarks.harness.completions import interpolated
    from async_triggers.benchmarks.harness.run_app import kept_up_share
    from async_triggers.spark_jobs.sending import Record
    records = [Record(0, i, 100.0 + i * 0.1, 100.0 + i * 0.1, 100.05 + i * 0.1 + (5.0 if i >= 80 else 0), "ok", False,
                      None, False) for i in range(100)]
    # acknowledged is done: 80 of 100 acknowledged by the end of the schedule (110.0)
    assert kept_up_share("synchronous", records, None, [], 110.0, probes=3) == 0.8
    # the queue's workers' files: 95 done by 110.0, 2 of them the probe's
    done = tmp_path / "done.csv"
    done.write_text("".join(f"t{i},{100.1 + i * 0.1 if i < 95 else 112.0},3\n" for i in range(97)))
    assert kept_up_share("external_queue", records, None, [done], 110.0, probes=2) == 0.93

    class Counters:   # the flow's counters, each node's reports every 2 s
        def done_at(self, at):
            return int(interpolated([(101.0, 10), (103.0, 30), (105.0, 50)], at)
                       + interpolated([(102.0, 15), (104.0, 35), (106.0, 55)], at))
    assert kept_up_share("integrated", records, Counters(), [], 104.0, probes=1) == 0.74   # 40 + 35 - 1 of 100
    assert interpolated([(1.0, 10), (3.0, 30)], 0.5) == 0 and interpolated([(1.0, 10), (3.0, 30)], 9.0) == 30


def test_should_carry_a_nodes_count_on_at_its_rate_not_draw_it_to_a_report_made_after_the_load():
    from async_triggers.benchmarks.harness.completions import carried
    # 10 a second until 104, the load's end; the next report (105.5) adds only what was in flight
    reports = [(100.0, 0), (102.0, 20), (104.0 - 0.5, 35), (105.5, 41)]
    assert carried(reports, 104.0) == 40.0          # 35 + 10/s x 0.5 s (a line to 41 would say 36)
    assert carried(reports, 105.5) == 41.0 and carried(reports, 200.0) == 41.0
    assert carried(reports, 99.0) == 0.0
    assert carried(reports, 101.0) == 10.0          # one report before: the line to the next
    assert carried([(100.0, 0), (102.0, 20), (104.0, 21)], 103.9) == 21.0   # never past the next report


def test_should_refuse_a_search_ratio_outside_one_to_the_rate_factor_and_no_steps():
    with pytest.raises(BenchError, match="'search_ratio' must be greater than 1 and at most 'rate_factor' "
                                         r"\(1.5\), found: 1.0"):
        BenchConfig(search_ratio=1.0)
    with pytest.raises(BenchError, match="'scale_search_ratio' must be greater than 1"):
        BenchConfig(scale_search_ratio=2.0)
    with pytest.raises(BenchError, match="'max_steps' must be a positive whole number"):
        BenchConfig(max_steps=0)


def test_should_give_each_approach_its_own_rate_and_the_plain_write_the_integrated_one():
    from async_triggers.benchmarks.experiments.eighty_pct_own import own_rates
    rates = {"synchronous": 480.0, "external_queue": 220.0, "integrated": 510.0, PLAIN: 220.0}
    assert own_rates(rates, APPS, plain=True) == [("synchronous", "synchronous", 480.0),
                                                  ("external_queue", "external_queue", 220.0),
                                                  ("integrated", "integrated", 510.0), (PLAIN, "integrated", 510.0)]
    assert own_rates(rates, APPS + (PLAIN,), plain=True)[-1] == (PLAIN, "integrated", 510.0)
    assert own_rates(rates, APPS, plain=False)[-1] == ("integrated", "integrated", 510.0)
    assert own_rates(rates, ("synchronous", PLAIN), plain=True) == [("synchronous", "synchronous", 480.0)]


def test_should_burst_to_twice_the_base_rate_between_two_halves():
    from async_triggers.benchmarks.experiments.burst import burst_phases
    assert [(p.duration_s, p.rate) for p in burst_phases((10.0, 30.0, 10.0), 400.0)] == [
        (10.0, 200.0), (30.0, 800.0), (10.0, 200.0)]


def test_should_run_the_own_limit_experiments_in_ctl_bench_all_and_plan_them():
    from async_triggers.benchmarks import results
    from async_triggers.benchmarks.experiments import EXPERIMENTS
    assert EXPERIMENTS == ("capacity", "bulk", "saturating", "80pct", "80pct_own", "burst", "burst_own", "fault",
                           "scale")
    assert {"80pct_own", "burst_own"} <= set(results.EXPERIMENTS)
    assert [name for name, _ in plan.estimate(BenchConfig())] == list(EXPERIMENTS)
    assert [name for name, _ in plan.estimate(smoke_config("/tmp/x"))] == list(EXPERIMENTS)


def test_should_estimate_make_bench_within_two_and_a_half_hours():
    estimate = dict(plan.estimate(BenchConfig()))
    assert sum(estimate.values()) <= 2.5 * 3600, plan.describe(BenchConfig())
    assert estimate["80pct_own"] > 0 and estimate["burst_own"] > 0
    assert plan.describe(BenchConfig()).startswith("estimated 2.")


def test_should_count_the_searches_steps_with_their_own_rule():
    cfg = BenchConfig()
    # finer bounds and a longer climb cost steps; a fixed rate is one step a repetition
    assert plan.search_steps(cfg, plan.APPROACH_LIMIT, 1.05) > plan.search_steps(cfg, plan.APPROACH_LIMIT) > \
        plan.search_steps(cfg, plan.APPROACH_LIMIT, cfg.scale_search_ratio)
    assert plan.search_steps(cfg, plan.PLAIN_LIMIT) <= cfg.repeat * cfg.max_steps
    assert plan.search_steps(dataclasses.replace(cfg, fixed_rate=40.0), plan.APPROACH_LIMIT) == cfg.repeat
    # every search is at least a bounded step and a miss tried twice
    assert plan.search_steps(cfg, plan.APPROACH_LIMIT) >= 3 * cfg.repeat
    longer = dataclasses.replace(cfg, steady_s=60.0, burst_s=(60.0, 30.0, 60.0))
    est, est_longer = dict(plan.estimate(cfg)), dict(plan.estimate(longer))
    assert est_longer["80pct_own"] - est["80pct_own"] == pytest.approx(cfg.repeat * 4 * 35.0)   # 3 approaches + plain
    # the own bursts of the external queue and the integrated approach are the common bursts' runs: one is run
    assert est_longer["burst_own"] - est["burst_own"] == pytest.approx(cfg.repeat * 1 * 100.0)


def test_should_start_the_plain_writes_first_search_where_it_finds_a_miss_within_its_trials():
    cfg = BenchConfig()
    # its limit through the JVM sender on 2 nodes: 15,000-18,000 msg/s; from start_rate ten trials never missed
    assert simulate(cfg.start_rate, 16_000, cfg.rate_factor, cfg.search_ratio, cfg.max_steps).unbounded_rate is None
    for limit in (3_000.0, 7_000.0, 16_000.0, 40_000.0):    # down as well as up
        search = simulate(cfg.plain_start_rate, limit, cfg.rate_factor, cfg.search_ratio, cfg.max_steps)
        assert search.bounded_rate <= limit < search.unbounded_rate, limit
    assert plan.search_steps(cfg, plan.PLAIN_LIMIT, start=cfg.plain_start_rate) < plan.search_steps(cfg, plan.PLAIN_LIMIT)
    with pytest.raises(BenchError, match="plain_start_rate"):
        dataclasses.replace(cfg, plain_start_rate=0.0)


def test_should_list_each_search_with_its_invalid_trials_and_say_when_it_found_only_a_lower_bound():
    from async_triggers.benchmarks.report.searches import describe
    trials = [{"rate": 200.0, "bounded": True, "valid": True, "repeat": False},
              {"rate": 300.0, "bounded": False, "valid": False, "repeat": False,
               "invalid_reason": "the load generator fell 2.0 % behind"},
              {"rate": 300.0, "bounded": False, "valid": True, "repeat": True},
              {"rate": 244.9, "bounded": False, "valid": False, "repeat": False,
               "invalid_reason": "the load generator fell 2.0 % behind"},
              {"rate": 244.9, "bounded": True, "valid": True, "repeat": True}]
    assert describe(trials, {"bounded": 244.9, "unbounded": 300.0}) == [
        "5 (2)", "2: the load generator fell 2.0 % behind (x2)", "245", "300", "limit within 1.22x",
        "200 +, 300 -, 300 - (again), 245 -, 245 + (again)"]   # every trial, in order
    climbing = [{"rate": 200.0 * 1.5 ** i, "bounded": True, "valid": True, "repeat": False} for i in range(10)]
    assert describe(climbing, {"bounded": climbing[-1]["rate"], "unbounded": None})[-3:-1] == [
        "n/a", "lower bound: no confirmed miss in 10 trials"]
    assert describe(trials[1:3], {"bounded": None, "unbounded": 300.0})[-2] == "no trial was bounded"
    assert describe(trials[1:2], None)[1] == "1: the load generator fell 2.0 % behind"


def test_should_say_in_a_saturating_target_whose_rate_is_only_a_lower_bound():
    from async_triggers.benchmarks import results
    from async_triggers.spark_jobs.loadgen import Record
    T0 = 1_700_000_000.0
    from async_triggers.benchmarks.report import targets
    runs = []
    for i, (app, rate, unbounded) in enumerate((("integrated", 800.0, 880.0), ("plain", 7689.0, None))):
        ok = [Record(0, 0, T0 + i, T0 + i, T0 + i + 0.001, "ok", False, None) for i in range(4)]
        run = results.summarise(ok, experiment="saturating", app=app, db_nodes=2, duration_s=10.0, commit="c0ffee",
                                config={"repetition": 1, "search": [{"rate": rate, "bounded": True}],
                                        "search_bounds": {"bounded": rate, "unbounded": unbounded}},
                                throughput_msg_s=rate)
        run["started_at"] += i
        runs.append(run)
    rows = {name: (measured, verdict) for name, measured, verdict in targets.targets(runs)}
    assert rows["saturating throughput: integrated >= 0.8x the plain write (tweets only, no flow)"] == (
        "0.10x; repetition 1: plain's rate is a lower bound (no confirmed miss in its search)", "MISSED")


def test_should_refuse_scale_sizes_that_would_replace_the_tables_runs_or_repeat():
    for sizes in ((2, 4), (4, 4)):
        with pytest.raises(BenchError, match=r"'scale_nodes' are the sizes beside db_nodes \(2\), each once"):
            BenchConfig(scale_nodes=sizes)
    assert BenchConfig(scale_nodes=(3, 4)).scale_nodes == (3, 4)
    # the smoke run on the test suite's 3-node cluster: every size is that cluster
    assert smoke_config(Path("/tmp/out"), "attest").scale_nodes == (3,)


def test_should_plan_the_own_bursts_as_common_bursts_only_when_the_common_ones_run_first_in_the_process():
    cfg = BenchConfig()
    together = dict(plan.estimate(cfg, ["burst", "burst_own"]))["burst_own"]
    alone = dict(plan.estimate(cfg, ["burst_own"]))["burst_own"]
    after = dict(plan.estimate(cfg, ["burst_own", "burst"]))["burst_own"]
    assert together == dict(plan.estimate(cfg))["burst_own"]
    # alone, all three approaches run their own bursts, the integrated one with its drain and its flow's deploy
    assert alone == after == pytest.approx(together + cfg.repeat * (2 * (sum(cfg.burst_s) + plan.RUN_OVERHEAD_S)
                                                                    + plan.INTEGRATED_BURST_DRAIN_S
                                                                    + plan.BURST_REPETITION_S))


def test_should_take_the_saturating_run_at_the_confirmed_bound_not_the_luckiest_trial(monkeypatch):
    """A trial at 400 msg/s completing 450 (a lucky one) must not stand for the approach: the search confirmed 664
    bounded (735 missed twice), so Table 1 and the other experiments' shares take 664 and that trial's run."""
    from types import SimpleNamespace

    from async_triggers.benchmarks import results
    from async_triggers.benchmarks.experiments import saturating
    completed = {400.0: 450.0, 600.0: 380.0, 664.0: 420.0}   # bounded trials' completed throughput; others miss
    written = []

    def fake_run(bed, experiment, app, phases, write, config):
        rate = round(phases[0].rate, 1)
        ok = rate in completed
        step = {"throughput_msg_s": completed.get(rate, 300.0), "drain_s": 1.0 if ok else 60.0,
                "requests": {"error": 0, "dropped": 0}, "valid": True, "run_id": f"run-{rate}",
                "config": {"phases": [{"rate": phases[0].rate}], **config}}
        return step, [rate]

    monkeypatch.setattr(saturating, "run_app", fake_run)
    monkeypatch.setattr(results, "write_run", lambda out, run, records: written.append((run, records)))
    cfg = dataclasses.replace(BenchConfig(), apps=("integrated",), plain_baseline=False, start_rate=400.0)
    bed = SimpleNamespace(cfg=cfg, nodes=cfg.db_nodes, search_start={}, saturating_rates={}, progress=lambda m: None,
                          use_cluster=lambda n: None)
    best = saturating.run(bed)["integrated"]
    assert [round(t["rate"], 1) for t in best["config"]["search"]] == [400.0, 600.0, 900.0, 900.0, 734.8, 734.8, 664.0]
    assert round(best["config"]["saturating_rate"], 1) == 664.0 and best["run_id"] == "run-664.0"
    assert written == [(best, [664.0])]
    assert [round(r, 1) for r in bed.saturating_rates["integrated"]] == [664.0]
    assert results.saturating_rate(best) == best["config"]["saturating_rate"]
    assert results.saturating_rate({"throughput_msg_s": 715.0, "config": {}}) == 715.0   # a run from before


def test_should_warm_up_before_a_search_without_counting_it(monkeypatch):
    """With search_warmup_s the approach first runs that long at the search's first rate; that run is neither a step
    nor the saturating run."""
    from types import SimpleNamespace

    from async_triggers.benchmarks import results
    from async_triggers.benchmarks.experiments import saturating
    calls = []

    def fake_run(bed, experiment, app, phases, write, config):
        calls.append((phases[0].duration_s, round(phases[0].rate, 1), config))
        ok = phases[0].rate <= 500
        return ({"throughput_msg_s": phases[0].rate, "drain_s": 1.0 if ok else 60.0,
                 "requests": {"error": 0, "dropped": 0}, "valid": True, "run_id": f"run-{phases[0].rate}",
                 "config": {"phases": [{"rate": phases[0].rate}], **config}}, [])

    monkeypatch.setattr(saturating, "run_app", fake_run)
    monkeypatch.setattr(results, "write_run", lambda out, run, records: None)
    cfg = dataclasses.replace(BenchConfig(), apps=("integrated",), plain_baseline=False, start_rate=400.0,
                              search_warmup_s=30.0)
    bed = SimpleNamespace(cfg=cfg, nodes=cfg.db_nodes, search_start={}, saturating_rates={}, progress=lambda m: None,
                          use_cluster=lambda n: None, warmed=set())
    best = saturating.run(bed)["integrated"]
    assert calls[0] == (30.0, 400.0, {"warmup": True})
    assert all(c[0] == cfg.step_s and "warmup" not in c[2] for c in calls[1:])
    assert len(best["config"]["search"]) == len(calls) - 1
    calls.clear()
    saturating.run(bed)   # the next repetition on the same cluster: its JIT is warm
    assert calls and all("warmup" not in c[2] for c in calls)


def test_should_plan_one_warm_up_per_approach_and_cluster():
    cold = dict(plan.estimate(BenchConfig()))
    warm = dict(plan.estimate(dataclasses.replace(BenchConfig(), search_warmup_s=60.0)))
    searched = len(APPS) + 1   # the approaches and the plain write, at db_nodes
    assert warm["saturating"] - cold["saturating"] == pytest.approx(searched * (60.0 + plan.STEP_OVERHEAD_S))
    assert warm["scale"] > cold["scale"] and warm["burst"] == cold["burst"]
    with pytest.raises(BenchError, match="search_warmup_s"):
        dataclasses.replace(BenchConfig(), search_warmup_s=-1.0)
