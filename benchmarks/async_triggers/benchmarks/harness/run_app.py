"""One application under one rate profile: its machinery set up, the open-loop load from
``async_triggers.spark_jobs.loadgen`` (Spark tasks) and, while it runs, the completed propagations, the
propagation-lag probe and per-process resources; the run ends when every acknowledged tweet is in every timeline
(or ``drain_timeout_s`` passed). The result follows the results schema (benchmarks/README.md)."""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Sequence

from async_triggers.benchmarks import results
from async_triggers.benchmarks.apps.cassandra import FanOutFactory, StoreFactory
from async_triggers.benchmarks.apps.external_queue import DEFAULT_QUEUE, ExternalQueueApp, purge
from async_triggers.benchmarks.apps.integrated import IntegratedApp
from async_triggers.benchmarks.apps.synchronous import SynchronousApp
from async_triggers.benchmarks.harness import processes
from async_triggers.benchmarks.harness.completions import (ACKED_IS_DONE, Completions, DoneFiles, FlowCounters, done_by,
                                                           propagated_per_bucket, wait_drained)
from async_triggers.benchmarks.harness.config import PLAIN
from async_triggers.benchmarks.harness.lag_probe import LagProbe, NoProbe
from async_triggers.benchmarks.harness.resources import Sampler
from async_triggers.benchmarks.harness.testbed import Testbed
from async_triggers.benchmarks.harness.verification import verify_settled
from async_triggers.spark_jobs.jvm_sender import jvm_requests

During = Callable[[float], list[dict]]   # called with the launch time; returns the events it caused


def run_app(bed: Testbed, experiment: str, app: str, phases: Sequence, *, drop_after_s: float | None = None,
            during: During | None = None, verify: bool = False, config: dict | None = None,
            write: bool = True, same_schedule: bool = False,
            probe_factory: Callable | None = None) -> tuple[dict, list]:
    """The run and the load generator's records; with ``write`` both are in the results directory.
    ``probe_factory(target, submit)``: the lag probe instead of the one-follower one (its ``summary(seconds)`` goes
    into the run's ``config.probe_summary``). With
    ``same_schedule``, an earlier run of this repetition with the same application, nodes, phases and shedding
    stands for this experiment's too (:func:`same_run`: no records, the earlier run's are in its file)."""
    from async_triggers.spark_jobs import loadgen
    cfg = bed.cfg
    key = schedule_key(bed, app, phases, drop_after_s)
    earlier = bed.runs_by_schedule.get(key)
    if same_schedule and earlier is not None and during is None and not verify:
        return same_run(bed, earlier, experiment, config, write), []
    spec = bed.prepare(app)
    target = bed.target()
    store = StoreFactory(target)
    workers, done_files, counters, queue_url = [], [], None, None
    if app == "synchronous":
        factory = SynchronousApp(store, FanOutFactory(target), bed.n_users, jvm=cfg.jvm_sender)
    elif app in ("integrated", PLAIN):
        factory = IntegratedApp(store, bed.n_users, jvm=cfg.jvm_sender)
    else:
        queue_url = bed.ensure_broker().config.url
        purge(queue_url, DEFAULT_QUEUE)
        factory = ExternalQueueApp(queue_url, store, bed.n_users, jvm=cfg.jvm_sender)
        workers, done_files = processes.start_queue_workers(cfg.queue_workers, queue_url, target)
    with bed.session() as session:
        if app == "integrated":
            counters = FlowCounters(session)
            completions = Completions(counters)
        elif app == "external_queue":
            completions = Completions(DoneFiles(done_files))
        else:
            completions = None
        probe_sender = factory(loadgen.Slot(task=-1, slot=0, partitions=1, seed=cfg.seed))
        probe = (NoProbe() if app == PLAIN else
                 probe_factory(target, probe_sender.submit) if probe_factory is not None else
                 LagProbe(target, probe_sender.submit, bed.probe_author, bed.probe_follower, cfg.probe_interval_s))
        broker_pids = bed.broker.pids if workers else None
        sampler = Sampler(processes.resource_groups(bed.settings, bed.cluster_name, workers, broker_pids,
                                                    jvm_sends=jvm_requests(factory) is not None),
                          interval_s=1.0)
        bed.progress(f"{experiment} / {app}: " + ", ".join(f"{p.rate:g} msg/s for {p.duration_s:g} s"
                                                          for p in phases) + f" on {bed.nodes} nodes")
        events: list[dict] = []
        timer = None
        launched = time.time()
        if during is not None:
            timer = threading.Thread(target=lambda: events.extend(during(launched)), daemon=True)
        sampler.start()
        if completions is not None:
            completions.start()
        probe.start()
        if timer is not None:
            timer.start()
        try:
            records = loadgen.run(bed.spark_session(), phases, cfg.partitions, cfg.seed, factory,
                                  concurrency=cfg.concurrency, drop_after_s=drop_after_s, in_flight=cfg.in_flight)
        finally:
            probe.stop()
            if timer is not None:
                timer.join()
        end_of_load = time.time()
        ok = sum(r.status == "ok" for r in records)
        expected = ok + probe.sent
        start = min(r.scheduled for r in records)
        duration = sum(p.duration_s for p in phases)
        schedule_end = start + duration
        try:
            completed_at, drained = wait_drained(app, records, completions, counters, expected, end_of_load,
                                                 timeout_s=cfg.drain_timeout_s, queue_url=queue_url,
                                                 progress=bed.progress)
        finally:
            sampler.stop()
            if completions is not None:
                completions.stop()
            close = getattr(probe_sender, "close", None)
            if callable(close):
                close()
            processes.stop_workers(workers)
    resources = sampler.result(messages=ok)
    drain_s = None if completed_at is None else max(0.0, completed_at - schedule_end)
    kept_up = kept_up_share(app, records, counters, done_files, schedule_end, probe.sent)
    horizon = (completed_at or time.time()) - start
    if app in ACKED_IS_DONE:
        done_count = ok
        rows = None
    else:
        last = completions.samples[-1]
        # the probes' tweets are propagations too, but not the load's: the rate is the load's
        done_count, rows = max(0, min(last[1], expected) - probe.sent), last[2]
    throughput = done_count / max(duration, horizon)
    series = propagated_per_bucket(app, records, completions, done_files, start, duration)
    verification, checks = verify_settled(bed, spec, app) if verify else (None, [])
    fanout_rows_s = None if rows is None else rows / max(duration, horizon)
    run = results.summarise(
        records, experiment=experiment, app=app, db_nodes=bed.nodes, duration_s=duration,
        config={**bed.run_config(), "phases": [dataclasses.asdict(p) for p in phases],
                "drop_after_s": drop_after_s, "probes": probe.sent, "probe_errors": probe.errors[:3],
                "drained": drained, "verification_checks": checks, "kept_up": kept_up, **(config or {}),
                **({"probe_summary": probe.summary(duration)} if hasattr(probe, "summary") else {})},
        throughput_msg_s=throughput, propagation_lags_ms=probe.lags_ms or None,
        propagated_msg_s=series, drain_s=drain_s, fanout_rows_s=fanout_rows_s, verification=verification,
        resources=resources, events=[{"t_s": round(e["at"] - start, 2), "what": e["what"]} for e in events],
        in_flight=cfg.in_flight if loadgen.is_async(probe_sender) else cfg.concurrency)
    if write:
        results.write_run(cfg.out, run, records)
        if during is None and not verify:   # a run another experiment may stand on: its files exist, nothing injected
            bed.runs_by_schedule[key] = run
    bed.progress(describe(run))
    return run, records


