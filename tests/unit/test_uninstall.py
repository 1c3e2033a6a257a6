"""`ctl plugin uninstall` without a cluster: what it finds of ours in the schema without a flow (a user's table
that only shares the backup maps' prefix is left alone), and that it drops flows before leftovers and the keyspace
last."""
from types import SimpleNamespace as Row

from async_triggers import deploy, uninstall

CAPTURE = {"class_name": "org.asynctriggers.CaptureIndex", "flows": "{}"}


def test_should_find_our_indexes_triggers_and_backup_maps_and_nothing_of_the_users():
    indexes = [Row(keyspace_name="shop", index_name="async_capture_1", options=CAPTURE),
               Row(keyspace_name="shop", index_name="by_email", options={"target": "email"})]
    triggers = [Row(keyspace_name="shop", table_name="orders", trigger_name="async_triggers",
                    options={"class": "org.asynctriggers.AsyncTrigger"}),
                Row(keyspace_name="shop", table_name="orders", trigger_name="audit", options={"class": "x.Audit"})]
    columns = [Row(keyspace_name="shop", table_name="async_backup_orders", column_name=c)
               for c in ("key_0", "flow", "id", "task", "captured", "resume")]
    columns += [Row(keyspace_name="shop", table_name="async_backup_notes", column_name=c) for c in ("id", "text")]
    left = uninstall.leftovers(indexes, triggers, columns)
    assert left.indexes == (("shop", "async_capture_1"),)
    assert left.triggers == (("shop", "orders", "async_triggers"),)
    assert left.backup_maps == (("shop", "async_backup_orders"),), "a user's table of another shape stays"


class FakeSession:
    def __init__(self):
        self.executed = []
        self.cluster = Row(metadata=Row(keyspaces={"async_triggers": object()}),
                           control_connection=Row(wait_for_schema_agreement=lambda **_: True))

    def execute(self, query, params=None, timeout=None):
        if query.startswith("SELECT keyspace_name, index_name"):
            return [Row(keyspace_name="shop", index_name="async_capture_9", options=CAPTURE)]
        if query.startswith("SELECT"):
            return []
        self.executed.append(query)
        return []


def test_should_drop_the_flows_then_the_leftovers_then_the_keyspace(monkeypatch):
    dropped = []
    session = FakeSession()
    spec = lambda name: {"name": name, "source": {"keyspace": "shop", "table": "orders", "partition_key": ["id"],
                                                  "clustering": [], "columns": {"id": "bigint"}}, "targets": []}
    monkeypatch.setattr(deploy, "read_deployed", lambda s: {"b": spec("b"), "a": spec("a")})
    monkeypatch.setattr(deploy, "drop", lambda s, name, progress: (dropped.append(name), s.executed.append(name)))
    removed = uninstall.uninstall(session)
    assert dropped == ["a", "b"]
    assert session.executed == ["a", "b", 'DROP INDEX IF EXISTS "shop"."async_capture_9"',
                                'DROP KEYSPACE IF EXISTS "async_triggers"']
    assert removed.flows == ("a", "b") and removed.indexes == ("shop.async_capture_9",) and removed.keyspace
