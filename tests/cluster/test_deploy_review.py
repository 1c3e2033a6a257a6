"""Deploys a user can review, on a real cluster: `deploy --dry-run` changes nothing and says what a deploy would
change, `show` and `history` say what is deployed and what was, and every deploy and drop names the cluster."""
import json

import pytest

from helpers import cluster_snapshot, create_schema, run_ctl

SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS review WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS review.a (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS review.b (id int PRIMARY KEY, v text);
"""

FLOW = """from async_triggers.flows import Flow, Queue, Write, source
FLOWS = [Flow(name='review_copy', source='review.a', queue=Queue(workers={workers}),
              steps=[Write('review.b', id=source.id, v=source.v)])]
"""


@pytest.fixture(scope="module")
def review_schema(cluster_settings):
    create_schema(cluster_settings, SCHEMA)


def flow_file(tmp_path, workers: int):
    path = tmp_path / f"review_{workers}.py"
    path.write_text(FLOW.format(workers=workers))
    return str(path)


def ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_should_review_deploy_show_and_keep_the_history_of_a_flow(review_schema, session, cluster_settings, tmp_path):
    before = cluster_snapshot(session)
    dry = ok(run_ctl(cluster_settings, "trigger", "deploy", "--dry-run", flow_file(tmp_path, 2)))
    assert cluster_snapshot(session) == before                 # a dry run changes nothing
    assert "flow review_copy: new" in dry.stdout
    assert "nothing was changed" in dry.stdout and "cluster '" in dry.stdout
    assert "+ CREATE CUSTOM INDEX IF NOT EXISTS" in dry.stdout and "+ INSERT INTO" in dry.stdout

    deployed = ok(run_ctl(cluster_settings, "trigger", "deploy", flow_file(tmp_path, 2)))
    assert "deployed review_copy revision 1" in deployed.stdout
    assert "deploy review_copy on cluster '" in deployed.stderr and ":9042" in deployed.stderr

    same = ok(run_ctl(cluster_settings, "trigger", "deploy", "--dry-run", "--json", flow_file(tmp_path, 2)))
    report = json.loads(same.stdout)
    assert report["flows"] == [{"name": "review_copy", "state": "unchanged", "diff": [], "held": False}]
    assert {s["effect"] for s in report["statements"]} == {"="}, report["statements"]

    changed = ok(run_ctl(cluster_settings, "trigger", "deploy", "--dry-run", flow_file(tmp_path, 4)))
    assert "flow review_copy: changed" in changed.stdout
    assert '-    "workers": 2' in changed.stdout and '+    "workers": 4' in changed.stdout
    assert "~ INSERT INTO" in changed.stdout

    ok(run_ctl(cluster_settings, "trigger", "deploy", flow_file(tmp_path, 4)))
    shown = json.loads(ok(run_ctl(cluster_settings, "trigger", "show", "review_copy", "--json")).stdout)
    assert (shown["revision"], shown["source"], shown["targets"], shown["paused"]) == (2, "review.a", ["review.b"], False)
    assert shown["spec"]["queue"]["workers"] == 4 and shown["capture_indexes"]
    old = json.loads(ok(run_ctl(cluster_settings, "trigger", "show", "review_copy", "--revision", "1", "--json")).stdout)
    assert old["spec"]["queue"]["workers"] == 2
    since = ok(run_ctl(cluster_settings, "trigger", "show", "review_copy", "--diff", "1")).stdout
    assert "changes since revision 1:" in since and '+    "workers": 4' in since
    missing = run_ctl(cluster_settings, "trigger", "show", "review_copy", "--revision", "9")
    assert missing.returncode == 2 and "flow 'review_copy' has no revision 9 (its revisions: 1, 2)" in missing.stderr

    dropped = ok(run_ctl(cluster_settings, "trigger", "drop", "review_copy"))
    assert "drop review_copy on cluster '" in dropped.stderr
    history = json.loads(ok(run_ctl(cluster_settings, "trigger", "history", "review_copy", "--json")).stdout)
    assert [(h["revision"], h["action"]) for h in history] == [(3, "drop"), (2, "deploy"), (1, "deploy")]
    assert all(h["by"] and h["via"].startswith("cluster '") for h in history)