def schedule_key(bed: Testbed, app: str, phases: Sequence, drop_after_s: float | None) -> tuple:
    """What makes two runs the same measurement: application, nodes, repetition, phases and shedding."""
    return app, bed.nodes, bed.repetition, tuple((p.duration_s, p.rate) for p in phases), drop_after_s


def same_run(bed: Testbed, earlier: dict, experiment: str, config: dict | None, write: bool) -> dict:
    """``earlier`` as a run of ``experiment`` too: the same measurement under the experiment's name, its
    ``config.same_run_as`` naming the run it is (the report counts it once among the runs measured)."""
    run = {**earlier, "experiment": experiment,
           "run_id": earlier["run_id"].replace(f"-{earlier['experiment']}-", f"-{experiment}-", 1),
           "config": {**earlier["config"], **(config or {}), "same_run_as": earlier["run_id"]}}
    if write:
        results.write_run(bed.cfg.out, run)
    bed.progress(f"  {run['run_id']}: the same schedule as {earlier['run_id']}, whose run stands for it")
    return run


def describe(run: dict) -> str:
    """One line of progress: what was offered, answered, completed and verified."""
    req, resp = run["requests"], run["response_ms"] or {}
    lag = run["propagation_lag_ms"] or {}
    v = run["verification"]
    return (f"  {run['run_id']}: offered {run['offered_msg_s']:g} msg/s, ok {req['ok']}, errors {req['error']}, "
            f"dropped {req['dropped']}, completed {run['throughput_msg_s']:g} msg/s, "
            f"response median {resp.get('median', float('nan')):.2f} ms p99 {resp.get('p99', float('nan')):.2f} ms, "
            f"lag median {lag.get('median', float('nan')):.0f} ms, drain "
            f"{'-' if run['drain_s'] is None else format(run['drain_s'], '.1f')} s"
            + ("" if run["config"].get("kept_up") is None else f", done when the load ended {run['config']['kept_up']:.0%}")
            + ("" if v is None else f", verified: missing {v['missing']}, unexpected {v['unexpected']}")
            + ("" if run.get("valid", True) else f"; INVALID: {run['invalid_reason']}"))


def kept_up_share(app: str, records, counters, done_files, schedule_end: float, probes: int) -> float | None:
    """The share of the load's propagations completed by the end of its schedule: about 1 when the approach kept up
    (less the few in flight at the end), its completion rate over the offered rate when it did not. The drain bound
    alone lets a backlog that waits in the load generator (a blocking application's requests waiting for a thread)
    pass at up to 1.5x what the approach completes; this share does not. The probes' tweets are taken out of the
    counts that include them (the integrated flow's and the queue's)."""
    offered = sum(1 for r in records if r.status == "ok")
    if not offered:
        return None
    done = done_by(app, records, counters, done_files, schedule_end)
    if app in ("integrated", "external_queue"):
        done -= probes
    return round(max(0, min(done, offered)) / offered, 3)

