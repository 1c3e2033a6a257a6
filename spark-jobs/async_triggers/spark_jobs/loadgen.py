"""An open-loop load generator that runs as Spark tasks.

    python -m async_triggers.spark_jobs.loadgen --rate 500 --duration 10 --partitions 2 --sender async_triggers.spark_jobs.loadgen:null_sender

The offered load never depends on how fast the system answers: every task computes its send times in advance
(its share of the target rate, phase by phase), sends each request at its time and never before, and when a
request cannot go out on time it goes out as soon as it can and is recorded as late. Latency is measured from the
*scheduled* time, so a stall of the system under test shows in full in the response times instead of silently
lowering the offered load (no "coordinated omission"). The rate profile is a list of phases
(``Phase(duration_s, rate)``): one phase for a steady load, three for the report's burst (§6.3: 50 % for 60 s,
200 % for 30 s, 50 % again).

What a request does is pluggable: a *sender factory* (any picklable callable) is called with a :class:`Slot` and
returns a sender (``sending.py``): an asynchronous one (``send_async(request, done)``; one per task, up to
``in_flight`` requests outstanding, sent by one dispatcher thread) or a blocking one (``send(request)``, or a plain
function; ``concurrency`` threads per task). The applications of the report are sender factories in
``benchmarks/async_triggers/benchmarks/apps``. The tasks run as one barrier stage (all at once, so at most as many partitions as Spark has
cores, ``local[N]`` here) and start their schedules at a common epoch once every task has opened its senders.

``--capacity`` measures the generator itself: steps of increasing rate against a sender (by default one answered
at once; ``--sender ...:release_version_sender`` asks a cluster ``SELECT release_version FROM system.local``), and
the highest rate whose requests went out on time (:func:`kept_schedule`).
"""
from __future__ import annotations

import argparse
import importlib
import math
import statistics
import sys
import time
from typing import Callable, Iterable, Sequence

from .errors import LoadGenError
from .slots import check_cores, task_slots  # noqa: F401 (task_slots: part of this module's API)
from .schedule import ARRIVALS, DEFAULT_CONCURRENCY, Phase, ScheduledRequest, check_options, schedule
from .sending import (BEHIND_AFTER_S, DEFAULT_IN_FLIGHT, DROPPED, ERROR, LATE_AFTER_S, OK, AsyncSender, Record,
                      Sender, SenderFactory, Slot, as_sender, async_null_sender, close_senders, is_async,
                      null_sender, open_senders, run_task, schedule_report, send_schedule)

# what the applications, the harness and the tests use, wherever it is defined
__all__ = ["ARRIVALS", "DEFAULT_CONCURRENCY", "DEFAULT_IN_FLIGHT", "DEFAULT_START_DELAY_S", "DROPPED", "ERROR",
           "LATE_AFTER_S", "OK", "AsyncSender", "Phase", "Record", "ScheduledRequest", "Sender", "SenderFactory",
           "Slot", "as_sender", "async_null_sender", "check_options", "close_senders", "is_async", "measure_capacity",
           "null_sender", "open_senders", "records_rdd", "release_version_sender", "run", "run_task",
           "schedule", "schedule_report", "send_schedule"]

# after the last task is ready to send; Spark answers a barrier's allGather only after up to a second (it polls
# its completion once a second: measured 1.0-1.13 s here), so the tasks learn the start time a second late
DEFAULT_START_DELAY_S = 2.0
MAX_WAITED_FRACTION = 0.01   # capacity: a step where more requests than this waited for an answer did not keep up


