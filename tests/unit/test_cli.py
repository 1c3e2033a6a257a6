"""The `ctl` command itself (no cluster): what every invocation can ask of it."""
import subprocess
import sys
from importlib.metadata import version


def test_should_print_its_version_and_exit_zero():
    done = subprocess.run([sys.executable, "-m", "async_triggers", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ctl (async-triggers) {version('async-triggers')}"
