"""The fault campaign (``ctl chaos run``): its seeded schedules and inputs, and a short campaign on the session's
real 3-node cluster that must lose, add and change nothing."""
from __future__ import annotations

import json

import pytest

from async_triggers.chaos import evidence, nemesis, workload

NODES = ("node1", "node2", "node3")


def test_a_seed_gives_the_same_schedule_and_the_faults_do_not_overlap():
    for seed in range(200):
        faults = nemesis.schedule(seed, NODES, load_s=40)
        assert faults == nemesis.schedule(seed, NODES, load_s=40), "replayable"
        assert 1 <= len(faults) <= 2
        for a, b in zip(faults, faults[1:]):
            assert b.at >= a.at + a.down_s * len(a.nodes), (a, b)
        for f in faults:
            assert f.kind in nemesis.KINDS and set(f.nodes) <= set(NODES)
    drawn = {f.kind for seed in range(200) for f in nemesis.schedule(seed, NODES, load_s=40)}
    assert drawn == set(nemesis.KINDS), "every kind is drawn"


def test_a_schedule_keeps_to_the_kinds_asked_for_and_names_a_bad_one():
    assert {f.kind for s in range(50) for f in nemesis.schedule(s, NODES, 40, kinds=("stop",))} == {"stop"}
    with pytest.raises(ValueError, match="unknown fault kind 'unplug'"):
        nemesis.schedule(1, NODES, 40, kinds=("unplug",))


def test_restart_all_and_two_in_a_row_take_down_what_they_say():
    faults = [f for s in range(300) for f in nemesis.schedule(s, NODES, 40)]
    assert all(f.nodes == NODES for f in faults if f.kind == "restart_all")
    assert all(len(set(f.nodes)) == 2 for f in faults if f.kind == "two_in_a_row")
    assert all(f.down_s == 60 for f in faults if f.kind == "down60")
    assert all(f.down_s == 0 for f in faults if f.kind == "quick_restart")


def test_the_inputs_write_each_tweet_first_and_change_it_only_later():
    ops = workload.operations(seed=7, tweets=500, seconds=40, users=1000, celebrity_tweets=3)
    assert ops == workload.operations(seed=7, tweets=500, seconds=40, users=1000, celebrity_tweets=3)
    first = {}
    for op in ops:
        first.setdefault(op.tweet, op)
        assert op.at <= 40
    assert all(op.kind == "insert" for op in first.values()) and len(first) == 500
    later = [op for op in ops if op is not first[op.tweet]]
    assert all(op.at >= first[op.tweet].at for op in later)
    assert {op.kind for op in later} == {"edit", "reattribute", "delete"}
    assert sum(1 for op in first.values() if op.author == 0) == 3, "the celebrity tweets"


def test_the_follower_graph_has_its_celebrity():
    g = workload.follower_graph(users=3000, celebrity_followers=2500, seed=1)
    followers = g.followers()
    assert len(followers[0]) == 2500
    assert all(u != f for u, f in g.edges)
    assert max(len(v) for u, v in followers.items() if u) <= 200


def test_a_campaign_refuses_to_kill_every_node_of_a_cluster_with_a_periodic_commit_log(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from async_triggers import cluster as cluster_mod, config
    from async_triggers.chaos import campaign
    from async_triggers.errors import ClusterError

    started = []
    monkeypatch.setattr(cluster_mod, "load_cluster", lambda settings, name: SimpleNamespace(_config_options={}))
    monkeypatch.setattr(cluster_mod, "up", lambda *a, **k: started.append(k))
    settings = config.load(home=tmp_path)
    with pytest.raises(ClusterError, match="cluster old runs with commitlog_sync periodic.*--commitlog-sync batch"):
        campaign._setup(settings, campaign.CampaignConfig(out=tmp_path, cluster="old"), lambda m: None)
    assert started == []   # refused before anything ran


def test_lineage_keys_are_read_as_the_plugin_writes_them():
    # KeyCodec: per component a 4-byte big-endian length, then its bytes; a target key starts with the target index
    key = evidence.encode_key([(7).to_bytes(8, "big")])
    assert key == bytes.fromhex("00000008" "0000000000000007")
    target = evidence.encode_key([(1).to_bytes(4, "big"), (4000).to_bytes(8, "big")])
    assert evidence.decode_key(target) == [(1).to_bytes(4, "big"), (4000).to_bytes(8, "big")]
    assert evidence._image_text(evidence.decode_key(target)) == "target 1 image [4000]"
    assert evidence._image_text(evidence.decode_key(evidence.encode_key([(0).to_bytes(4, "big")]))) == "target 0 sentinel"


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.timeout(2400)
def test_a_short_campaign_loses_adds_and_changes_nothing(cluster, cluster_settings, tmp_path):
    from conftest import TEST_CLUSTER
    from helpers import run_ctl
    # seed 145 draws, in one run under load, a restart of every node at 8 s then a kill -9 of node2 at 19 s (down
    # 24 s): the two faults that lose the most if anything is wrong (printed below; `ctl chaos run` runs more)
    result = run_ctl(cluster_settings, "chaos", "run", "--cluster", TEST_CLUSTER, "--runs", "1", "--seed", "145",
                     "--faults", "2", "--out", str(tmp_path), timeout=2400)
    print(result.stdout)
    print(result.stderr[-3000:])
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    runs = [line for line in lines if line.startswith("run ")]
    assert len(runs) == 2 and all(line.endswith("| ok") for line in runs), runs
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"] == 1 and summary["faults"] == 2
    assert summary["by_kind"] == {"restart_all": 1, "kill9": 1}, summary
    assert summary["missing"] == summary["unexpected"] == summary["wrong_value"] == summary["differs"] \
        == summary["gave_up"] == 0, summary
    assert summary["failed_runs"] == []
