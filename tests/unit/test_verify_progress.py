"""A checkpointed verification's run plan (spark_jobs.verify_progress.plan_run), no cluster, no Spark: an
incomplete run of the same work resumes with its own ranges; a complete one, another mode, level or specification,
or --restart starts a new run."""
import datetime as dt

from async_triggers.spark_jobs import ring, verify_progress
from async_triggers.spark_jobs.verify_progress import FINAL, plan_run

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, 123456)
EARLIER = dt.datetime(2024, 5, 1, 11, 0, 0)
SPEC = {"name": "f", "targets": []}
DIGEST = verify_progress.spec_hash(SPEC)


def rows(run, starts, ranges=4, mode="verify", consistency="LOCAL_QUORUM", digest=DIGEST):
    return [{"run": run, "range_start": s, "ranges": ranges, "mode": mode, "consistency": consistency,
             "spec_hash": digest, "result": '{"tables": []}'} for s in starts]


def plan(recorded, ranges=8, restart=False, mode="verify", consistency="LOCAL_QUORUM", final=False):
    return plan_run("f", recorded, ranges, restart, NOW, mode, consistency, DIGEST, final)


def test_should_start_a_new_run_of_the_asked_ranges_when_nothing_is_recorded():
    run = plan([])
    assert not run.resumed and run.started == dt.datetime(2024, 5, 1, 12, 0, 0, 123000)
    assert run.pending == ring.split_ring(8) and run.started_micros == 1714564800123000


def test_should_resume_an_incomplete_run_of_the_same_work_with_its_own_ranges():
    starts = [s for s, _ in ring.split_ring(4)]
    run = plan(rows(EARLIER, starts[:2]))
    assert run.resumed and run.started == EARLIER and len(run.ranges) == 4
    assert [u[0] for u in run.pending] == starts[2:]
    assert run.done[starts[0]] == {"tables": []}


def test_should_count_the_final_unit_of_untraced_tables():
    starts = [s for s, _ in ring.split_ring(4)]
    run = plan(rows(EARLIER, starts), final=True)
    assert run.resumed and run.pending == [FINAL]
    assert plan(rows(EARLIER, starts + [FINAL[0]]), final=True).resumed is False


def test_should_start_over_after_a_complete_run_or_for_other_work_or_when_asked():
    starts = [s for s, _ in ring.split_ring(4)]
    assert not plan(rows(EARLIER, starts)).resumed                                   # complete: a new verdict
    assert not plan(rows(EARLIER, starts[:1], mode="repair")).resumed               # another mode
    assert not plan(rows(EARLIER, starts[:1], consistency="ALL")).resumed           # another level
    assert not plan(rows(EARLIER, starts[:1], digest="other")).resumed               # the flow was redeployed
    assert not plan(rows(EARLIER, starts[:1]), restart=True).resumed
    later = dt.datetime(2024, 5, 1, 11, 30)
    assert plan(rows(EARLIER, starts[:1]) + rows(later, starts[:2])).started == later   # the latest run only
