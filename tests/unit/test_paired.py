"""The paired statistics of the ack measurement: the ratio of medians and its bootstrap interval, block medians."""
import random

import pytest

from async_triggers.benchmarks.harness import paired


def test_should_give_a_ratio_of_medians_with_an_interval_around_it():
    rng = random.Random(3)
    base = [2.0 + rng.random() for _ in range(1000)]
    rounds = {"plain": base, "flow": [1.3 * x for x in base], "other": [x + rng.gauss(0, 0.05) for x in base]}
    got = paired.ratio(rounds, "flow", "plain", resamples=500)
    assert got.ratio == pytest.approx(1.3)
    assert got.low <= 1.3 <= got.high and got.high - got.low < 0.02   # exact pairs: a narrow interval
    control = paired.ratio(rounds, "other", "plain", resamples=500)
    assert control.low < 1.0 < control.high


def test_should_widen_the_interval_for_fewer_noisier_rounds():
    rng = random.Random(4)
    rounds = {"a": [rng.expovariate(1) for _ in range(50)], "b": [rng.expovariate(1) for _ in range(50)]}
    got = paired.ratio(rounds, "a", "b", resamples=500)
    assert got.high - got.low > 0.2


def test_should_refuse_unpaired_samples():
    with pytest.raises(ValueError, match="one sample per variant and round"):
        paired.ratio({"a": [1.0, 2.0], "b": [1.0]}, "a", "b")
    with pytest.raises(ValueError):
        paired.ratio({"a": [], "b": []}, "a", "b")


def test_should_give_each_blocks_median():
    assert paired.block_medians([1, 2, 3, 10, 20, 30], 2) == [2, 20]


def test_should_draw_every_variant_once_per_round_in_random_orders():
    rng = random.Random(5)
    orders = {tuple(paired.order(["a", "b", "c"], rng)) for _ in range(200)}
    assert all(sorted(o) == ["a", "b", "c"] for o in orders) and len(orders) == 6
