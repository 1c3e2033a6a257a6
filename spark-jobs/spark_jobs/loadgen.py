"""An open-loop load generator that runs as Spark tasks.

    python -m async_triggers.spark_jobs.loadgen --rate 500 --duration 10 --partitions 2 --sender async_triggers.spark_jobs.loadgen:null_sender

The offered load never depends on how fast the system answers: every task computes its send times in advance
(its share of the target rate, phase by phase), sends each request at its time and never before, and when a
request's time has passed because every sender of the task is still waiting for an answer, it sends it as soon as
a sender is free and records it as late. Latency is measured from the *scheduled* time, so a stall of the system
under test shows in full in the response times instead of silently lowering the offered load (no "coordinated
omission"). The rate profile is a list of phases (``Phase(duration_s, rate)``): one phase for a steady load, three
for the report's burst (§6.3: 50 % for 60 s, 200 % for 30 s, 50 % again).

What a request does is pluggable: a *sender factory* (any picklable callable) is called once per sender thread
with a :class:`Slot` and returns a :class:`Sender` (or a plain function of a :class:`ScheduledRequest`); it
returns when the request is acknowledged and raises when it failed. The three applications of the report
(synchronous, external queue, integrated) are sender factories in ``benchmarks/apps``; scheduling is tested here
with local functions. Each Spark task runs ``concurrency`` sender threads, so up to that many requests per task
are in flight at once. The tasks run as one barrier stage (all at once, so at most as many partitions as Spark has
cores, ``local[N]`` here) and start their schedules at a common epoch once every task has opened its senders.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import statistics
import sys
import threading
import time
from typing import Any, Callable, Iterable, NamedTuple, Protocol, Sequence

from .errors import LoadGenError
from .schedule import ARRIVALS, DEFAULT_CONCURRENCY, Phase, ScheduledRequest, check_options, schedule

OK, ERROR, DROPPED = "ok", "error", "dropped"
# after the last task is ready to send; Spark answers a barrier's allGather only after up to a second (it polls
# its completion once a second: measured 1.0-1.13 s here), so the tasks learn the start time a second late
DEFAULT_START_DELAY_S = 2.0
MAX_ERROR_CHARS = 300


@dataclasses.dataclass(frozen=True)
class Slot:
    """What a sender factory is told about the sender it makes: task ``task`` of ``partitions``, sender thread
    ``slot`` of that task, and the run's seed (to draw the requests' payloads reproducibly)."""
    task: int
    slot: int
    partitions: int
    seed: int


class Record(NamedTuple):
    """One request as the generator saw it. Times are epoch seconds; ``acked`` is when the sender returned (the
    acknowledgement, or the error), None for a dropped request; ``late``: its time had passed when a sender
    became free for it."""
    task: int
    seq: int
    scheduled: float
    sent: float | None
    acked: float | None
    status: str         # ok | error | dropped
    late: bool
    error: str | None

    @property
    def latency(self) -> float | None:
        """Response time in seconds, from the scheduled time to the acknowledgement."""
        return None if self.acked is None else self.acked - self.scheduled


class Sender(Protocol):
    def send(self, request: ScheduledRequest) -> None: ...

    def close(self) -> None: ...


SenderFactory = Callable[[Slot], Any]


class _FunctionSender:
    def __init__(self, fn: Callable[[ScheduledRequest], Any]):
        self._fn = fn

    def send(self, request: ScheduledRequest) -> None:
        self._fn(request)

    def close(self) -> None:
        pass


def as_sender(made: Any) -> Sender:
    """What a factory returned, as a :class:`Sender`: an object with ``send`` (and optionally ``close``), or a
    function of a :class:`ScheduledRequest`."""
    if hasattr(made, "send"):
        return made if hasattr(made, "close") else _with_noop_close(made)
    if callable(made):
        return _FunctionSender(made)
    raise LoadGenError(f"a sender factory must return an object with a send(request) method or a function, "
                       f"found: {type(made).__name__}")


def _with_noop_close(obj):
    class _Closing:
        def send(self, request):
            obj.send(request)

        def close(self):
            pass
    return _Closing()


def null_sender(slot: Slot) -> Callable[[ScheduledRequest], None]:
    """A sender that does nothing: calibrates the generator itself (its lateness on this machine at a rate)."""
    return lambda request: None


# -- one task ------------------------------------------------------------------------------------------------------
def _clock() -> Callable[[], float]:
    """Epoch seconds advancing with the monotonic clock: comparable across tasks, immune to clock steps within one."""
    epoch0, mono0 = time.time(), time.monotonic()
    return lambda: epoch0 + (time.monotonic() - mono0)


def _describe(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


def open_senders(task: int, partitions: int, seed: int, sender_factory: SenderFactory,
                 concurrency: int = DEFAULT_CONCURRENCY) -> list[Sender]:
    """The task's ``concurrency`` senders (connections are opened here, before the schedule starts)."""
    senders: list[Sender] = []
    try:
        for slot in range(concurrency):
            try:
                senders.append(as_sender(sender_factory(Slot(task, slot, partitions, seed))))
            except LoadGenError:
                raise
            except Exception as e:
                raise LoadGenError(f"task {task}: the sender factory failed for sender {slot}: {_describe(e)}") from e
    except BaseException:
        close_senders(senders)
        raise
    return senders


