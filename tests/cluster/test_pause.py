"""Pausing a flow on a real 3-node cluster (RF 2): while paused its writes are captured (backup entries accumulate on
both replicas of each row) and nothing is propagated, through a kill -9 and restart of a node and a redeploy; `ctl
trigger wait` fails at once naming the paused flow; on resume every derived row appears and the backup map empties.
A paused flow holding tasks is dropped only when told to discard them, and says how many it threw away."""
import datetime as dt
import json
import time

import pytest

from async_triggers import cluster as cluster_mod, status
from helpers import create_schema, deploy_flow_text, drain, run_ctl

FLOW = "pause_copy"
ROWS = 200
SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS pausetest WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS pausetest.src (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS pausetest.dst (id int PRIMARY KEY, v text);
"""
FLOW_FILE = f"""
from async_triggers.flows import Flow, Queue, Write, source
FLOWS = [Flow(name="{FLOW}", source="pausetest.src", steps=[Write("pausetest.dst", id=source.id, v=source.v)],
              queue=Queue(capacity=50, workers=2))]
"""


def _progress(msg: str) -> None:
    print(f"[pause] {msg}", flush=True)


def count(session, table: str) -> int:
    """Rows of a small table, read at ALL (each backup entry is on both replicas of its row: merged, it counts once)."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return session.execute(SimpleStatement(f"SELECT count(*) FROM {table}", consistency_level=ConsistencyLevel.ALL),
                           timeout=60).one()[0]


def states(session) -> dict[str, str]:
    return {s.node: s.state for s in status.read(session, [FLOW])}


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def paused_flow(cluster_settings, tmp_path_factory):
    """The flow deployed; its flow file (a test redeploys it)."""
    folder = tmp_path_factory.mktemp("pause")
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, folder, FLOW_FILE)
    return folder / "flow.py"


def test_should_hold_a_paused_flows_tasks_in_the_backup_maps_and_run_them_all_on_resume(
        paused_flow, cluster_settings, session):
    session.execute("INSERT INTO pausetest.src (id, v) VALUES (0, 'before')")
    drain(session, FLOW, timeout=60)
    assert count(session, "pausetest.dst") == 1

    started = time.monotonic()
    paused = run_ctl(cluster_settings, "trigger", "pause", FLOW)
    assert paused.returncode == 0, paused.stderr
    assert paused.stdout.startswith(f"paused {FLOW} on 3 node(s)"), paused.stdout
    assert time.monotonic() - started < 20, "every node applies a pause within its poll (2 s)"
    shown = json.loads(run_ctl(cluster_settings, "trigger", "status", FLOW, "--nodes", "--json").stdout)
    assert {s["node"]: s["state"] for s in shown if s["flow"] == FLOW} == dict.fromkeys(states(session), "paused")

    insert = session.prepare("INSERT INTO pausetest.src (id, v) VALUES (?, ?)")
    for i in range(1, ROWS + 1):
        session.execute(insert, (i, f"v{i}"))

    waited = time.monotonic()
    wait = run_ctl(cluster_settings, "trigger", "wait", FLOW, "--timeout", "60")
    assert wait.returncode == 1 and f"flow '{FLOW}' is paused" in wait.stderr, (wait.returncode, wait.stderr)
    assert time.monotonic() - waited < 15, "wait fails at once on a paused flow"

    # every entry on both replicas, in the nodes' scans (a scan follows a second without captures)
    wait_for(lambda: sum(s.backlog for s in status.read(session, [FLOW])) == 2 * ROWS, 20, "backlog of every entry")
    assert count(session, "pausetest.async_backup_src") == ROWS

    # a node killed and restarted while the flow is paused starts it paused and runs nothing
    cluster_mod.kill_node(cluster_settings, "node2", name=cluster_settings.cluster_name, progress=_progress)
    cluster_mod.start_node(cluster_settings, "node2", name=cluster_settings.cluster_name, progress=_progress)
    restarted = dt.datetime.utcnow()
    wait_for(lambda: [s.state for s in status.read(session, [FLOW])
                      if s.updated and s.updated.replace(tzinfo=None) > restarted] == ["paused"] * 3, 30,
             "every node, the restarted one too, reports the flow paused after the restart")

    # a redeploy (a new version) keeps the flow paused
    redeploy = run_ctl(cluster_settings, "trigger", "deploy", str(paused_flow))
    assert redeploy.returncode == 0, redeploy.stderr
    time.sleep(3 * 2 + 1)   # three poll periods after the redeploy
    assert set(states(session).values()) == {"paused"}
    assert count(session, "pausetest.dst") == 1, "nothing propagated while paused"
    assert count(session, "pausetest.async_backup_src") == ROWS, "no entry lost while paused"

    resumed = run_ctl(cluster_settings, "trigger", "resume", FLOW)
    assert resumed.returncode == 0, resumed.stderr
    drain(session, FLOW, timeout=60)
    rows = {r.id: r.v for r in session.execute("SELECT id, v FROM pausetest.dst")}
    missing = [i for i in range(1, ROWS + 1) if rows.get(i) != f"v{i}"]
    assert missing == [], f"{len(missing)} derived rows missing after resume: {missing[:10]}"
    assert count(session, "pausetest.async_backup_src") == 0
    print(f"[pause] {ROWS} rows held while paused, all propagated after resume; "
          f"{time.monotonic() - started:.0f} s from pause to drained")


