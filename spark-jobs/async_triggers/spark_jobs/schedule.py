"""The open-loop schedule of the load generator (``loadgen``): the rate profile as phases, every option checked
before anything starts, and each task's send times computed in advance, so the offered load never depends on how
fast the system answers."""
from __future__ import annotations

import dataclasses
import math
import random
from typing import NamedTuple, Sequence

from .errors import LoadGenError

ARRIVALS = ("uniform", "poisson")
DEFAULT_CONCURRENCY = 8


@dataclasses.dataclass(frozen=True)
class Phase:
    """``rate`` requests per second in total (all tasks together) for ``duration_s`` seconds."""
    duration_s: float
    rate: float


class ScheduledRequest(NamedTuple):
    task: int
    seq: int            # index of the request in its task's schedule
    scheduled: float    # epoch seconds


def check_options(phases: Sequence[Phase], partitions: int, concurrency: int = DEFAULT_CONCURRENCY,
                  arrivals: str = "uniform", drop_after_s: float | None = None) -> None:
    """Every option checked before anything starts, with the offending value in the message."""
    if not phases:
        raise LoadGenError("'phases' must hold at least one phase, found none")
    for i, ph in enumerate(phases):
        if not (isinstance(ph.duration_s, (int, float)) and ph.duration_s > 0 and math.isfinite(ph.duration_s)):
            raise LoadGenError(f"phase {i}: 'duration_s' must be strictly positive, found: {ph.duration_s}")
        if not (isinstance(ph.rate, (int, float)) and ph.rate >= 0 and math.isfinite(ph.rate)):
            raise LoadGenError(f"phase {i}: 'rate' must be positive or zero, found: {ph.rate}")
    if not isinstance(partitions, int) or partitions < 1:
        raise LoadGenError(f"'partitions' must be strictly positive, found: {partitions}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise LoadGenError(f"'concurrency' must be strictly positive, found: {concurrency}")
    if arrivals not in ARRIVALS:
        raise LoadGenError(f"'arrivals' must be one of {', '.join(ARRIVALS)}, found: {arrivals!r}")
    if drop_after_s is not None and not drop_after_s >= 0:
        raise LoadGenError(f"'drop_after_s' must be positive or zero, found: {drop_after_s}")


def schedule(phases: Sequence[Phase], partitions: int, task: int, seed: int = 0,
             arrivals: str = "uniform") -> list[float]:
    """The send times of ``task``, in seconds from the start of the run, in increasing order.

    ``uniform``: phase by phase, the run's requests are evenly spaced at ``1 / rate`` and dealt round robin to the
    tasks (request ``j`` of a phase goes to task ``j % partitions``), so the tasks together send exactly at the
    rate. ``poisson``: each task draws a Poisson process of rate ``rate / partitions`` (seeded by ``seed`` and the
    task), whose superposition is a Poisson process of the run's rate.
    """
    check_options(phases, partitions, arrivals=arrivals)
    if not 0 <= task < partitions:
        raise LoadGenError(f"'task' must be between 0 and {partitions - 1}, found: {task}")
    times: list[float] = []
    begin = 0.0
    rng = random.Random((int(seed) & 0xFFFFFFFF) << 32 | task)
    for ph in phases:
        end = begin + ph.duration_s
        if ph.rate > 0:
            if arrivals == "uniform":
                n = int(math.floor(ph.rate * ph.duration_s + 1e-9))
                times.extend(begin + j / ph.rate for j in range(task, n, partitions))
            else:
                t = begin + rng.expovariate(ph.rate / partitions)
                while t < end:
                    times.append(t)
                    t += rng.expovariate(ph.rate / partitions)
        begin = end
    return times


def expected_requests(phases: Sequence[Phase]) -> int:
    """The number of requests of a ``uniform`` schedule, all tasks together."""
    return sum(int(math.floor(ph.rate * ph.duration_s + 1e-9)) for ph in phases if ph.rate > 0)
