"""ctl's conventions against a real cluster: connection options after the command (host:port entries), an unknown
flow failing at once with exit 2 (trigger wait, verify), errors as JSON with --json."""
import json
import time

from tests.helpers import run_ctl


def test_should_accept_connection_options_after_the_command(cluster_settings):
    host = cluster_settings.contact_points[0]
    done = run_ctl(cluster_settings, "trigger", "list", "--json", "--hosts", f"{host}:9042", "--verbose")
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), list)
    assert "connection: local data center datacenter1 (chosen by the driver)" in done.stderr


def test_should_fail_trigger_wait_at_once_naming_an_unknown_flow(cluster_settings):
    started = time.monotonic()
    done = run_ctl(cluster_settings, "trigger", "wait", "no_such_flow", "--timeout", "600", "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])
    assert error["exit_code"] == 2 and error["error"].startswith("no deployed flow named 'no_such_flow'")
    assert time.monotonic() - started < 60


def test_should_exit_2_on_verify_of_an_unknown_flow(cluster_settings):
    done = run_ctl(cluster_settings, "verify", "no_such_flow", "--master", "local[1]", "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])
    assert error["error"].startswith("no deployed flow named 'no_such_flow'")
