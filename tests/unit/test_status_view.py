"""`ctl trigger status` and `top` without a cluster (pycontrol/async_triggers/status_view.py): a line per flow within 100 columns,
nodes reporting out of those the ring has per data center, a node that stopped reporting shown as such (never left
out), a flow deployed moments ago shown as starting, the rate between two samples, JSON lines with --watch, and an
unknown flow refused."""
import contextlib
import types
import datetime as dt
import json

from typer.testing import CliRunner

from async_triggers import config, status, status_view
from async_triggers.status_view import Host

NOW = dt.datetime(2026, 11, 26, 12, 0, 0)
HOSTS = [Host("10.0.0.1", "dc1", "r1", True), Host("10.0.0.2", "dc1", "r2", True), Host("10.0.0.3", "dc2", "r1", False)]


def report(node, flow="timeline", age_s=1, **figures):
    row = dict(flow=flow, node=node, pending=0, active=0, completed=0, failed=0, retried=0, oldest_pending_ms=0,
               workers=2, capacity=100, spilled=0, discarded=0, updated=NOW - dt.timedelta(seconds=age_s))
    row.update(figures)
    return status.from_row(row, wanted_paused=False)


STATUSES = [report("10.0.0.1", pending=4, active=1, backlog=7, oldest_pending_ms=2500, completed=100),
            report("10.0.0.2", completed=50, oldest_pending_ms=800),
            report("10.0.0.3", age_s=40, pending=99, completed=999),     # stale: its node is down
            report("10.0.0.1", flow="copy", completed=5)]


def test_should_count_only_fresh_reports_per_flow_and_show_nodes_reporting_per_data_center():
    [copy, timeline] = status_view.summarize(["copy", "timeline"], STATUSES, HOSTS, {"timeline": 2}, NOW)
    assert (timeline.pending, timeline.backlog, timeline.lag_ms, timeline.completed) == (5, 7, 2500, 150)
    assert timeline.state == "degraded" and timeline.nodes == {"dc1": (2, 2), "dc2": (0, 1)}
    assert timeline.dead_letters == 2 and timeline.rate is None
    assert copy.nodes == {"dc1": (1, 2), "dc2": (0, 1)} and copy.dead_letters == 0
    text = status_view.summary_text([copy, timeline])
    assert max(len(line) for line in text) <= 100, text
    assert text[0].split() == ["FLOW", "STATE", "PENDING", "BACKLOG", "LAG", "DONE/S", "DONE", "DEAD", "NODES"]
    assert text[2].split() == ["timeline", "degraded", "5", "7", "2s", "-", "150", "2", "dc1", "2/2", "dc2", "0/1"]


def test_should_show_a_flow_deployed_moments_ago_as_starting_until_every_node_reports_it():
    epoch_ms = int((NOW - dt.datetime(1970, 1, 1)).total_seconds() * 1000)
    hosts = HOSTS[:2]
    one = [report("10.0.0.1")]
    [line] = status_view.summarize(["timeline"], one, hosts, {}, NOW, None, {"timeline": epoch_ms - 3_000})
    assert line.state == "starting"
    [line] = status_view.summarize(["timeline"], one, hosts, {}, NOW, None, {"timeline": epoch_ms - 60_000})
    assert line.state == "degraded", "a minute after its deploy a silent node is a problem"
    [line] = status_view.summarize(["timeline"], STATUSES[:2], hosts, {}, NOW, None, {"timeline": epoch_ms})
    assert line.state == "running"


def test_should_compute_the_rate_from_two_samples_and_show_a_healthy_flow_running():
    hosts = HOSTS[:2]
    first = status_view.summarize(["timeline"], STATUSES[:2], hosts, {}, NOW)
    later = [report("10.0.0.1", completed=130, age_s=0), report("10.0.0.2", completed=80, age_s=0)]
    [line] = status_view.summarize(["timeline"], later, hosts, {}, NOW + dt.timedelta(seconds=10),
                                   {"timeline": (NOW, {"10.0.0.1": 100, "10.0.0.2": 50})})
    assert line.rate == 6.0 and line.state == "running" and line.nodes == {"dc1": (2, 2)}
    assert first[0].completed == 150
    # node2 restarted (its counter from 0) and node1 stopped reporting: the rate counts what each node it knows did
    again = [report("10.0.0.1", completed=160, age_s=-20), report("10.0.0.2", completed=4, age_s=-20)]
    [line] = status_view.summarize(["timeline"], again, hosts, {}, NOW + dt.timedelta(seconds=20),
                                   {"timeline": (NOW + dt.timedelta(seconds=10), {"10.0.0.1": 130, "10.0.0.2": 80})})
    assert line.rate == 3.0, "node1's 30 in 10 s; node2's counter went back, it adds nothing rather than less"


