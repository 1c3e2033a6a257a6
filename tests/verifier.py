"""`ctl verify` and the fuzz oracle's checks for the integration tests, in one child process per test session that
keeps one Spark session with the connector: starting Spark costs ~15-40 s on a 2-core machine, a warm verification a
few seconds. A child, not this process: an earlier tier (tests/bench) may have started this process's Spark without
the connector, and a JVM's class path cannot change once it runs.

``run(*args)`` runs `ctl verify ARGS` as the command line does (the CLI's own code, its output and exit code), in
the child; ``check(*flows)`` runs the fuzz oracle's check. ``shared(settings)`` is the session's one verifier for
a cluster; conftest closes it when the session ends.

    python tests/verifier.py      # the child: one JSON request per line, one answer line per request

Its answers start with ``ANSWER`` (Spark may write to stdout too); its stderr goes to a file."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ANSWER = "ANSWER "


class Verifier:
    """``check(*flows)`` -> {flow: FlowCheck}; ``run(*args)`` -> CompletedProcess of `ctl verify ARGS`;
    ``close()`` stops the child."""

    def __init__(self, settings, log: Path, timeout: float = 300.0):
        from async_triggers.connection import child_env
        self.log = log
        self.timeout = timeout
        env = dict(child_env(settings.connection), ASYNC_TRIGGERS_CLUSTER=settings.cluster_name)
        self._err = open(log, "w")
        self._proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._err, text=True, env=env,
                                      cwd=Path(__file__).resolve().parent.parent)
        self._ready = False   # Spark starts while the caller goes on (creating its schema, say)

    def _answer(self) -> dict:
        for line in self._proc.stdout:
            if line.startswith(ANSWER):
                answer = json.loads(line[len(ANSWER):])
                if "error" in answer:
                    raise AssertionError(f"verification could not run: {answer['error']} (log: {self.log})")
                return answer
        raise AssertionError(f"the verifier exited (code {self._proc.wait()}); its log: {self.log}\n"
                             + self.log.read_text()[-3000:])

    def _ask(self, request: dict) -> dict:
        if not self._ready:
            self._answer()
            self._ready = True
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        return self._answer()

    def check(self, *flows: str) -> dict:
        from async_triggers.fuzz.oracle import FlowCheck
        return {c["flow"]: FlowCheck.from_dict(c) for c in self._ask({"check": list(flows)})["checks"]}

    def problems(self, *flows: str) -> list[str]:
        """One line per flow that differs: its counts and the sampled keys."""
        return [f"verify {c.line()}; samples {c.samples()}" for c in self.check(*flows).values() if not c.ok]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        """`ctl verify ARGS`, run by the CLI's own code in the child (its Spark session already started)."""
        done = self._ask({"ctl": ["verify", *args]})
        return subprocess.CompletedProcess(["ctl", "verify", *args], done["code"], done["stdout"], done["stderr"])

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._err.close()


_shared: dict[tuple, Verifier] = {}


def shared(settings) -> Verifier:
    """The session's verifier for this cluster (started on first use)."""
    key = (settings.cluster_name, tuple(settings.connection.hosts), settings.connection.port)
    if key not in _shared:
        log = Path(tempfile.mkdtemp(prefix="async-triggers-verifier-")) / "verifier.log"
        _shared[key] = Verifier(settings, log)
    return _shared[key]


def close_shared() -> None:
    while _shared:
        _shared.popitem()[1].close()


def _serve() -> int:
    import contextlib
    import io

    from async_triggers.cli import run as ctl
    from async_triggers.fuzz import oracle
    from async_triggers.spark_jobs.session import build_session

    def answer(obj) -> None:
        sys.__stdout__.write(ANSWER + json.dumps(obj, default=str) + "\n")
        sys.__stdout__.flush()

    try:
        spark = build_session(master="local[2]", app_name="tests-verifier", conf=oracle.session_conf())
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails with it
        answer({"error": f"{type(e).__name__}: {e}"})
        return 1
    answer({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "check" in request:
                answer({"checks": [c.as_dict() for c in oracle.check_flows(spark, request["check"])]})
            else:   # the command line's own code: verify reuses this process's running Spark session
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = ctl(request["ctl"])
                answer({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
        except Exception as e:  # noqa: BLE001 - one failed request does not end the session's verifier
            answer({"error": f"{type(e).__name__}: {e}"})
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
