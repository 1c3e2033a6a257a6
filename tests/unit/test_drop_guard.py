"""What `ctl trigger drop` counts before it drops a flow (pycontrol/async_triggers/drop_guard.py), and the confirmation every
discard asks for: the counts come from each node's latest report, a node whose count is not known yet refuses the
drop like a count does, and without a terminal a discard needs --yes."""
from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from async_triggers import drop_guard, status
from async_triggers.errors import FlowNotEmpty, NotConfirmed

NOW = dt.datetime(2026, 11, 26, 12, 0, 0)


def report(node: str, pending=0, active=0, backlog=0, scanned_after_capture=True, flow="copy"):
    capture = NOW - dt.timedelta(seconds=5)
    scan = capture + dt.timedelta(seconds=1 if scanned_after_capture else -1)
    return status.FlowNodeStatus(flow=flow, node=node, pending=pending, active=active, completed=0, failed=0, retried=0,
                                 oldest_pending_ms=0, workers=1, capacity=100, spilled=0, discarded=0, updated=NOW,
                                 backlog=backlog, last_capture=capture, last_scan=scan)


def test_should_find_nothing_held_once_every_node_scanned_after_its_captures():
    held = drop_guard.holdings_of("copy", [report("n1"), report("n2"), report("n1", pending=9, flow="other")], 0,
                                  live=["n1", "n2"])
    assert held.empty and held.describe() == "nothing"


def test_should_count_queued_running_and_backed_up_tasks_per_node_and_dead_letters():
    held = drop_guard.holdings_of("copy", [report("n1", pending=3, active=1), report("n2", backlog=40)], 2,
                                  paused=True, live=["n1", "n2"])
    assert not held.empty and held.tasks == 44 and held.unfinished == {"n1": 4, "n2": 40}
    assert held.describe() == ("44 unfinished task(s) (n1 4 queued or running, n2 40 in backup entries; each replica "
                               "of a task's row holds a backup entry of it; the flow is paused) and 2 dead letter(s)")
    refused = drop_guard.refusal(held)
    assert isinstance(refused, FlowNotEmpty)
    assert str(refused) == (
        "flow 'copy' still holds 44 unfinished task(s) (n1 4 queued or running, n2 40 in backup entries; each "
        "replica of a task's row holds a backup entry of it; the flow is paused) and 2 dead letter(s): "
        "dropping it now throws them away with its backup map. `--drain` waits for its tasks (resume it first: a "
        "paused flow runs none); its dead letters stay until `ctl trigger dlq retry` or `purge`; "
        "`--discard-pending` drops it anyway")
    assert held.as_dict()["by_node"] == {"n1": 4, "n2": 40} and held.as_dict()["backup_entries"] == 40


def test_should_not_take_a_node_that_has_not_counted_its_captures_yet_for_an_empty_one():
    # n2 captured after its last scan: its backlog is not known yet; n3 is up and never reported the flow
    held = drop_guard.holdings_of("copy", [report("n1"), report("n2", scanned_after_capture=False)], 0,
                                  live=["n1", "n2", "n3"])
    assert not held.empty and held.tasks == 0 and held.uncounted == ("n2", "n3")
    assert "tasks not counted yet on n2, n3" in drop_guard.refusal(held).args[0]


def test_should_ask_before_a_discard_and_want_yes_without_a_terminal(monkeypatch):
    from async_triggers.cli.options import confirm
    confirm("Drop?", yes=True)   # scripts: no question
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(NotConfirmed, match=r"Drop\? No terminal to ask: add --yes to confirm"):
        confirm("Drop?", yes=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("typer.confirm", lambda *a, **k: False)
    with pytest.raises(NotConfirmed, match="not confirmed: nothing was changed"):
        confirm("Drop?", yes=False)
    monkeypatch.setattr("typer.confirm", lambda *a, **k: True)
    confirm("Drop?", yes=False)


def test_should_retry_a_dead_letter_on_a_live_node_when_its_own_node_is_gone():
    import uuid

    from async_triggers import dlq
    letters = [dlq.DeadLetter("copy", uuid.UUID(int=i), "10.0.0.9" if i % 2 else "10.0.0.1", "insert", 1, "00", "x",
                              3, None) for i in range(6)]
    live = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    sent = [dlq.retry_node(d, live) for d in letters]
    assert [n for d, n in zip(letters, sent) if d.node == "10.0.0.1"] == ["10.0.0.1"] * 3, "its own node, when up"
    moved = [n for d, n in zip(letters, sent) if d.node == "10.0.0.9"]
    assert set(moved) <= set(live) and len(set(moved)) > 1, "spread over the live nodes"
    assert dlq.retry_node(letters[1], []) == "10.0.0.9", "nothing known up: as before"


def test_should_count_dead_letters_at_local_one_when_a_quorum_is_unavailable():
    from types import SimpleNamespace

    from cassandra import ConsistencyLevel, Unavailable

    from async_triggers import dlq

    class Session:
        levels = []
        cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={"async_triggers": SimpleNamespace(
            tables={"dead_letters": object()})}))

        def execute(self, statement, params=None):
            self.levels.append(statement.consistency_level)
            if statement.consistency_level == ConsistencyLevel.LOCAL_QUORUM:
                raise Unavailable("Cannot achieve consistency level LOCAL_QUORUM")
            return SimpleNamespace(one=lambda: (4,))

    session = Session()
    assert dlq.count(session, "copy") == 4
    assert session.levels == [ConsistencyLevel.LOCAL_QUORUM, ConsistencyLevel.LOCAL_ONE]


def test_should_count_only_reports_made_after_the_drop_began_and_wait_for_every_live_node():
    # n1's report before the drop began says nothing of a write acknowledged just before it; its next one does
    since = NOW
    stale = dataclasses.replace(report("n1"), updated=NOW - dt.timedelta(seconds=1))
    later = dataclasses.replace(report("n1", backlog=30), updated=NOW + dt.timedelta(seconds=2))
    n2 = dataclasses.replace(report("n2"), updated=NOW + dt.timedelta(seconds=1))
    rounds = iter([[stale, n2], [stale, n2], [later, n2]])
    slept = []
    reports = drop_guard.fresh_reports(lambda: next(rounds), ["n1", "n2"], since, wait=10, sleep=slept.append,
                                       clock=lambda: 0.0)
    assert sorted((s.node, s.backlog) for s in reports) == [("n1", 30), ("n2", 0)] and len(slept) == 2
    assert drop_guard.holdings_of("copy", reports, 0, live=["n1", "n2"]).tasks == 30


def test_should_leave_a_node_without_a_fresh_report_uncounted_after_the_wait():
    clock = iter([0.0, 5.0, 11.0])
    stale = dataclasses.replace(report("n1"), updated=NOW - dt.timedelta(seconds=1))
    reports = drop_guard.fresh_reports(lambda: [stale], ["n1"], NOW, wait=10, sleep=lambda _: None,
                                       clock=lambda: next(clock))
    assert reports == []
    held = drop_guard.holdings_of("copy", reports, 0, live=["n1"])
    assert not held.empty and held.uncounted == ("n1",), "a stale report counts as none: the drop is refused"
