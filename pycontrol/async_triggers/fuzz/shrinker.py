"""Shrinking a failing history to the few operations that still fail (Zeller's delta debugging, as Hypothesis and
QuickCheck shrink): each candidate is run again on the cluster (keys of its own) and counts as failing when a flow
that failed at first differs again. Runs are expensive, so a budget bounds them, and the cheap cuts come first:
the history without its stopped replica, then only the operations on the source partitions of the rows that
differed (the verify job's samples name them), then ddmin over what is left."""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence, TypeVar

from .generator import History

T = TypeVar("T")


class Budget:
    """Counts the candidate runs; ``spent`` once ``limit`` were made."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    @property
    def spent(self) -> bool:
        return self.used >= self.limit


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool], budget: Budget) -> list[T]:
    """A subsequence of ``items`` (which fails) that still fails and from which no single chunk of the last
    granularity can be removed (1-minimal when the budget lasts). ``fails`` is called at most once per candidate
    and never more than the budget allows; the order of ``items`` is kept."""
    current = list(items)
    seen: dict[tuple[int, ...], bool] = {}
    position = {id(x): i for i, x in enumerate(current)}

    def test(candidate: list[T]) -> bool:
        key = tuple(position[id(x)] for x in candidate)
        if key not in seen:
            if budget.spent:
                return False
            budget.used += 1
            seen[key] = fails(candidate)
        return seen[key]

    n = 2
    while len(current) >= 2 and not budget.spent:
        size = -(-len(current) // n)
        chunks = [current[i:i + size] for i in range(0, len(current), size)]
        for chunk in chunks:
            if test(chunk):
                current, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                complement = [x for j, c in enumerate(chunks) if j != i for x in c]
                if test(complement):
                    current, n = complement, max(n - 1, 2)
                    break
            else:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
    return current


@dataclasses.dataclass
class Shrunk:
    history: History
    runs: int
    exhausted: bool     # the budget ran out: shorter may exist


def shrink(history: History, fails: Callable[[History], bool], suspects: set[tuple[str, int]],
           budget: Budget) -> Shrunk:
    """The shortest failing history found from ``history`` (see the module); ``fails`` runs a candidate."""
    current = history
    if current.fault is not None and not budget.spent:
        budget.used += 1
        if fails(current.without_fault()):
            current = current.without_fault()
    focused = current.touching(suspects) if suspects else current
    if 0 < len(focused.ops) < len(current.ops) and not budget.spent:
        budget.used += 1
        if fails(focused):
            current = focused
    ops = ddmin(list(current.ops), lambda ops: fails(current.subset(ops)), budget)
    return Shrunk(current.subset(ops), budget.used, budget.spent)
