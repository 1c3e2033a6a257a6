"""`pip install` of the wheel alone, as a user with an existing cluster does: in a clean virtualenv holding only the
wheel and its three dependencies (no Maven, no Spark, no ccm), `ctl` deploys (after a dry run), shows, reports the
status of and drops a flow on the test cluster, from a folder outside the checkout; the commands that need an extra
say which."""
import json
import subprocess
import sys

import pytest

from helpers import ROOT, create_schema

SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS wheel WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS wheel.a (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS wheel.b (id int PRIMARY KEY, v text);
"""

FLOW = """from async_triggers.flows import Flow, Write, source
FLOWS = [Flow(name='wheel_copy', source='wheel.a', steps=[Write('wheel.b', id=source.id, v=source.v)])]
"""


@pytest.fixture(scope="module")
def wheel_ctl(tmp_path_factory):
    """The `ctl` of a fresh virtualenv into which only the wheel built from this checkout was installed."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    wheel = next((base / "dist").glob("async_triggers-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    done = subprocess.run([str(base / "venv" / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return base


def ctl(base, settings, *args):
    from async_triggers.connection import child_env
    env = child_env(settings.connection)
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(base / "venv" / "bin" / "ctl"), *args], cwd=base, env=env, capture_output=True,
                          text=True, timeout=300)


def ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_should_run_ctl_from_the_wheel_alone_against_a_cluster(wheel_ctl, cluster_settings):
    installed = subprocess.run([str(wheel_ctl / "venv" / "bin" / "pip"), "list", "--format", "json"],
                               capture_output=True, text=True, check=True)
    names = {p["name"].lower() for p in json.loads(installed.stdout)}
    assert "async-triggers" in names and not names & {"pyspark", "ccm", "psutil", "pyyaml", "cqlsh"}, names

    create_schema(cluster_settings, SCHEMA)
    flow = wheel_ctl / "flows.py"
    flow.write_text(FLOW)
    dry = ok(ctl(wheel_ctl, cluster_settings, "trigger", "deploy", "--dry-run", str(flow)))
    assert "flow wheel_copy: new" in dry.stdout and "nothing was changed" in dry.stdout
    deployed = ok(ctl(wheel_ctl, cluster_settings, "trigger", "deploy", str(flow)))
    assert "deployed wheel_copy revision 1" in deployed.stdout
    shown = json.loads(ok(ctl(wheel_ctl, cluster_settings, "trigger", "show", "wheel_copy", "--json")).stdout)
    assert (shown["revision"], shown["targets"]) == (1, ["wheel.b"])
    status = ok(ctl(wheel_ctl, cluster_settings, "trigger", "status", "wheel_copy"))
    assert "wheel_copy" in status.stdout
    ok(ctl(wheel_ctl, cluster_settings, "trigger", "drop", "wheel_copy"))

    for args, extra in ((("verify", "wheel_copy"), "spark"), (("cluster", "status"), "cluster")):
        done = ctl(wheel_ctl, cluster_settings, *args)
        assert done.returncode != 0
        assert f"pip install 'async-triggers[{extra}]'" in done.stderr, done.stderr
