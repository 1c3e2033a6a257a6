"""One load generator task sending its share of the schedule (``loadgen`` runs it as a Spark task).

Two kinds of sender, one contract: a request goes out at its scheduled time and never before, its latency counts
from that time, and when it cannot go out on time it goes out as soon as it can and is recorded as late.

- An **asynchronous** sender (``send_async(request, done)``: start the request, return at once, call
  ``done(None)`` when it is acknowledged or ``done(error)`` when it failed, from any thread) is driven by one
  dispatcher thread per task, with at most ``in_flight`` requests outstanding. A request due while the bound is
  reached waits for a free slot: the system under test is answering too slowly, and the request says so
  (``waited``). The generator's capacity is then the dispatcher's, not a number of threads.
- A **blocking** sender (``send(request)`` returns on acknowledgement, raises on failure; or a plain function) gets
  ``concurrency`` threads per task, each with its own sender, as an application server has a thread per request:
  a request whose time came while every thread was busy ``waited`` for one.

``late``: sent more than :data:`LATE_AFTER_S` after its time. A request late without having waited was held up by
the generator itself (a dispatcher that fell behind on a busy machine): ``benchmarks/async_triggers/benchmarks/results.py`` counts those and
marks a run whose generator fell behind as invalid instead of reporting it as the approach's loss.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from typing import Any, Callable, Iterable, NamedTuple, Optional, Protocol, Sequence

from .errors import LoadGenError
from .schedule import DEFAULT_CONCURRENCY, Phase, ScheduledRequest, check_options, schedule

OK, ERROR, DROPPED = "ok", "error", "dropped"
MAX_ERROR_CHARS = 300
# sent more than this after its time: late. Not less: on 2 cores busy with the system under test, Linux's scheduler
# lets a runnable thread wait its turn for up to ~12 ms (sched_latency_ns 6 ms x (1 + log2 cores)), on time or not
LATE_AFTER_S = 0.02
DEFAULT_IN_FLIGHT = 256       # requests outstanding per task with an asynchronous sender
ANSWER_TIMEOUT_S = 600.0      # after the last send: an asynchronous request still unanswered is recorded as an error


@dataclasses.dataclass(frozen=True)
class Slot:
    """What a sender factory is told about the sender it makes: task ``task`` of ``partitions``, sender ``slot``
    of that task (always 0 for an asynchronous sender: one per task), and the run's seed (to draw the requests'
    payloads reproducibly)."""
    task: int
    slot: int
    partitions: int
    seed: int


class Record(NamedTuple):
    """One request as the generator saw it. Times are epoch seconds; ``acked`` is when it was answered (the
    acknowledgement, or the error), None for a dropped request; ``late``: sent more than LATE_AFTER_S after its
    time; ``waited``: it waited for a free sender or in-flight slot (the system under test was slow), so its
    lateness is not the generator's."""
    task: int
    seq: int
    scheduled: float
    sent: Optional[float]
    acked: Optional[float]
    status: str         # ok | error | dropped
    late: bool
    error: Optional[str]
    waited: bool = False

    @property
    def latency(self) -> Optional[float]:
        """Response time in seconds, from the scheduled time to the acknowledgement."""
        return None if self.acked is None else self.acked - self.scheduled


class Sender(Protocol):
    def send(self, request: ScheduledRequest) -> None: ...

    def close(self) -> None: ...


class AsyncSender(Protocol):
    def send_async(self, request: ScheduledRequest, done: Callable[[Optional[BaseException]], None]) -> None: ...

    def close(self) -> None: ...


SenderFactory = Callable[[Slot], Any]


class _FunctionSender:
    def __init__(self, fn: Callable[[ScheduledRequest], Any]):
        self._fn = fn

    def send(self, request: ScheduledRequest) -> None:
        self._fn(request)

    def close(self) -> None:
        pass


class _NoClose:
    def __init__(self, obj):
        self._obj = obj
        if hasattr(obj, "send_async"):
            self.send_async = obj.send_async
        if hasattr(obj, "send"):
            self.send = obj.send

    def close(self) -> None:
        pass


def as_sender(made: Any):
    """What a factory returned, as a sender: an object with ``send_async`` or ``send`` (and optionally
    ``close``), or a function of a :class:`ScheduledRequest`."""
    if hasattr(made, "send_async") or hasattr(made, "send"):
        return made if hasattr(made, "close") else _NoClose(made)
    if callable(made):
        return _FunctionSender(made)
    raise LoadGenError(f"a sender factory must return an object with a send_async(request, done) or send(request) "
                       f"method, or a function, found: {type(made).__name__}")


def is_async(sender: Any) -> bool:
    return hasattr(sender, "send_async")


def null_sender(slot: Slot) -> Callable[[ScheduledRequest], None]:
    """A blocking sender that does nothing (the generator's threads alone)."""
    return lambda request: None


