"""benchmarks/async_triggers/benchmarks/harness/fanout_probe.py without a cluster: when the last follower's row is
found, the sizes' order, the statistics."""
from __future__ import annotations

from async_triggers.benchmarks.harness import fanout_probe


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_should_wait_for_the_sentinel_then_sweep_until_the_last_follower_is_there():
    clock = Clock()
    arrives = {1: 0.02, 2: 0.05, 3: 0.03, 4: 0.2}   # user 4 is written last of all, after the sentinel (3)
    reads = []

    def found(users):
        reads.append(list(users))
        return {u for u in users if arrives[u] <= clock.now}

    sentinel_at, last_at = fanout_probe.wait_all(found, [1, 2, 3, 4], 3, give_up_at=5.0, clock=clock,
                                                 sleep=clock.sleep)
    assert 0.03 <= sentinel_at < 0.04
    assert 0.2 <= last_at < 0.2 + fanout_probe.SWEEP_PAUSE_S + 0.01, "the last row, not the sentinel's, ends the wait"
    assert all(len(r) == 1 for r in reads[:3]), "until the sentinel, one row is read"
    assert reads[-1] == [4], "a sweep reads only the rows still missing"
    sweeps = reads[next(i for i, r in enumerate(reads) if len(r) > 1):]
    # each sweep reads every missing row once: [1, 2, 3, 4] (1 and 3 there), then [2, 4] (2 there), then [4]...
    assert sweeps[:2] == [[1, 2, 3, 4], [2, 4]], sweeps[:3]
    assert all(r == [4] for r in sweeps[2:])


def test_should_call_back_once_when_the_sentinel_is_read_before_any_sweep():
    clock = Clock()
    arrives = {1: 0.3, 2: 0.05}   # the sentinel (2) first; user 1 a few sweeps later
    calls, sweeps_at_call = [], []
    reads = []

    def found(users):
        reads.append(list(users))
        return {u for u in users if arrives[u] <= clock.now}

    def at_sentinel():
        calls.append(clock.now)
        sweeps_at_call.append(sum(len(r) > 1 for r in reads))

    sentinel_at, _ = fanout_probe.wait_all(found, [1, 2], 2, give_up_at=5.0, clock=clock, sleep=clock.sleep,
                                           at_sentinel=at_sentinel)
    assert calls == [sentinel_at] and sweeps_at_call == [0], (calls, sweeps_at_call)


def test_should_give_up_at_the_deadline_and_say_what_was_not_there():
    clock = Clock()
    assert fanout_probe.wait_all(lambda us: set(), [1, 2], 2, give_up_at=0.1, clock=clock,
                                 sleep=clock.sleep) == (None, None)
    clock = Clock()
    sentinel_at, last_at = fanout_probe.wait_all(lambda us: {u for u in us if u != 1}, [1, 2], 2, give_up_at=0.1,
                                                 clock=clock, sleep=clock.sleep)
    assert sentinel_at == 0.0 and last_at is None


def test_should_run_the_largest_size_every_nth_probe_and_the_others_in_turn():
    size = fanout_probe.schedule([1, 100, 10_000, 10], celebrity_every=4)
    assert [size(i) for i in range(8)] == [1, 10, 100, 10_000, 1, 10, 100, 10_000]
    size = fanout_probe.schedule([1, 10, 10_000], celebrity_every=5)
    assert [size(i) for i in range(10)] == [1, 10, 1, 10, 10_000, 1, 10, 1, 10, 10_000]
    assert [fanout_probe.schedule([5], 3)(i) for i in range(3)] == [5, 5, 5]


def test_should_say_when_the_p99_is_the_maximum():
    assert fanout_probe.stats([]) == {"n": 0}
    few = fanout_probe.stats([30.0, 10.0, 20.0])
    assert few == {"n": 3, "median": 20.0, "p99": 30.0, "p99_is_max": True, "max": 30.0}
    many = fanout_probe.stats([float(i) for i in range(1, 201)])
    assert (many["p99"], many["p99_is_max"], many["max"]) == (198.0, False, 200.0)


