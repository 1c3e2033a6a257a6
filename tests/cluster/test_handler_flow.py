"""A flow written in Java (``handler=``) on a real cluster: its class is compiled against the plugin's API and put in
every node's triggers directory before the deploy, which loads it (no restart); a handler that throws for one key
makes that task a dead letter after its retries while every other task is done."""
import json
import shutil
import subprocess
import time
import zipfile

import pytest

from helpers import ROOT, create_schema, deploy_flow_text, drain, run_ctl
from async_triggers import cluster as cluster_mod


FLOW = "hnd_copy"
SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS hnd WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS hnd.src (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS hnd.dst (id int PRIMARY KEY, v text);
"""
FLOW_FILE = f"""
from async_triggers.flows import Flow, Retry
FLOWS = [Flow(name={FLOW!r}, source="hnd.src", handler="attest.CopyUnlessPoison",
              retry=Retry(max_attempts=3, initial_backoff_ms=50, max_backoff_ms=200))]
"""


@pytest.fixture(scope="module")
def handler_flow(cluster_settings, settings, tmp_path_factory):
    build = tmp_path_factory.mktemp("handler")
    source = ROOT / "tests" / "handlers" / "attest" / "CopyUnlessPoison.java"
    subprocess.run(["javac", "--release", "11", "-cp", str(settings.plugin_jar), "-d", str(build / "classes"),
                    str(source)], check=True, capture_output=True, text=True)
    jar = build / "attest-handlers.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.write(build / "classes" / "attest" / "CopyUnlessPoison.class", "attest/CopyUnlessPoison.class")
    nodes = cluster_mod.node_status(cluster_settings, cluster_settings.cluster_name)
    for node in nodes:
        shutil.copy(jar, cluster_mod.triggers_dir_of(node) / jar.name)
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, build, FLOW_FILE)
    yield
    run_ctl(cluster_settings, "trigger", "drop", FLOW, "--discard-pending", "--yes")   # its poison test leaves a dead letter
    for node in nodes:
        (cluster_mod.triggers_dir_of(node) / jar.name).unlink(missing_ok=True)


def test_should_dead_letter_the_task_a_handler_throws_for_and_do_all_the_others(handler_flow, session, cluster_settings):
    insert = session.prepare("INSERT INTO hnd.src (id, v) VALUES (?, ?)")
    for i in range(50):
        session.execute(insert, (i, "poison" if i == 17 else f"v{i}"))
    deadline = time.monotonic() + 120
    while True:
        result = run_ctl(cluster_settings, "trigger", "dlq", "list", FLOW, "--json")
        assert result.returncode == 0, result.stderr
        letters = json.loads(result.stdout)
        if letters or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(letters) == 1, letters
    assert "poison value for key 17" in letters[0]["error"] and letters[0]["attempts"] == 3, letters[0]
    drain(session, FLOW)
    rows = {r.id: r.v for r in session.execute("SELECT id, v FROM hnd.dst")}
    assert rows == {i: f"v{i}" for i in range(50) if i != 17}