def test_should_show_data_center_rack_and_silent_nodes_in_the_node_table():
    rows = status_view.node_rows(["timeline"], STATUSES, HOSTS, NOW)
    assert [(r["node"], r["dc"], r["rack"], r["state"]) for r in rows] == [
        ("10.0.0.1", "dc1", "r1", "running"), ("10.0.0.2", "dc1", "r2", "running"), ("10.0.0.3", "dc2", "r1", "down")]
    assert rows[0]["pending"] == 4 and rows[0]["lag_ms"] == 2500 and rows[0]["spilled"] == 0
    assert rows[2]["last_report_s"] == 40 and "pending" not in rows[2]
    text = status_view.node_text(rows)
    assert max(len(line) for line in text) <= 100
    assert text[3].split()[-5:] == ["down", "last", "report", "40s", "ago"]
    # a node the ring has that never reported the flow, up: not reporting
    [row] = [r for r in status_view.node_rows(["copy"], STATUSES, HOSTS[:2], NOW) if r["node"] == "10.0.0.2"]
    assert row["state"] == "not reporting" and row["last_report_s"] is None


def test_should_write_durations_as_people_write_them():
    assert [status_view.duration(ms) for ms in (0, 850, 12_000, 245_000, 7_800_000)] == \
        ["0", "850ms", "12s", "4m05s", "2h10m"]


def _cli(monkeypatch, deployed=("timeline", "copy")):
    from async_triggers import deploy, dlq
    from async_triggers.cli import trigger as cli_trigger
    from async_triggers.errors import UnknownFlowError

    @contextlib.contextmanager
    def connect(_settings):
        yield object()

    def require(_session, names):
        unknown = [n for n in names if n not in deployed]
        if unknown:
            raise UnknownFlowError(unknown, deployed)
        return {n: types.SimpleNamespace(version=1) for n in deployed}   # deployed long ago

    monkeypatch.setattr(cli_trigger, "connect", connect)
    monkeypatch.setattr(deploy, "require_deployed", require)
    monkeypatch.setattr(status, "read", lambda _s, flows: [s for s in STATUSES if s.flow in flows])
    monkeypatch.setattr(status_view, "hosts_of", lambda _s: HOSTS)
    monkeypatch.setattr(dlq, "count", lambda _s, flow: 3 if flow == "timeline" else 0)
    monkeypatch.setattr(status_view, "fresh", lambda s, now: s.node != "10.0.0.3")
    monkeypatch.setattr(cli_trigger.time, "sleep", lambda s: None)
    return cli_trigger.app


def test_should_refuse_an_unknown_flow_and_print_json_lines_when_watching(monkeypatch):
    app = _cli(monkeypatch)
    runner = CliRunner()
    unknown = runner.invoke(app, ["status", "nope"], obj=config.load())
    assert unknown.exit_code == 2 and "no deployed flow named 'nope'" in unknown.output
    one = runner.invoke(app, ["status", "--json"], obj=config.load())
    assert one.exit_code == 0, one.output
    assert [f["flow"] for f in json.loads(one.output)] == ["copy", "timeline"]
    nodes = runner.invoke(app, ["status", "timeline", "--nodes", "--json"], obj=config.load())
    assert [r["state"] for r in json.loads(nodes.output)] == ["running", "running", "down"]
    top = runner.invoke(app, ["top", "--iterations", "2", "--json"], obj=config.load())
    lines = top.output.strip().splitlines()
    assert len(lines) == 2 and all(set(json.loads(line)) == {"flows", "nodes"} for line in lines)
    second = json.loads(lines[1])["flows"]
    assert all(f["rate"] is not None for f in second), "the second sample has a rate"
