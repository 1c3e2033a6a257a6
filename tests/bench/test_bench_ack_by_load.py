"""The acknowledgement against the load: shares run rising then falling, one line per share with both approaches'
acknowledgements and their ratio, and a summary of each share's repetitions."""
import pytest

from async_triggers.benchmarks.experiments import ack_by_load as abl


def _run(median, p99, kept=None, valid=True, reason=None):
    return {"response_ms": {"median": median, "p99": p99}, "config": {"kept_up": kept}, "valid": valid,
            "invalid_reason": reason}


def test_should_run_the_shares_rising_then_falling():
    assert abl.schedule([0.4, 0.2, 0.8], 3) == [0.2, 0.4, 0.8, 0.8, 0.4, 0.2, 0.2, 0.4, 0.8]


def test_should_give_each_share_its_ratio_of_medians_and_say_an_invalid_run():
    line = abl.ratio_line(0.8, 992, _run(11.47, 135.9, kept=0.96), _run(0.74, 3.7))
    assert line.startswith(" 80%     992 msg/s") and "15.50x" in line and line.endswith("propagated when the load ended 96%")
    bad = abl.ratio_line(0.2, 248, _run(1.0, 2.0), _run(0.5, 1.0, valid=False, reason="the generator fell behind"))
    assert "2.00x" in bad and bad.endswith("; plain INVALID: the generator fell behind")
    assert abl.summary([(0.2, 1.1), (0.8, 9.0), (0.2, 1.3), (0.8, 12.0), (0.2, 1.2)]) == [
        " 20%: 1.20x (1.10, 1.30, 1.20)", " 80%: 10.50x (9.00, 12.00)"]


def test_should_name_the_flows_thread_level_and_summarise_each_share_and_level_apart():
    line = abl.ratio_line(0.4, 496, _run(20.0, 300.0, kept=1.0), _run(1.0, 4.0), "nice")
    assert line.startswith(" 40%     496 msg/s   flow, nice   20.00 /") and "20.00x" in line
    assert abl.summary([(0.4, "normal", 18.0), (0.4, "nice", 20.0), (0.4, "normal", 22.0)]) == [
        " 40%, nice: 20.00x (20.00)", " 40%, normal: 20.00x (18.00, 22.00)"]


def test_should_read_each_condition_and_refuse_a_wrong_one_naming_it():
    assert abl.condition("normal") == ("normal", 0)
    assert abl.condition("nice") == ("nice", 0)
    assert abl.condition("client-first") == ("normal", abl.CLIENT_FIRST_NICE)
    assert abl.condition("client-first+idle") == ("idle", abl.CLIENT_FIRST_NICE)
    for wrong in ("fast", "nice+idle", "client-first+client-first"):
        with pytest.raises(ValueError, match=wrong.replace("+", r"\+")):
            abl.condition(wrong)


def test_should_name_an_invalid_run_by_its_condition():
    line = abl.ratio_line(0.6, 744, _run(60.0, 500.0, valid=False, reason="late"), _run(1.0, 9.0), "client-first")
    assert line.endswith("; flow, client-first INVALID: late")


def test_should_turn_the_conditions_and_the_plain_writes_order_round_every_other_repetition():
    assert abl.run_order(["normal", "nice"], [0, -10], 1) == (["normal", "nice"], [-10, 0])
    assert abl.run_order(["normal", "nice"], [0, -10], 2) == (["nice", "normal"], [0, -10])


def test_should_leave_the_plugins_threads_alone_while_normal_and_move_them_back_when_closed(monkeypatch):
    calls = []
    monkeypatch.setattr(abl, "set_flow_threads", lambda pids, level: calls.append((tuple(pids), level)))
    threads = abl.FlowThreads(lambda: [11, 12])
    threads.set("normal")
    assert calls == [], "nothing is touched while every level set is normal"
    threads.set("nice")
    threads.close()
    assert calls[0] == ((11, 12), "nice") and calls[-1] == ((11, 12), "normal")
    assert all(level == "nice" for _, level in calls[1:-1]), "only the level set is kept up in between"


def test_should_count_this_process_threads_as_the_clients():
    import threading
    threads = abl.client_threads()
    assert threading.get_native_id() in threads and len(threads) == len(set(threads))
