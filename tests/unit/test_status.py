"""`ctl trigger status` without a cluster: rows of flow_status as the plugin writes them, old and new."""
import datetime as dt
import json
from types import SimpleNamespace

from async_triggers import status

UPDATED = dt.datetime(2025, 1, 2, 3, 4, 5)
CAPTURED = dt.datetime(2025, 1, 2, 3, 4, 1)
SCANNED = dt.datetime(2025, 1, 2, 3, 4, 3)
ROW = dict(flow="tl", node="127.0.0.1", pending=3, active=1, completed=120, failed=2, retried=5,
           oldest_pending_ms=40, workers=2, capacity=10000, spilled=7, discarded=0, recovered=11, resumed=4,
           fanout_rows=3000, backlog=6, last_capture=CAPTURED, last_scan=SCANNED, updated=UPDATED)
AS_JSON = dict(ROW, updated="2025-01-02T03:04:05", last_capture="2025-01-02T03:04:01", last_scan="2025-01-02T03:04:03",
               paused=False, state="running")


def test_should_read_the_backup_counters():
    s = status.from_row(ROW)
    assert (s.recovered, s.resumed, s.fanout_rows, s.backlog) == (11, 4, 3000, 6)
    assert s.as_dict() == AS_JSON


def test_should_read_null_and_absent_counters_as_zero():
    newer = ("recovered", "resumed", "fanout_rows", "backlog", "last_capture", "last_scan")
    older_plugin = dict(ROW, **{c: None for c in newer})
    older_table = {k: v for k, v in ROW.items() if k not in newer}
    for row in (older_plugin, older_table):
        s = status.from_row(row)
        assert (s.recovered, s.resumed, s.fanout_rows, s.backlog) == (0, 0, 0, 0)
        assert (s.last_capture, s.last_scan) == (None, None)
        assert s.completed == 120


def _settled(**changes) -> bool:
    return status.from_row({**ROW, "pending": 0, "active": 0, "backlog": 0, **changes}).settled()


def test_should_be_settled_only_with_nothing_queued_and_no_live_entry_in_a_scan_after_the_last_capture():
    assert _settled()
    assert _settled(last_capture=None), "captured nothing since it started: its scan is enough"
    assert not _settled(pending=1)
    assert not _settled(active=1)
    assert not _settled(backlog=1), "a live backup entry is a task not done yet, wherever it runs"
    assert not _settled(last_scan=dt.datetime(2025, 1, 2, 3, 4, 0)), "the scan is older than the last capture"
    assert not _settled(last_scan=None), "never scanned"


def test_should_tell_the_state_from_the_nodes_report_and_the_flows_table():
    assert status.state_of(reported_paused=False, wanted_paused=False) == "running"
    assert status.state_of(reported_paused=True, wanted_paused=True) == "paused"
    assert status.state_of(reported_paused=False, wanted_paused=True) == "pausing"
    assert status.state_of(reported_paused=True, wanted_paused=False) == "resuming"
    assert status.from_row(dict(ROW, paused=None)).state == "running", "a node whose plugin predates pausing"


class FakeSession:
    """A flow_status table with the given columns holding one row (only the selected columns come back), and a
    flows table (with a paused column when ``paused`` is given: the flows paused)."""

    def __init__(self, columns, row=ROW, paused=None):
        table = SimpleNamespace(columns={c: None for c in columns})
        tables = {"flow_status": table}
        if paused is not None:
            tables["flows"] = SimpleNamespace(columns={c: None for c in ("name", "spec", "version", "paused")})
        self.paused = paused or set()
        self.row = row
        keyspace = SimpleNamespace(tables=tables)
        self.cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={"async_triggers": keyspace}))
        self.queries = []

    def execute(self, query):
        self.queries.append(query.query_string)
        if '"flows"' in query.query_string:
            return [SimpleNamespace(name=n, paused=True) for n in self.paused]
        selected = query.query_string.split("SELECT ", 1)[1].split(" FROM", 1)[0]
        names = [n.strip().strip('"') for n in selected.split(",")]
        values = {k: v for k, v in self.row.items() if k in names}
        return [SimpleNamespace(_asdict=lambda: values)]


def test_should_select_only_the_columns_an_older_table_has():
    old = FakeSession(["flow", "node", *status.COLUMNS[:10], "updated"])   # before the backup counters
    [s] = status.read(old)
    assert '"recovered"' not in old.queries[0] and s.recovered == 0 and s.spilled == 7
    new = FakeSession(["flow", "node", *status.COLUMNS, *status.TIMES, "updated"])
    [s] = status.read(new)
    assert '"fanout_rows"' in new.queries[0] and s.fanout_rows == 3000