def close_senders(senders: Iterable[Sender]) -> None:
    for s in senders:
        try:
            s.close()
        except Exception:
            pass


def send_schedule(task: int, partitions: int, start_at: float, phases: Sequence[Phase], seed: int,
                  senders: Sequence[Sender], arrivals: str = "uniform", drop_after_s: float | None = None,
                  clock: Callable[[], float] | None = None) -> list[Record]:
    """Send task ``task``'s share of the load from epoch ``start_at``, one thread per sender, and return one
    :class:`Record` per request in schedule order. ``drop_after_s``: a request whose sender becomes free more than
    that many seconds after its time is not sent but recorded as dropped (an application that sheds load)."""
    check_options(phases, partitions, max(1, len(senders)), arrivals, drop_after_s)
    if not senders:
        raise LoadGenError(f"task {task}: no senders")
    offsets = schedule(phases, partitions, task, seed, arrivals)
    now = clock or _clock()
    records: list[Record | None] = [None] * len(offsets)
    lock = threading.Lock()
    cursor = iter(range(len(offsets)))
    failures: list[BaseException] = []

    def loop(sender: Sender) -> None:
        try:
            while True:
                with lock:
                    i = next(cursor, None)
                if i is None:
                    return
                due = start_at + offsets[i]
                late = now() > due
                while (left := due - now()) > 0:     # never early: sleep may return a little before
                    time.sleep(left)
                sent = now()
                if drop_after_s is not None and sent - due > drop_after_s:
                    records[i] = Record(task, i, due, None, None, DROPPED, True, None)
                    continue
                status, error = OK, None
                try:
                    sender.send(ScheduledRequest(task, i, due))
                except Exception as e:  # the request failed: that is a measurement, not a crash
                    status, error = ERROR, _describe(e)
                records[i] = Record(task, i, due, sent, now(), status, late, error)
        except BaseException as e:  # noqa: BLE001 - reported by the task, never lost in a thread
            failures.append(e)

    threads = [threading.Thread(target=loop, args=(s,), name=f"loadgen-{task}-{n}", daemon=True)
               for n, s in enumerate(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise LoadGenError(f"task {task}: a sender thread failed: {_describe(failures[0])}") from failures[0]
    return [r for r in records if r is not None]


def run_task(task: int, partitions: int, start_at: float, phases: Sequence[Phase], seed: int,
             sender_factory: SenderFactory, concurrency: int = DEFAULT_CONCURRENCY, arrivals: str = "uniform",
             drop_after_s: float | None = None, clock: Callable[[], float] | None = None) -> list[Record]:
    """One task in this process: open its senders, send its share of the load from epoch ``start_at``, close them."""
    check_options(phases, partitions, concurrency, arrivals, drop_after_s)
    senders = open_senders(task, partitions, seed, sender_factory, concurrency)
    try:
        return send_schedule(task, partitions, start_at, phases, seed, senders, arrivals, drop_after_s, clock)
    finally:
        close_senders(senders)


# -- the Spark job -------------------------------------------------------------------------------------------------
def records_rdd(spark, phases: Sequence[Phase], partitions: int, seed: int, sender_factory: SenderFactory,
                concurrency: int = DEFAULT_CONCURRENCY, arrivals: str = "uniform",
                drop_after_s: float | None = None, start_delay_s: float = DEFAULT_START_DELAY_S):
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
    cores = sc.defaultParallelism
    if partitions > cores:
        raise LoadGenError(f"'partitions' ({partitions}) exceeds the {cores} cores Spark has "
                           f"({sc.master}): the tasks would not all run at once, and the later ones would send "
                           "their share late")
    phases = tuple(phases)

    def one_task(_rows: Iterable) -> list[Record]:
        from pyspark import BarrierTaskContext
        ctx = BarrierTaskContext.get()
        task = ctx.partitionId()
        senders = open_senders(task, partitions, seed, sender_factory, concurrency)
        try:
            ready = [float(t) for t in ctx.allGather(repr(time.time()))]
            start_at = max(ready) + start_delay_s
            return send_schedule(task, partitions, start_at, phases, seed, senders, arrivals, drop_after_s)
        finally:
            close_senders(senders)

    return sc.parallelize(range(partitions), partitions).barrier().mapPartitions(one_task)


def run(spark, phases: Sequence[Phase], partitions: int, seed: int, sender_factory: SenderFactory,
        concurrency: int = DEFAULT_CONCURRENCY, arrivals: str = "uniform", drop_after_s: float | None = None,
        start_delay_s: float = DEFAULT_START_DELAY_S) -> list[Record]:
    """Run the load and return every request's record, ordered by scheduled time."""
    rdd = records_rdd(spark, phases, partitions, seed, sender_factory, concurrency, arrivals, drop_after_s,
                      start_delay_s)
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
    from .session import describe_error
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
    p.add_argument("--sender", default="async_triggers.spark_jobs.loadgen:null_sender", help="module:factory")
    p.add_argument("--master", default=None, help="default: local[PARTITIONS]")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.phases:
            phases = parse_phases(args.phases)
        elif args.rate is not None and args.duration is not None:
            phases = [Phase(args.duration, args.rate)]
        else:
            raise LoadGenError("give --rate and --duration, or --phases")
        factory = resolve(args.sender)
        check_options(phases, args.partitions, args.concurrency, args.arrivals, args.drop_after)
        from .session import build_session
        spark = build_session(master=args.master or f"local[{args.partitions}]", app_name="async-triggers-loadgen",
                              jars=())
        records = run(spark, phases, args.partitions, args.seed, factory, args.concurrency, args.arrivals,
                      args.drop_after)
    except LoadGenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    done = [r for r in records if r.status == OK]
    lat = sorted(r.latency * 1000 for r in done)
    lateness = sorted((r.sent - r.scheduled) * 1000 for r in records if r.sent is not None)
    span = sum(ph.duration_s for ph in phases)
    print(f"requests {len(records)}  ok {len(done)}  errors {sum(r.status == ERROR for r in records)}  "
          f"dropped {sum(r.status == DROPPED for r in records)}  late {sum(r.late for r in records)}")
    print(f"offered {len(records) / span:.1f}/s  acknowledged {len(done) / span:.1f}/s over {span:g} s")
    if lat:
        p99 = lat[max(0, math.ceil(round(0.99 * len(lat), 9)) - 1)]  # nearest rank, as in benchmarks/results.py
        print(f"response ms  median {statistics.median(lat):.2f}  p99 {p99:.2f}  max {lat[-1]:.2f}")
    if lateness:
        print(f"send lateness ms  median {statistics.median(lateness):.3f}  max {lateness[-1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
