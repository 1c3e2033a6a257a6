"""Saturating throughput (§6.1, Tables 1 and 3, Figure 8a): a step search per application.

Each step offers a constant rate for ``step_s``; it is *bounded* when no request failed or was dropped, at least
``KEPT_UP`` of the load's propagations had completed when its schedule ended (``config.kept_up``: the approach kept
up while the load lasted, not only drained after it), every propagation completed within
``max(drain_bound_s, step_s/4)`` of the schedule's end (a straggler, a celebrity's fan-out, may finish after it) and
the load generator kept its schedule (the run is ``valid``). Without the first rule, a backlog drained within the
bound passed at up to 1.5x what the approach completes (a 10 s step, 5 s to drain), the more so where it waits in
the load generator: through the JVM sender the synchronous application's search was bounded at 1,860 msg/s while it
completed 1,276-1,334 a second during that step.
With ``search_warmup_s``, an approach's first search on a cluster first runs it that long at the search's first rate,
not counted (the nodes' JIT compiles its paths; the cluster's later searches find them compiled).
The search starts at ``start_rate`` (the plain write's: ``plain_start_rate``; a repetition: just below the previous repetition's best rate, divided by the
search's ratio: fewer steps, the same rule) and follows harness/rate_search.py: the rate grows by ``rate_factor``
while steps are bounded; after the first miss, steps at the geometric middle of the highest bounded and the
lowest unbounded rate narrow the two to within ``search_ratio`` (the scale experiment: ``scale_search_ratio``); a
step that was not bounded is run once more before it counts (one unlucky trial does not decide); at most
``max_steps`` trials. Every trial is in the saturating run's ``config.search`` (``repeat``: the second trial of a
rate), the final bounds in ``config.search_bounds``.
The saturating run is the trial at the search's confirmed bound: the bounded trial at the highest offered rate
that counted bounded (of two there, the later), recorded as ``config.saturating_rate``: Table 1's throughput and
the rate the other experiments' shares are of (:func:`saturating_rates`), not the best completed throughput of
any one trial (a lucky trial above a rate that missed would set it). Its resources fill Table 3.
"""
from __future__ import annotations

import statistics

from async_triggers.benchmarks import results
from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.harness.config import PLAIN, BenchConfig
from async_triggers.benchmarks.harness.rate_search import RateSearch
from async_triggers.benchmarks.harness.run_app import run_app
from async_triggers.benchmarks.harness.testbed import Testbed


def run(bed: Testbed, nodes: int | None = None, experiment: str = "saturating",
        ratio: float | None = None) -> dict[str, dict]:
    """Each application's saturating run (written with its search steps in ``config.search``), by application;
    the searches stop when their bounds are within ``ratio`` (default ``search_ratio``)."""
    from async_triggers.spark_jobs.loadgen import Phase
    cfg = bed.cfg
    bed.use_cluster(nodes or cfg.db_nodes)
    best_runs = {}
    # the plain write (tweets only, no flow) searched with the same rule: what Cassandra itself takes (Table 1, at
    # db_nodes)
    plain = cfg.plain_baseline and PLAIN not in cfg.apps and bed.nodes == cfg.db_nodes
    for app in cfg.apps + ((PLAIN,) if plain else ()):
        steps, best, step = [], None, None
        # a repetition starts just below the previous repetition's best rate: fewer steps, the same rule
        start = bed.search_start.get((app, bed.nodes), cfg.plain_start_rate if app == PLAIN else cfg.start_rate)
        search = new_search(cfg, start, ratio)
        if cfg.search_warmup_s > 0 and app not in bed.warmed:
            bed.progress(f"  {app}: warming up at {start:g} msg/s for {cfg.search_warmup_s:g} s (not counted)")
            run_app(bed, experiment, app, [Phase(cfg.search_warmup_s, start)], write=False, config={"warmup": True})
            bed.warmed.add(app)
        while (rate := search.next_rate()) is not None:
            repeat = search.next_is_repeat()
            step, records = run_app(bed, experiment, app, [Phase(cfg.step_s, rate)], write=False,
                                    config={"step": len(steps), "repeat": repeat})
            is_bounded = bounded(cfg, step)
            search.record(is_bounded)
            steps.append(search_entry(rate, step, is_bounded, repeat))
            if is_bounded and (best is None or rate >= best["config"]["phases"][0]["rate"]):
                best, best_records = step, records   # the bounded trial at the highest rate: the confirmed bound
        if best is None:
            best, best_records = step, records
            bed.progress(f"  {app}: no step was bounded; the lowest rate's run stands for it")
        best["config"]["search"] = steps
        best["config"]["search_bounds"] = {"bounded": search.bounded_rate, "unbounded": search.unbounded_rate}
        best["config"]["saturating_rate"] = search.bounded_rate
        if best["config"]["phases"] and bounded(cfg, best):
            bed.search_start[(app, bed.nodes)] = best["config"]["phases"][0]["rate"] / search.ratio
        results.write_run(cfg.out, best, best_records)
        if bed.nodes == cfg.db_nodes:
            bed.saturating_rates.setdefault(app, []).append(results.saturating_rate(best))
        best_runs[app] = best
        bed.progress(f"  {app}: saturating rate {results.saturating_rate(best):.0f} msg/s, completed "
                     f"{best['throughput_msg_s']:.0f} msg/s ({len(steps)} steps, "
                     f"{sum(s['repeat'] for s in steps)} repeated; {describe_bounds(search)})")
    return best_runs