FLUSHED_ROWS = 600


def backlog_by_node(session) -> dict[str, int]:
    return {s.node: s.backlog for s in status.read(session, [FLOW])}


def test_should_keep_a_replicas_backup_entries_through_a_flush_of_the_source_and_a_kill(paused_flow, cluster_settings,
                                                                                     session):
    """A replica writes a write's backup entries to the backup map's memtable with no commit log record of their own:
    the source write's record is their durable copy until the source table is flushed. Flushed (the source table
    alone, as memtable pressure or a commit log segment's recycling would) and then killed -9, the replica must still
    hold every entry it held: a restart replays nothing of the flushed writes, so their entries must have been
    logged by that flush. Writes go on while the flush runs, up to the kill: a replica writes a write's entries a
    moment after it acknowledged the write (its capture stage), and a flush waits for them as it waits for the write,
    so the entries of a write the flush saved are logged by it, and those of later writes are captured again by the
    replay of their records."""
    assert run_ctl(cluster_settings, "trigger", "pause", FLOW).returncode == 0
    insert = session.prepare("INSERT INTO pausetest.src (id, v) VALUES (?, ?)")
    ids = range(2001, 2001 + FLUSHED_ROWS)   # more partitions on each node than the flush copies at a time
    for i in ids:
        session.execute(insert, (i, f"f{i}"))
    held = wait_for(lambda: (lambda b: b if sum(b.values()) == 2 * FLUSHED_ROWS else None)(backlog_by_node(session)),
                    30, "every node's scan counts its entries")
    node, ip = "node2", "127.0.0.2"
    assert held[ip] > 0, held

    racing = RacingWrites(session, start=5001)
    racing.start()
    try:
        cluster_mod.nodetool(cluster_settings, node, ["flush", "pausetest", "src"], name=cluster_settings.cluster_name)
    finally:
        racing.stop()
    cluster_mod.kill_node(cluster_settings, node, name=cluster_settings.cluster_name, progress=_progress)
    on_node = racing.replicated_on(ip)
    assert len(racing.acked) > 50, f"writes raced the flush: {len(racing.acked)}"
    cluster_mod.start_node(cluster_settings, node, name=cluster_settings.cluster_name, progress=_progress)
    restarted = dt.datetime.utcnow()

    def reported_after_restart():
        rows = [s for s in status.read(session, [FLOW]) if s.node == ip and s.updated
                and s.updated.replace(tzinfo=None) > restarted + dt.timedelta(seconds=2)]
        return rows[0].backlog if rows else None
    expected = held[ip] + len(on_node)   # an unacknowledged write may have been applied there too
    try:
        kept = wait_for(lambda: (lambda n: n if n is not None and expected <= n <= expected + racing.failed else None)(
                            reported_after_restart()), 60,
                        f"{node} reports the entries it held before its source table was flushed and it was killed, "
                        f"and those of the {len(on_node)} writes of its rows acknowledged during the flush")
    except AssertionError as e:
        raise AssertionError(f"{e}: held {held[ip]} + {len(on_node)} racing ({racing.failed} failed), reports since the "
                             f"restart at {restarted}: {[(s.node, s.updated, s.backlog, s.state) for s in status.read(session, [FLOW])]}")

    assert run_ctl(cluster_settings, "trigger", "resume", FLOW).returncode == 0
    drain(session, FLOW, timeout=60)
    rows = {r.id: r.v for r in session.execute("SELECT id, v FROM pausetest.dst")}
    assert [i for i in ids if rows.get(i) != f"f{i}"] == []
    assert [i for i in racing.acked if rows.get(i) != f"r{i}"] == []
    print(f"[pause] {node} kept its {kept} backup entries through a flush of the source table and a kill -9 "
          f"({len(on_node)} of them of writes acknowledged while the flush ran)")


