"""Statistics of paired latency samples: each round writes once to every variant, in a random order, so what the
shared machine does during a round (a flush, a scan, another process) falls on all of them alike. A ratio of two
variants is the ratio of their medians; its 95 % interval comes from resampling whole rounds (a percentile
bootstrap), which keeps the pairing. Pure Python: the experiments print these, a unit test checks them."""
from __future__ import annotations

import dataclasses
import random
import statistics
from typing import Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class Ratio:
    variant: str
    baseline: str
    ratio: float            # median(variant) / median(baseline) over every round
    low: float              # the 95 % interval's ends (percentile bootstrap over rounds)
    high: float
    resamples: int

    def text(self) -> str:
        return f"{self.ratio:.3f}x ({self.low:.3f}-{self.high:.3f})"


def check_rounds(rounds: Mapping[str, Sequence[float]]) -> int:
    """The number of rounds; ValueError unless every variant has one sample per round (and there is one)."""
    lengths = {len(v) for v in rounds.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError(f"paired samples need one sample per variant and round, found lengths "
                         f"{ {k: len(v) for k, v in rounds.items()} }")
    return lengths.pop()


def ratio(rounds: Mapping[str, Sequence[float]], variant: str, baseline: str, resamples: int = 2000,
          seed: int = 1) -> Ratio:
    """The ratio of ``variant``'s median to ``baseline``'s, with its 95 % bootstrap interval over rounds."""
    n = check_rounds(rounds)
    a, b = list(rounds[variant]), list(rounds[baseline])
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        draws.append(statistics.median(a[i] for i in picks) / statistics.median(b[i] for i in picks))
    draws.sort()
    low = draws[int(0.025 * (resamples - 1))]
    high = draws[int(0.975 * (resamples - 1))]
    return Ratio(variant, baseline, statistics.median(a) / statistics.median(b), low, high, resamples)


def block_medians(samples: Sequence[float], blocks: int) -> list[float]:
    """The median of each of ``blocks`` consecutive, equal blocks of ``samples`` (drift shows as a trend)."""
    size = max(1, len(samples) // blocks)
    return [statistics.median(samples[i:i + size]) for i in range(0, size * blocks, size) if samples[i:i + size]]


def order(variants: Sequence[str], rng: random.Random) -> list[str]:
    """One round's order of the variants: random, drawn anew each round."""
    out = list(variants)
    rng.shuffle(out)
    return out