def new_search(cfg: BenchConfig, start: float, ratio: float | None = None) -> RateSearch:
    """The search's rule with the configuration's factor, ratio (or ``ratio``) and steps; ``fixed_rate`` is one
    trial at it."""
    ratio = ratio or cfg.search_ratio
    if cfg.fixed_rate:
        return RateSearch(cfg.fixed_rate, cfg.rate_factor, ratio, 1)
    return RateSearch(start, cfg.rate_factor, ratio, cfg.max_steps)


def search_entry(rate: float, step: dict, is_bounded: bool, repeat: bool) -> dict:
    """One trial as ``config.search`` lists it: the fields of every search so far, and ``repeat`` (the second
    trial of a rate whose first was not bounded)."""
    return {"rate": rate, "throughput_msg_s": step["throughput_msg_s"], "drain_s": step["drain_s"],
            "errors": step["requests"]["error"], "dropped": step["requests"]["dropped"], "bounded": is_bounded,
            "valid": step.get("valid", True), "invalid_reason": step.get("invalid_reason"), "run_id": step["run_id"],
            "repeat": repeat, "kept_up": step["config"].get("kept_up")}


def describe_bounds(search: RateSearch) -> str:
    """Where the search ended, for the progress line."""
    lo, hi = search.bounded_rate, search.unbounded_rate
    if lo is not None and hi is not None:
        return f"bounded at {lo:.0f}, not at {hi:.0f} msg/s ({hi / lo:.2f}x)"
    if lo is not None:
        return f"bounded up to {lo:.0f} msg/s, no miss"
    return "no rate counted bounded"


# the share of a step's propagations completed when its schedule ended, at least: an approach at its limit completes
# its rate's share; one below it all but those in flight (a second's worth of a 10 s step at most)
KEPT_UP = 0.9


def bounded(cfg: BenchConfig, run: dict) -> bool:
    """No request failed or was dropped, the approach kept up while the load lasted, the backlog drained within the
    step's bound, and the load generator kept its schedule (a step it could not offer in full says nothing of the
    approach). A run without ``kept_up`` (recorded before it was) is judged by the other rules."""
    req = run["requests"]
    bound = max(cfg.drain_bound_s, cfg.step_s / 4)
    kept_up = run["config"].get("kept_up")
    return (req["error"] == 0 and req["dropped"] == 0 and run["drain_s"] is not None and run["drain_s"] <= bound
            and (kept_up is None or kept_up >= KEPT_UP) and run.get("valid", True))


def recorded_rate(runs: list[dict], app: str, nodes: int) -> float | None:
    """The median saturating rate of ``app``'s valid saturation runs at ``nodes`` nodes among ``runs`` (those of
    this commit when it has any); None without one."""
    commit = results.git_commit()
    found = [r for r in runs if r["experiment"] == "saturating" and r["app"] == app
             and r["db_nodes"] == nodes and results.saturating_rate(r) and r.get("valid", True)]
    found = [r for r in found if r.get("commit") == commit] or found
    return statistics.median(results.saturating_rate(r) for r in found) if found else None


def saturating_rates(bed: Testbed) -> dict[str, float]:
    """The approaches' saturating throughput at db_nodes, the median of the search's repetitions: measured in this
    process, else from the results (of this commit when it has any). The plain write has none of its own here: it
    gets the rates of the approaches it is compared with."""
    cfg = bed.cfg
    rates = {a: statistics.median(r) for a, r in bed.saturating_rates.items() if a != PLAIN and r}
    approaches = [a for a in cfg.apps if a != PLAIN]
    missing = [a for a in approaches if a not in rates]
    if missing:
        try:
            runs = results.load_runs(cfg.out)
        except BenchError:
            runs = []
        for app in missing:
            rate = recorded_rate(runs, app, cfg.db_nodes)
            if rate is not None:
                rates[app] = rate
    missing = [a for a in approaches if a not in rates]
    if missing or not rates:
        raise BenchError(f"no saturating throughput of {', '.join(missing or approaches)} at {cfg.db_nodes} "
                         f"nodes in {cfg.out}: run `ctl bench run saturating` first")
    if PLAIN in cfg.apps:
        rates[PLAIN] = min(rates.values())
    return rates