# -- the Spark job -------------------------------------------------------------------------------------------------
def records_rdd(spark, phases: Sequence[Phase], partitions: int, seed: int, sender_factory: SenderFactory,
                concurrency: int = DEFAULT_CONCURRENCY, arrivals: str = "uniform",
                drop_after_s: float | None = None, start_delay_s: float = DEFAULT_START_DELAY_S,
                in_flight: int = DEFAULT_IN_FLIGHT):
    """The run as an RDD of :class:`Record` (lazy: nothing is sent until an action).

    The tasks run as one Spark *barrier* stage: Spark launches them all at once or not at all. Each opens its
    senders, then the tasks exchange their clocks (``allGather``) and all start their schedules at the same
    epoch, ``start_delay_s`` after the last of them was ready: however long Spark took to start its Python
    workers or the senders to connect, no request is scheduled before every task can send it.
    """
    check_options(phases, partitions, concurrency, arrivals, drop_after_s)
    if not start_delay_s >= 0:
        raise LoadGenError(f"'start_delay_s' must be positive or zero, found: {start_delay_s}")
    sc = spark.sparkContext
    check_cores(sc, partitions)
    phases = tuple(phases)

    def one_task(_rows: Iterable) -> list[Record]:
        from pyspark import BarrierTaskContext
        ctx = BarrierTaskContext.get()
        task = ctx.partitionId()
        senders = open_senders(task, partitions, seed, sender_factory, concurrency)
        try:
            ready = [float(t) for t in ctx.allGather(repr(time.time()))]
            start_at = max(ready) + start_delay_s
            return send_schedule(task, partitions, start_at, phases, seed, senders, arrivals, drop_after_s,
                                 in_flight=in_flight)
        finally:
            close_senders(senders)

    return sc.parallelize(range(partitions), partitions).barrier().mapPartitions(one_task)


def run(spark, phases: Sequence[Phase], partitions: int, seed: int, sender_factory: SenderFactory,
        concurrency: int = DEFAULT_CONCURRENCY, arrivals: str = "uniform", drop_after_s: float | None = None,
        start_delay_s: float = DEFAULT_START_DELAY_S, in_flight: int = DEFAULT_IN_FLIGHT) -> list[Record]:
    """Run the load and return every request's record, ordered by scheduled time. A sender factory that can be
    sent from the JVM (``jvm_requests()``, :mod:`jvm_sender`) is: the same schedule through the Java driver."""
    from .jvm_sender import jvm_requests, run as run_jvm
    requests = jvm_requests(sender_factory)
    if requests is not None:
        return run_jvm(spark, phases, partitions, seed, requests, arrivals, drop_after_s, start_delay_s, in_flight,
                       concurrency)
    rdd = records_rdd(spark, phases, partitions, seed, sender_factory, concurrency, arrivals, drop_after_s,
                      start_delay_s, in_flight)
    try:
        records = [Record(*r) for r in rdd.collect()]
    except Exception as e:
        raise LoadGenError(f"the load generator's Spark job failed: {_task_error(e)}") from e
    return sorted(records, key=lambda r: (r.scheduled, r.task, r.seq))


def _task_error(e: BaseException) -> str:
    """The Python error a task raised (Spark wraps it in a Java exception whose text holds the worker's
    traceback), else Spark's own account of the failure."""
    lines = [line.strip() for line in str(e).splitlines()]
    raised = [line for line in lines if line.startswith(("async_triggers.spark_jobs.errors.LoadGenError: ", "LoadGenError: "))]
    if raised:
        return raised[-1].split(": ", 1)[1]
    from .errors import describe_error
    return describe_error(e)


# -- command line --------------------------------------------------------------------------------------------------
def resolve(path: str) -> Callable:
    """``module:attribute`` to the object (the sender factory named on the command line)."""
    module, _, attr = path.partition(":")
    if not module or not attr:
        raise LoadGenError(f"a sender must be given as module:factory, found: {path!r}")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise LoadGenError(f"cannot load the sender factory {path!r}: {e}") from e


def parse_phases(text: str) -> list[Phase]:
    """``"60:600,30:2600,90:600"`` (seconds:rate, ...) to phases."""
    phases = []
    for part in text.split(","):
        try:
            duration, rate = part.split(":")
            phases.append(Phase(float(duration), float(rate)))
        except ValueError:
            raise LoadGenError(f"a phase must be seconds:rate, found: {part!r} in {text!r}") from None
    return phases


class _ReleaseVersion:
    """Asks ``SELECT release_version FROM system.local`` asynchronously: a cluster with nothing to do."""

    def __init__(self):
        from async_triggers import connection as connection_mod, connection_clients
        conn = connection_mod.with_password(connection_mod.resolve())
        self.cluster = connection_clients.make_cluster(conn)
        self.session = self.cluster.connect()
        self.query = self.session.prepare("SELECT release_version FROM system.local")

    def send_async(self, request, done) -> None:
        future = self.session.execute_async(self.query)
        future.add_callbacks(lambda _rows: done(None), done)

    def close(self) -> None:
        self.cluster.shutdown()