class RacingWrites:
    """Writes at ALL, one after the other, from ``start`` on, until stopped: every acknowledged one is on every
    replica of its row."""

    def __init__(self, session, start: int):
        import threading
        from cassandra import ConsistencyLevel
        self.session, self.next = session, start
        self.insert = session.prepare("INSERT INTO pausetest.src (id, v) VALUES (?, ?)")
        self.insert.consistency_level = ConsistencyLevel.ALL
        self.acked: list[int] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            i, self.next = self.next, self.next + 1
            try:
                self.session.execute(self.insert, (i, f"r{i}"), timeout=10)
                self.acked.append(i)
            except Exception:   # a timeout: it may have been applied anywhere
                self.failed += 1

    def replicated_on(self, ip: str) -> list[int]:
        import struct
        metadata = self.session.cluster.metadata
        return [i for i in self.acked
                if ip in {h.address for h in metadata.get_replicas("pausetest", struct.pack(">i", i))}]


def test_should_refuse_to_drop_a_paused_flow_with_tasks_unless_told_to_discard_them(paused_flow, cluster_settings,
                                                                                    session):
    assert run_ctl(cluster_settings, "trigger", "pause", FLOW).returncode == 0
    for i in range(1, 31):
        session.execute("INSERT INTO pausetest.src (id, v) VALUES (%s, %s)", (1000 + i, "held"))
    refused = run_ctl(cluster_settings, "trigger", "drop", FLOW)
    assert refused.returncode == 1 and f"flow '{FLOW}' still holds " in refused.stderr, refused.stderr
    assert "the flow is paused" in refused.stderr and "--discard-pending" in refused.stderr
    drained = run_ctl(cluster_settings, "trigger", "drop", FLOW, "--drain")   # a paused flow never drains
    assert drained.returncode == 1 and "is paused" in drained.stderr, drained.stderr
    unconfirmed = run_ctl(cluster_settings, "trigger", "drop", FLOW, "--discard-pending")   # no terminal, no --yes
    assert unconfirmed.returncode == 2 and "add --yes" in unconfirmed.stderr, unconfirmed.stderr
    assert FLOW in {f["name"] for f in json.loads(run_ctl(cluster_settings, "trigger", "list", "--json").stdout)}

    dropped = run_ctl(cluster_settings, "trigger", "drop", FLOW, "--discard-pending", "--yes", "--json")
    assert dropped.returncode == 0, dropped.stderr
    discarded = json.loads(dropped.stdout)["discarded"]
    assert discarded["paused"] and (discarded["unfinished_tasks"] > 0 or discarded["uncounted_nodes"]), discarded
    listed = json.loads(run_ctl(cluster_settings, "trigger", "list", "--json").stdout)
    assert FLOW not in {f["name"] for f in listed}
    again = run_ctl(cluster_settings, "trigger", "resume", FLOW)
    assert again.returncode == 2 and f"no deployed flow named '{FLOW}'" in again.stderr, again.stderr
