"""`ctl trigger status` without a cluster: rows of flow_status as the plugin writes them, old and new."""
import datetime as dt
import json
from types import SimpleNamespace

from typer.testing import CliRunner

from pycontrol import config, status

UPDATED = dt.datetime(2025, 1, 2, 3, 4, 5)
ROW = dict(flow="tl", node="127.0.0.1", pending=3, active=1, completed=120, failed=2, retried=5,
           oldest_pending_ms=40, workers=2, capacity=10000, spilled=7, discarded=0, recovered=11, resumed=4,
           abandoned=1, fanout_rows=3000, updated=UPDATED)


def test_should_read_the_backup_counters():
    s = status.from_row(ROW)
    assert (s.recovered, s.resumed, s.abandoned, s.fanout_rows) == (11, 4, 1, 3000)
    assert s.as_dict() == dict(ROW, updated="2025-01-02T03:04:05")


def test_should_read_null_and_absent_counters_as_zero():
    older_plugin = dict(ROW, recovered=None, resumed=None, abandoned=None, fanout_rows=None)
    older_table = {k: v for k, v in ROW.items() if k not in ("recovered", "resumed", "abandoned", "fanout_rows")}
    for row in (older_plugin, older_table):
        s = status.from_row(row)
        assert (s.recovered, s.resumed, s.abandoned, s.fanout_rows) == (0, 0, 0, 0)
        assert s.completed == 120


class FakeSession:
    """A flow_status table with the given columns holding one row (only the selected columns come back)."""

    def __init__(self, columns):
        table = SimpleNamespace(columns={c: None for c in columns})
        keyspace = SimpleNamespace(tables={"flow_status": table})
        self.cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={"async_triggers": keyspace}))
        self.queries = []

    def execute(self, query):
        self.queries.append(query.query_string)
        selected = query.query_string.split("SELECT ", 1)[1].split(" FROM", 1)[0]
        names = [n.strip().strip('"') for n in selected.split(",")]
        values = {k: v for k, v in ROW.items() if k in names}
        return [SimpleNamespace(_asdict=lambda: values)]


def test_should_select_only_the_columns_an_older_table_has():
    old = FakeSession(["flow", "node", *status.COLUMNS[:10], "updated"])   # before the backup counters
    [s] = status.read(old)
    assert '"recovered"' not in old.queries[0] and s.recovered == 0 and s.spilled == 7
    new = FakeSession(["flow", "node", *status.COLUMNS, "updated"])
    [s] = status.read(new)
    assert '"fanout_rows"' in new.queries[0] and s.fanout_rows == 3000


def test_should_show_the_backup_counters(monkeypatch):
    import contextlib
    from pycontrol import cli_trigger

    @contextlib.contextmanager
    def connect(_settings):
        yield FakeSession(["flow", "node", *status.COLUMNS, "updated"])

    monkeypatch.setattr(cli_trigger, "connect", connect)
    runner = CliRunner()
    table = runner.invoke(cli_trigger.app, ["status"], obj=config.load())
    assert table.exit_code == 0, table.output
    assert table.output.splitlines() == [
        "flow                     node              pending active  completed failed retried oldest_ms workers  "
        "spilled discarded recovered resumed abandoned fanout_rows",
        "tl                       127.0.0.1               3      1        120      2       5        40       2  "
        "      7         0        11       4         1        3000",
    ]
    as_json = runner.invoke(cli_trigger.app, ["status", "--json"], obj=config.load())
    assert json.loads(as_json.output) == [dict(ROW, updated="2025-01-02T03:04:05")]
