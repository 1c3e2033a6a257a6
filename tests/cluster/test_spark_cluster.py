"""The Spark jobs on a Spark standalone cluster (a master and two 1-core workers started by ``ctl spark up`` from
the pyspark installation's own launcher) give what they give on ``local[2]``: ``ctl verify`` (with a timeline row
deliberately removed), the follower-graph loader, and the load generator."""
from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
import time

import pytest

from helpers import ROOT, TWITTER_FLOWS, deploy_twitter, drain, run_ctl
from async_triggers.examples.twitter import workload

FLOW = "twitter_timeline"
NAME, PORT, WEBUI = "attest-spark", 7277, 8280
MASTER = f"spark://127.0.0.1:{PORT}"
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def spark_cluster(cluster_settings):
    up = run_ctl(cluster_settings, "spark", "up", "--name", NAME, "--port", str(PORT), "--webui-port", str(WEBUI),
                 timeout=200)
    try:
        assert up.returncode == 0 and up.stdout.strip() == MASTER, up.stderr
        status = run_ctl(cluster_settings, "spark", "status", "--name", NAME, "--json")
        report = json.loads(status.stdout)
        assert status.returncode == 0 and report["status"] == "ALIVE", status.stdout
        assert report["alive_workers"] == 2 and report["cores"] == 2, report
        yield MASTER
    finally:
        down = run_ctl(cluster_settings, "spark", "down", "--name", NAME)
        assert down.returncode == 0, down.stderr
    status = run_ctl(cluster_settings, "spark", "status", "--name", NAME, "--json")
    assert status.returncode == 1 and json.loads(status.stdout)["alive_workers"] == 0, status.stdout


@pytest.fixture(scope="module")
def twitter(cluster_settings):
    """The Twitter flow over 4 tweets: authors 1 and 2 have 30 followers each, author 3 none (94 timeline rows)."""
    from async_triggers.cql import connect
    deploy_twitter(cluster_settings, [(a, f) for a in (1, 2) for f in range(100, 130)])
    with connect(cluster_settings) as s:
        workload.write_tweets(s, [1, 2, 1, 3], random.Random(11))
        drain(s, FLOW)
    yield
    # leave the shared cluster as this module found it: without the flows (the later modules deploy them themselves)
    for name in TWITTER_FLOWS:
        dropped = run_ctl(cluster_settings, "trigger", "drop", name, "--drain")
        assert dropped.returncode == 0, dropped.stderr
    time.sleep(3 * 2)   # every node applies it within two of its control loop's 2-s cycles


def _verify(settings, master: str) -> dict:
    result = run_ctl(settings, "verify", FLOW, "--master", master, "--json", timeout=400)
    assert result.returncode in (0, 1), result.stderr
    [report] = json.loads(result.stdout)
    return {k: v for k, v in report.items() if k != "seconds"}


def test_should_find_on_the_spark_cluster_what_verify_finds_locally(cluster_settings, session, spark_cluster, twitter):
    gone = session.execute("SELECT user_id, tweet_id FROM twitter.timeline WHERE user_id = 100 LIMIT 1").one()
    session.execute("DELETE FROM twitter.timeline WHERE user_id = %s AND tweet_id = %s", (gone.user_id, gone.tweet_id))
    on_cluster, local = _verify(cluster_settings, spark_cluster), _verify(cluster_settings, "local[2]")
    assert on_cluster == local
    assert on_cluster["missing"] == 1 and on_cluster["expected"] == 2 * 31 + 31 + 1, on_cluster


def _graph(settings, session, master: str) -> tuple[int, str]:
    """Load a 400-user graph with ``master``; its edge count and a hash of its edges."""
    from async_triggers.connection import child_env
    session.execute("TRUNCATE twitter.followers")
    env = dict(child_env(settings.connection))
    result = subprocess.run([sys.executable, "-m", "async_triggers.spark_jobs.load_twitter", "--users", "400",
                             "--min-celebrity", "50", "--seed", "5", "--partitions", "2", "--master", master],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-2000:]
    edges = sorted((r.user_id, r.follower_id) for r in session.execute("SELECT user_id, follower_id FROM twitter.followers"))
    return len(edges), hashlib.sha256(repr(edges).encode()).hexdigest()


def test_should_write_the_same_graph_on_the_spark_cluster_as_locally(cluster_settings, session, spark_cluster,
                                                                     twitter):
    on_cluster = _graph(cluster_settings, session, spark_cluster)
    local = _graph(cluster_settings, session, "local[2]")
    assert on_cluster == local and on_cluster[0] > 400


def _loadgen(master: str) -> tuple[int, int]:
    result = subprocess.run([sys.executable, "-m", "async_triggers.spark_jobs.loadgen", "--rate", "100",
                             "--duration", "2", "--partitions", "2", "--master", master],
                            cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r"^requests (\d+)  ok (\d+)", result.stdout, re.M)
    assert found, result.stdout
    return int(found.group(1)), int(found.group(2))


def test_should_send_the_same_load_schedule_on_the_spark_cluster_as_locally(spark_cluster):
    assert _loadgen(spark_cluster) == _loadgen("local[2]") == (200, 200)