def release_version_sender(slot: Slot) -> _ReleaseVersion:
    """An asynchronous sender of a trivial query, connected as ``ctl`` is (the ASYNC_TRIGGERS_* environment)."""
    return _ReleaseVersion()


def measure_capacity(spark, partitions: int, sender_factory: SenderFactory, *, start_rate: float = 1000.0,
                     factor: float = 1.5, max_rate: float = 100_000.0, step_s: float = 5.0,
                     concurrency: int = DEFAULT_CONCURRENCY, in_flight: int = DEFAULT_IN_FLIGHT, seed: int = 1,
                     progress: Callable[[str], None] = lambda _: None, keep_records: bool = False,
                     min_rate: float | None = None) -> dict:
    """The generator's capacity with this sender: steps of ``step_s`` seconds from ``start_rate``, each
    ``factor`` times the last (after a warm-up step at the lowest rate, not judged), until a step did not keep up
    or ``max_rate``; the capacity is the highest rate that kept up. When the first step does not keep up, steps go
    down instead, each ``factor`` times lower, to the first that keeps up (not below ``min_rate``, default
    ``start_rate / factor**6``; None if none did).
    A step keeps up when the generator kept its schedule as a run must (:func:`schedule_report`: at most 1 % of
    the requests behind through the generator; one falling short of the rate falls further behind with every
    request), at most MAX_WAITED_FRACTION of them waited for an answer (a sender that cannot be answered at the
    rate is not a capacity) and none failed. ``keep_records``: the last step that kept up (else the first) in
    ``records``."""
    if not (start_rate > 0 and factor > 1 and max_rate >= start_rate and step_s > 0):
        raise LoadGenError(f"capacity steps need start_rate > 0, factor > 1, max_rate >= start_rate and step_s > 0,"
                           f" found: {start_rate}, {factor}, {max_rate}, {step_s}")
    floor = start_rate / factor ** 6 if min_rate is None else min_rate
    # the senders' first requests open their connections (a driver session: seconds): a step of the lowest rate
    # first, not judged, so that the first judged step measures a warm sender
    progress(f"capacity warm-up: {step_s:g} s at {floor:,.0f}/s, not judged")
    run(spark, [Phase(step_s, floor)], partitions, seed, sender_factory, concurrency, in_flight=in_flight)
    steps, best, rate, kept_records, down = [], None, start_rate, None, False
    while floor * (1 - 1e-9) <= rate <= max_rate:
        records = run(spark, [Phase(step_s, rate)], partitions, seed, sender_factory, concurrency,
                      in_flight=in_flight)
        report = schedule_report(records, in_flight)
        errors = sum(r.status == ERROR for r in records)
        up = report["kept"] and errors == 0 and report["waited"] <= MAX_WAITED_FRACTION * len(records)
        steps.append({"rate": round(rate, 1), "requests": len(records), "errors": errors, "kept_up": up, **report})
        progress(f"capacity step {rate:,.0f}/s: {len(records)} requests, {errors} errors, own lateness ms "
                 f"median {report['own_lateness_ms']['median']} p99 {report['own_lateness_ms']['p99']}, "
                 f"{report['own_late']} late through the generator ({report['own_late_fraction']:.2%}), "
                 f"{report['waited']} waited: {'kept up' if up else 'did NOT keep up'}")
        if kept_records is None or up:
            kept_records = records
        if up:
            best = rate
            if down:
                break      # going down: the first step that kept up
            rate *= factor
        elif best is not None:
            break          # going up: the first step that did not keep up
        else:
            down, rate = True, rate / factor
    found = {"capacity_msg_s": None if best is None else round(best, 1), "partitions": partitions,
             "in_flight": in_flight, "concurrency": concurrency, "step_s": step_s, "steps": steps}
    if keep_records:
        found["records"] = kept_records
    return found


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.spark_jobs.loadgen", description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, help="requests per second, all tasks together")
    p.add_argument("--duration", type=float, help="seconds")
    p.add_argument("--phases", help="instead of --rate/--duration: seconds:rate,... e.g. 60:600,30:2600,90:600")
    p.add_argument("--partitions", type=int, default=2, help="Spark tasks (at most the cores of --master)")
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="senders per task")
    p.add_argument("--arrivals", choices=ARRIVALS, default="uniform")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--drop-after", type=float, default=None, help="seconds late after which a request is dropped")
    p.add_argument("--sender", default=None, help="module:factory (default: a sender answered at once: "
                   "async_triggers.spark_jobs.loadgen:async_null_sender)")
    p.add_argument("--in-flight", type=int, default=DEFAULT_IN_FLIGHT,
                   help="requests outstanding per task with an asynchronous sender")
    p.add_argument("--master", default=None, help="default: local[PARTITIONS]")
    p.add_argument("--capacity", action="store_true",
                   help="measure the generator's capacity with --sender (default: answered at once): steps from "
                        "--rate (default 1000) growing by --factor for --duration s each (default 5)")
    p.add_argument("--factor", type=float, default=1.5, help="--capacity: each step's rate over the last")
    p.add_argument("--max-rate", type=float, default=100_000.0, help="--capacity: the last step's rate at most")
    p.add_argument("--json", action="store_true", help="--capacity: the result as JSON on stdout")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        factory = resolve(args.sender or "async_triggers.spark_jobs.loadgen:async_null_sender")
        if args.capacity:
            return _capacity(args, factory)
        if args.phases:
            phases = parse_phases(args.phases)
        elif args.rate is not None and args.duration is not None:
            phases = [Phase(args.duration, args.rate)]
        else:
            raise LoadGenError("give --rate and --duration, or --phases (or --capacity)")
        check_options(phases, args.partitions, args.concurrency, args.arrivals, args.drop_after)
        records = run(_session(args), phases, args.partitions, args.seed, factory, args.concurrency, args.arrivals,
                      args.drop_after, in_flight=args.in_flight)
    except LoadGenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    done = [r for r in records if r.status == OK]
    lat = sorted(r.latency * 1000 for r in done)
    span = sum(ph.duration_s for ph in phases)
    kept = schedule_report(records, args.in_flight)
    print(f"requests {len(records)}  ok {len(done)}  errors {sum(r.status == ERROR for r in records)}  "
          f"dropped {sum(r.status == DROPPED for r in records)}  late {kept['late']} (waited {kept['waited']}, "
          f"through the generator {kept['own_late']}, of them more than {BEHIND_AFTER_S * 1000:g} ms "
          f"{kept['own_behind']})")
    print(f"offered {len(records) / span:.1f}/s  acknowledged {len(done) / span:.1f}/s over {span:g} s")
    if lat:
        p99 = lat[max(0, math.ceil(round(0.99 * len(lat), 9)) - 1)]  # nearest rank, as in benchmarks/async_triggers/benchmarks/results.py
        print(f"response ms  median {statistics.median(lat):.2f}  p99 {p99:.2f}  max {lat[-1]:.2f}")
    own = kept["own_lateness_ms"]
    print(f"send lateness ms (requests that did not wait)  median {own['median']:.3f}  p99 {own['p99']:.3f}  "
          f"max {own['max']:.3f}: schedule {'kept' if kept['kept'] else 'NOT kept (the run measured the generator)'}")
    return 0


def _session(args):
    from .session import build_session
    return build_session(master=args.master or f"local[{args.partitions}]", app_name="async-triggers-loadgen",
                         jars=())


def _capacity(args, factory) -> int:
    import json
    result = measure_capacity(_session(args), args.partitions, factory, start_rate=args.rate or 1000.0,
                              factor=args.factor, max_rate=args.max_rate, step_s=args.duration or 5.0,
                              concurrency=args.concurrency, in_flight=args.in_flight, seed=args.seed,
                              progress=lambda m: print(m, file=sys.stderr, flush=True))
    result["sender"] = args.sender or "async_triggers.spark_jobs.loadgen:async_null_sender"
    if args.json:
        print(json.dumps(result))
    else:
        best = result["capacity_msg_s"]
        print(f"load generator capacity: {'below the first step' if best is None else f'{best:,.0f} requests/s'}"
              f" ({args.partitions} tasks, {args.in_flight} in flight each, sender {result['sender']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