class _NullAsync:
    def send_async(self, request, done) -> None:
        done(None)

    def close(self) -> None:
        pass


def async_null_sender(slot: Slot) -> _NullAsync:
    """An asynchronous sender answered at once: the generator's own capacity, with nothing to wait for."""
    return _NullAsync()


def _clock() -> Callable[[], float]:
    """Epoch seconds advancing with the monotonic clock: comparable across tasks, immune to clock steps within one."""
    epoch0, mono0 = time.time(), time.monotonic()
    return lambda: epoch0 + (time.monotonic() - mono0)


def describe(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


def open_senders(task: int, partitions: int, seed: int, sender_factory: SenderFactory,
                 concurrency: int = DEFAULT_CONCURRENCY) -> list:
    """The task's senders, connected before the schedule starts: one if the factory makes asynchronous senders,
    else ``concurrency`` blocking ones."""
    senders: list = []
    try:
        for slot in range(concurrency):
            try:
                senders.append(as_sender(sender_factory(Slot(task, slot, partitions, seed))))
            except LoadGenError:
                raise
            except Exception as e:
                raise LoadGenError(f"task {task}: the sender factory failed for sender {slot}: {describe(e)}") from e
            if is_async(senders[0]):
                break
    except BaseException:
        close_senders(senders)
        raise
    return senders


def close_senders(senders: Iterable) -> None:
    for s in senders:
        try:
            s.close()
        except Exception:
            pass


def _wait_until(due: float, now: Callable[[], float]) -> float:
    while (left := due - now()) > 0:     # never early: sleep may return a little before
        time.sleep(left)
    return now()


def send_schedule(task: int, partitions: int, start_at: float, phases: Sequence[Phase], seed: int,
                  senders: Sequence, arrivals: str = "uniform", drop_after_s: float | None = None,
                  clock: Callable[[], float] | None = None, in_flight: int = DEFAULT_IN_FLIGHT) -> list[Record]:
    """Send task ``task``'s share of the load from epoch ``start_at`` and return one :class:`Record` per request
    in schedule order. ``drop_after_s``: a request that could go out only more than that many seconds after its
    time is not sent but recorded as dropped (an application that sheds load)."""
    check_options(phases, partitions, max(1, len(senders)), arrivals, drop_after_s)
    if not senders:
        raise LoadGenError(f"task {task}: no senders")
    if not isinstance(in_flight, int) or in_flight < 1:
        raise LoadGenError(f"'in_flight' must be strictly positive, found: {in_flight}")
    offsets = schedule(phases, partitions, task, seed, arrivals)
    now = clock or _clock()
    if is_async(senders[0]):
        return _dispatch(task, [start_at + o for o in offsets], senders[0], in_flight, drop_after_s, now)
    return _threads(task, [start_at + o for o in offsets], senders, drop_after_s, now)


def _dispatch(task: int, due_times: list[float], sender, in_flight: int, drop_after_s: float | None,
              now: Callable[[], float]) -> list[Record]:
    """One dispatcher thread, ``in_flight`` requests outstanding at most."""
    records: list[Record | None] = [None] * len(due_times)
    slots = threading.Semaphore(in_flight)
    outstanding = [len(due_times)]
    lock = threading.Lock()
    all_answered = threading.Event()
    if not due_times:
        all_answered.set()

    def finish(i: int, record: Record) -> None:
        with lock:
            if records[i] is not None:   # a sender that answers twice: the first answer counts
                return
            records[i] = record
            outstanding[0] -= 1
            if outstanding[0] == 0:
                all_answered.set()
        slots.release()

    waited_until = float("-inf")
    for i, due in enumerate(due_times):
        if not slots.acquire(blocking=False):
            slots.acquire()
            waited_until = now()
        waited = due < waited_until
        sent = _wait_until(due, now)
        late = sent - due > LATE_AFTER_S
        if drop_after_s is not None and sent - due > drop_after_s:
            finish(i, Record(task, i, due, None, None, DROPPED, True, None, waited))
            continue

        def done(error: BaseException | None = None, i=i, due=due, sent=sent, late=late, waited=waited) -> None:
            acked = now()
            finish(i, Record(task, i, due, sent, acked, OK if error is None else ERROR, late,
                             None if error is None else describe(error), waited))
        try:
            sender.send_async(ScheduledRequest(task, i, due), done)
        except Exception as e:  # the request failed as it started: a measurement, not a crash
            done(e)
    if not all_answered.wait(ANSWER_TIMEOUT_S):
        gone = now()
        for i, due in enumerate(due_times):
            if records[i] is None:
                finish(i, Record(task, i, due, due, gone, ERROR, False,
                                 f"no answer {ANSWER_TIMEOUT_S:.0f} s after the last request was sent"))
    return [r for r in records if r is not None]


def _threads(task: int, due_times: list[float], senders: Sequence, drop_after_s: float | None,
             now: Callable[[], float]) -> list[Record]:
    """One thread per blocking sender, each taking the next request when it is free."""
    records: list[Record | None] = [None] * len(due_times)
    lock = threading.Lock()
    cursor = iter(range(len(due_times)))
    failures: list[BaseException] = []

    def loop(sender) -> None:
        try:
            while True:
                with lock:
                    i = next(cursor, None)
                if i is None:
                    return
                due = due_times[i]
                waited = now() > due          # every sender was busy when its time came
                sent = _wait_until(due, now)
                late = sent - due > LATE_AFTER_S
                if drop_after_s is not None and sent - due > drop_after_s:
                    records[i] = Record(task, i, due, None, None, DROPPED, True, None, waited)
                    continue
                status, error = OK, None
                try:
                    sender.send(ScheduledRequest(task, i, due))
                except Exception as e:  # the request failed: that is a measurement, not a crash
                    status, error = ERROR, describe(e)
                records[i] = Record(task, i, due, sent, now(), status, late, error, waited)
        except BaseException as e:  # noqa: BLE001 - reported by the task, never lost in a thread
            failures.append(e)

    threads = [threading.Thread(target=loop, args=(s,), name=f"loadgen-{task}-{n}", daemon=True)
               for n, s in enumerate(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise LoadGenError(f"task {task}: a sender thread failed: {describe(failures[0])}") from failures[0]
    return [r for r in records if r is not None]


def run_task(task: int, partitions: int, start_at: float, phases: Sequence[Phase], seed: int,
             sender_factory: SenderFactory, concurrency: int = DEFAULT_CONCURRENCY, arrivals: str = "uniform",
             drop_after_s: float | None = None, clock: Callable[[], float] | None = None,
             in_flight: int = DEFAULT_IN_FLIGHT) -> list[Record]:
    """One task in this process: open its senders, send its share of the load from epoch ``start_at``, close them."""
    check_options(phases, partitions, concurrency, arrivals, drop_after_s)
    senders = open_senders(task, partitions, seed, sender_factory, concurrency)
    try:
        return send_schedule(task, partitions, start_at, phases, seed, senders, arrivals, drop_after_s, clock,
                             in_flight)
    finally:
        close_senders(senders)


# -- did the generator keep its schedule? ----------------------------------------------------------------------------
# Two bars. ``late`` (LATE_AFTER_S) is counted and shown. A run is invalid (and a capacity step did not keep up;
# ``kept`` false) when more than MAX_OWN_LATE_FRACTION of its requests went out more than BEHIND_AFTER_S late through
# the generator's own fault: a generator short of capacity falls further behind with every request (seconds within
# a step), while a stall of the whole machine (2 cores shared with the nodes under test) delays a few requests by a
# few hundred ms at most, and that delay is already in their response times, which count from the scheduled time.
MAX_OWN_LATE_FRACTION = 0.01
BEHIND_AFTER_S = 0.25


def _rank(ordered: Sequence[float], p: float) -> float:
    """Nearest rank, as benchmarks/async_triggers/benchmarks/results.py."""
    return ordered[max(0, math.ceil(round(p / 100 * len(ordered), 9)) - 1)] if ordered else 0.0


def schedule_report(records: Sequence, in_flight: int | None = None) -> dict:
    """How well the generator kept its schedule in a run: requests late through waiting for the system under test
    (``waited``) and late through the generator itself (``own_late``, and ``own_behind``: more than BEHIND_AFTER_S
    late); the lateness of the requests that did not wait (the generator's own send delay, ms); and ``kept``: at
    most MAX_OWN_LATE_FRACTION of the requests were behind through the generator's fault. A run that did not keep
    it measured the generator, not the approach."""
    n = len(records)
    own = sorted((r.sent - r.scheduled) * 1000 for r in records
                 if r.sent is not None and not getattr(r, "waited", False))
    own_late = sum(1 for r in records if r.late and not getattr(r, "waited", False))
    own_behind = sum(1 for lateness in own if lateness > BEHIND_AFTER_S * 1000)
    fraction = own_late / n if n else 0.0
    return {"in_flight": in_flight,
            "late": sum(1 for r in records if r.late),
            "waited": sum(1 for r in records if getattr(r, "waited", False)),
            "own_late": own_late,
            "own_late_fraction": round(fraction, 5),
            "own_behind": own_behind,
            "own_lateness_ms": {"median": round(_rank(own, 50), 3), "p99": round(_rank(own, 99), 3),
                                "max": round(own[-1], 3) if own else 0.0},
            "kept": (own_behind / n if n else 0.0) <= MAX_OWN_LATE_FRACTION}
