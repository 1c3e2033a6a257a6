"""The saturation search's decisions, apart from the runs: which rate to offer next, given whether each step so far
was bounded. Pure (no cluster, no clock), so the rule is tested on sequences of outcomes and the time model
(``ctl bench plan``) counts the steps with the same rule.

The rule, from ``start``:

- **grow**: while every rate so far counted bounded, the next is ``factor`` times the last;
- **go down**: while none did, the next is the last divided by ``factor``;
- **bisect**: once there is a bounded rate and an unbounded one, the next is the geometric middle of the highest
  rate that counted bounded and the lowest that counted unbounded, until the two are within ``ratio`` of each
  other;
- **repeat**: a step that was not bounded is run once more at the same rate before it counts; the rate counts
  unbounded only when both trials were, so one unlucky trial does not decide where the search goes;
- **stop** when the bounds are within ``ratio`` or after ``max_steps`` trials (repeats count: each is a run).
"""
from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Trial:
    rate: float
    bounded: bool
    repeat: bool       # the second trial of a rate whose first was not bounded


class RateSearch:
    """One search: :meth:`next_rate` proposes, :meth:`record` is told how that trial went."""

    def __init__(self, start: float, factor: float, ratio: float, max_steps: int):
        if not start > 0:
            raise ValueError(f"the search starts at a positive rate, found: {start}")
        if not factor > 1 or not ratio > 1:
            raise ValueError(f"factor ({factor}) and ratio ({ratio}) must be greater than 1")
        self.factor, self.ratio, self.max_steps = factor, ratio, max_steps
        self.trials: list[Trial] = []
        self.bounded_rate: float | None = None     # the highest rate that counted bounded
        self.unbounded_rate: float | None = None   # the lowest rate that counted unbounded
        self._rate = float(start)
        self._again = False                        # the last trial missed once: the next repeats it
        self._converged = False

    @property
    def done(self) -> bool:
        return self._converged or len(self.trials) >= self.max_steps

    def next_rate(self) -> float | None:
        """The rate of the next trial; None when the search is over."""
        return None if self.done else self._rate

    def next_is_repeat(self) -> bool:
        return not self.done and self._again

    def record(self, bounded: bool) -> Trial:
        """The outcome of a trial at :meth:`next_rate`; returns it as recorded."""
        if self.done:
            raise ValueError("the search is over: no trial to record")
        trial = Trial(self._rate, bool(bounded), self._again)
        self.trials.append(trial)
        if not bounded and not self._again:
            self._again = True                     # tried once more before it counts
            return trial
        self._again = False
        if bounded:
            self.bounded_rate = max(self.bounded_rate or 0.0, trial.rate)
        else:
            self.unbounded_rate = min(self.unbounded_rate or math.inf, trial.rate)
        lo, hi = self.bounded_rate, self.unbounded_rate
        if hi is None:
            self._rate = trial.rate * self.factor
        elif lo is None:
            self._rate = trial.rate / self.factor
        elif hi / lo <= self.ratio:
            self._converged = True
        else:
            self._rate = math.sqrt(lo * hi)
        return trial


def simulate(start: float, limit: float, factor: float, ratio: float, max_steps: int) -> RateSearch:
    """The search run against a system bounded exactly up to ``limit``, every miss repeated (the time model's
    case): the finished search."""
    search = RateSearch(start, factor, ratio, max_steps)
    while (rate := search.next_rate()) is not None:
        search.record(rate <= limit)
    return search
