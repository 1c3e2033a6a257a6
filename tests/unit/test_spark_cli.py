"""`ctl spark up|status|down` without starting a JVM: argument errors name their culprit, and a cluster that was
never started is reported as such."""
import json
import socket
import subprocess
import sys


def ctl(home, *args):
    return subprocess.run([sys.executable, "-m", "async_triggers", "--home", str(home), "spark", *args],
                          capture_output=True, text=True, timeout=60)


def test_should_refuse_a_spark_cluster_without_workers_as_bad_input(tmp_path):
    done = ctl(tmp_path, "up", "--workers", "0")
    assert done.returncode == 2
    assert "a standalone cluster needs at least one worker with one core, found: 0 worker(s) of 1 core(s)" in done.stderr


def test_should_name_a_taken_port_before_anything_starts(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = ctl(tmp_path, "up", "--name", "t", "--port", str(port), "--webui-port", "18180")
    assert done.returncode == 2, done.stderr
    assert f"port(s) {port} on 127.0.0.1 already taken" in done.stderr
    assert not (tmp_path / "spark-standalone" / "t").exists()


def test_should_report_none_on_status_and_not_running_on_down_of_a_cluster_never_started(tmp_path):
    status = ctl(tmp_path, "status", "--name", "nope", "--json")
    assert status.returncode == 1 and json.loads(status.stdout)["status"] == "NONE"
    down = ctl(tmp_path, "down", "--name", "nope")
    assert down.returncode == 0 and down.stdout.strip() == "Spark cluster nope was not running"
