"""Spark's check after a run: every propagation in the timelines, read independently of the plugin."""
from __future__ import annotations

import time

from async_triggers.benchmarks.apps.cassandra import KEYSPACE
from async_triggers.benchmarks.harness.testbed import Testbed


def verify_settled(bed: Testbed, spec: dict, app: str) -> tuple[dict, list[dict]]:
    """Spark's verification after a run with a fault. A restarted node's own recovery and the other replicas'
    takeover are queued when gossip sees it back, which can be just after the queues looked drained; so a
    verification that finds rows missing is repeated every ``verify_wait_s`` up to ``verify_checks`` times
    (each check is recorded): the result says whether, and how soon after the drain, every propagation was
    there; a loss stays a loss."""
    checks, started = [], time.time()
    for attempt in range(bed.cfg.verify_checks):
        if attempt:
            time.sleep(bed.cfg.verify_wait_s)
        result = verify_timelines(bed, spec)
        checks.append({"after_s": round(time.time() - started, 1), "missing": result["missing"],
                       "unexpected": result["unexpected"], "wrong_value": result["wrong_value"]})
        if result["missing"] == result["wrong_value"] == 0:   # a wrong value is an update not propagated (yet)
            break
        bed.progress(f"  {app}: {result['missing']} propagations missing, {result['wrong_value']} with an older value "
                     f"{checks[-1]['after_s']} s after the drain; checking again")
    return result, checks


def verify_timelines(bed: Testbed, spec: dict) -> dict:
    """Expected, present, missing, unexpected and wrong-value rows of the timeline."""
    from async_triggers.spark_jobs import verify
    bed.progress("  verifying every propagation with Spark")
    got = verify.verify_with_session(bed.spark_session(), spec)
    t = next(r for r in got if r.table == f"{KEYSPACE}.timeline")
    return {"expected": t.expected, "present": t.present, "missing": t.missing, "unexpected": t.unexpected,
            "wrong_value": t.wrong_value}
