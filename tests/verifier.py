"""The verify job (``spark_jobs.verify``) for integration tests, in a child process that keeps one Spark session with
the connector for a whole test module: starting Spark costs ~15-40 s on a 2-core machine, a warm verification a few
seconds. A child, not this process: an earlier tier (tests/bench) may have started this process's Spark without the
connector, and a JVM's class path cannot change once it runs.

    python tests/verifier.py      # the child: reads a JSON list of flow names per line, answers one line per request

Its answers start with ``ANSWER`` (Spark may write to stdout too); its stderr goes to a file."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ANSWER = "ANSWER "


class Verifier:
    """``check(*flows)`` -> {flow: FlowCheck}; ``close()`` stops the child."""

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

    def check(self, *flows: str) -> dict:
        from async_triggers.fuzz.oracle import FlowCheck
        if not self._ready:
            self._answer()
            self._ready = True
        self._proc.stdin.write(json.dumps(list(flows)) + "\n")
        self._proc.stdin.flush()
        return {c["flow"]: FlowCheck.from_dict(c) for c in self._answer()["checks"]}

    def problems(self, *flows: str) -> list[str]:
        """One line per flow that differs: its counts and the sampled keys."""
        return [f"verify {c.line()}; samples {c.samples()}" for c in self.check(*flows).values() if not c.ok]

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._err.close()


def _serve() -> int:
    from async_triggers.fuzz import oracle
    from async_triggers.spark_jobs.session import build_session

    def answer(obj) -> None:
        sys.stdout.write(ANSWER + json.dumps(obj, default=str) + "\n")
        sys.stdout.flush()

    try:
        spark = build_session(master="local[2]", app_name="tests-verifier", conf=oracle.session_conf())
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails with it
        answer({"error": f"{type(e).__name__}: {e}"})
        return 1
    answer({"ready": True})
    for line in sys.stdin:
        try:
            answer({"checks": [c.as_dict() for c in oracle.check_flows(spark, json.loads(line))]})
        except Exception as e:  # noqa: BLE001 - one failed request does not end the module's verifier
            answer({"error": f"{type(e).__name__}: {e}"})
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