def test_should_report_each_size_and_judge_the_celebritys_p99():
    from async_triggers.benchmarks.experiments import lag_by_fanout
    summary = {"by_size": {"1": {**fanout_probe.stats([10.0, 30.0]), "to_sentinel": fanout_probe.stats([9.0]),
                                 "timed_out": 0},
                           "10000": {**fanout_probe.stats([1500.0, 1900.0]),
                                     "to_sentinel": fanout_probe.stats([1400.0]), "timed_out": 0}},
               "probe_rows_s": 2001.5}
    lines, verdict = lag_by_fanout.report(summary, 400.0, 500.0, 4000.0, drain_s=2.0)
    assert verdict == "met"
    assert len(lines) == 5, "a run that kept up says nothing more"
    assert "0.8 x 500 msg/s" in lines[0]
    assert lines[2].startswith("  10,000 followers: 2 probes, median 1700 ms, max 1900 ms")
    assert "2001.5 of the flow's 4000 timeline rows/s" in lines[3]
    assert lines[4].endswith("met (from 2 probes: the p99 is their maximum)")
    summary["by_size"]["10000"]["busy_cores"], summary["cores"] = 1.874, 2
    line = lag_by_fanout.report(summary, 400.0, 500.0, 4000.0, drain_s=2.0)[0][2]
    assert line.endswith("the last-written row first read after 1400 ms (median); the nodes kept 1.87 of the "
                         "machine's 2 cores busy until then (median); timed out 0"), line
    assert line.count("max") == 1, "below 100 probes the p99 is the maximum, said once"
    summary["by_size"]["1"] = {**fanout_probe.stats([float(i) for i in range(1, 201)]),
                               "to_sentinel": fanout_probe.stats([9.0]), "timed_out": 0}
    line = lag_by_fanout.report(summary, 400.0, 500.0, 4000.0, drain_s=2.0)[0][1]
    assert line.startswith("       1 followers: 200 probes, median 100 ms, p99 198 ms, max 200 ms; "), line
    summary["by_size"]["10000"]["timed_out"] = 1
    assert lag_by_fanout.report(summary, 400.0, None, None)[1] == "missed", "a probe that never ended misses"


def test_should_say_when_the_flow_did_not_keep_up_with_the_rate():
    from async_triggers.benchmarks.experiments import lag_by_fanout
    summary = {"by_size": {"1": {**fanout_probe.stats([1158.0]), "to_sentinel": fanout_probe.stats([1150.0]),
                                 "timed_out": 0}}, "probe_rows_s": 1.0}
    lines, _ = lag_by_fanout.report(summary, 992.0, 1240.0, 4437.0, drain_s=45.2)
    assert "did not keep up with 992 msg/s" in lines[-1] and "took 45 s to drain" in lines[-1]
    assert "did not drain" in lag_by_fanout.report(summary, 992.0, 1240.0, None, drain_s=None)[0][-1]


class Future:
    """Answered once its result is taken."""

    def __init__(self, rows=None, error=None):
        self.rows, self.error, self.taken = rows, error, False

    def result(self):
        self.taken = True
        if self.error:
            raise self.error
        return self.rows


class Session:
    """Answers a read of a group with the users that have the row; fails the groups that hold a user in ``fail``;
    records each request and how many were in flight when it was sent (answered when its result is taken)."""

    def __init__(self, present, fail=()):
        self.present, self.fail = set(present), set(fail)
        self.requests, self.in_flight_at_send, self._open = [], [], []

    def execute_async(self, statement, values):
        users, tweet = values
        users = [users] if statement == "single" else list(users)
        self.requests.append((statement, users, tweet))
        self._open = [f for f in self._open if not f.taken]
        self.in_flight_at_send.append(len(self._open))
        future = Future([(u,) for u in users if u in self.present],
                        RuntimeError("timeout") if self.fail & set(users) else None)
        self._open.append(future)
        return future


def test_should_sweep_the_rows_a_group_of_partitions_to_a_request_a_few_requests_in_flight():
    users = list(range(1, 251))
    session = Session(present=[u for u in users if u % 7], fail=[150])
    found, failed = fanout_probe.found_rows(session, "single", "grouped", "t1", users, group=100, in_flight=2)
    assert [(s, len(us)) for s, us, _ in session.requests] == [("grouped", 100), ("grouped", 100), ("grouped", 50)]
    assert all(t == "t1" for _, _, t in session.requests)
    assert max(session.in_flight_at_send) == 1, "the third request waits for the first's answer"
    assert failed == 1, "the group holding user 150 failed"
    assert found == {u for u in users if u % 7 and not 101 <= u <= 200}, "a failed group's users count as not found"


def test_should_read_a_lone_user_with_the_single_partition_read():
    session = Session(present=[42])
    found, failed = fanout_probe.found_rows(session, "single", "grouped", "t", [42], group=100)
    assert (found, failed) == ({42}, 0)
    assert session.requests == [("single", [42], "t")]
    found, _ = fanout_probe.found_rows(session, "single", "grouped", "t", [1, 2, 3, 42], group=3)
    assert found == {42} and [s for s, _, _ in session.requests[1:]] == ["grouped", "single"]


class _Prepared:
    consistency_level = None


class _PreparingSession:
    def prepare(self, cql):
        return _Prepared()


def test_should_stop_measuring_busy_cores_when_the_nodes_cpu_cannot_be_read():
    readings = iter([10.0])

    def cpu():
        return next(readings)   # the second call fails, as a node's process gone does

    probe = fanout_probe.FanoutLagProbe(_PreparingSession(), "ks", lambda tweet: None, {1: (7, [1])}, cpu=cpu)
    assert probe._cpu() == 10.0
    assert probe._cpu() is None and probe.cpu is None
    assert len(probe.errors) == 1 and "busy cores no longer measured" in probe.errors[0]
    assert probe._cpu() is None and len(probe.errors) == 1, "said once"
    assert probe.summary(1.0)["by_size"]["1"]["busy_cores"] is None
