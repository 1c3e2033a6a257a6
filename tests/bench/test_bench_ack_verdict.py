"""bench-ack's verdict per block: met or missed by the flow's interval's upper end, and undecided when the method's
own control (one plain table against the other) says the block cannot decide a 10 % price."""
from async_triggers.benchmarks.experiments.ack_latency import block_verdict
from async_triggers.benchmarks.harness.paired import Ratio


def ratio(value: float, low: float, high: float, variant: str = "flow") -> Ratio:
    return Ratio(variant, "plain", value, low, high, 2000)


def test_should_decide_by_the_upper_end_when_the_control_reads_one():
    control = ratio(1.0, 0.96, 1.04, "plain_control")
    assert block_verdict(ratio(1.05, 1.01, 1.09), control) == "met"
    assert block_verdict(ratio(1.06, 1.00, 1.109), control) == "missed"


def test_should_decide_nothing_when_the_control_misses_one_or_spreads_wide():
    # the celebrity's fan-out running beside the writes: every table's ack moves by more than the flow's price
    off = block_verdict(ratio(0.41, 0.253, 0.641), ratio(0.597, 0.411, 1.027, "plain_control"))
    assert off.startswith("undecided") and "0.597x" in off
    wide = block_verdict(ratio(1.41, 0.814, 2.061), ratio(1.194, 0.738, 1.920, "plain_control"))
    assert wide.startswith("undecided")
    assert block_verdict(ratio(1.0, 0.9, 1.05), ratio(1.10, 1.02, 1.2, "plain_control")).startswith("undecided")
