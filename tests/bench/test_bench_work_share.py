"""benchmarks/async_triggers/benchmarks/harness/work_share.py: the work per row, its growth by cluster size and the projection, on figures
worked out by hand."""
from __future__ import annotations

import pytest

from async_triggers.benchmarks.experiments import work_per_row
from async_triggers.benchmarks.harness.work_share import NodeWork, Repetition, fit_line, growth, project


def rep(nodes: int, rows: int, works: list[float], window: float = 10.0) -> Repetition:
    # idle 0.1 CPU-s/s over a 10 s window: 1 CPU-s of each node's time is idling
    return Repetition(nodes, rows, window, window / 2,
                      tuple(NodeWork(f"node{i + 1}", w + 0.1 * window, 0.1, window) for i, w in enumerate(works)))


def test_should_count_only_the_cpu_beyond_idling_per_thousand_rows():
    r = rep(2, 20_000, [3.0, 5.0])
    assert r.per_1k_rows == pytest.approx(1000 * 8.0 / 20_000)
    assert r.node_per_1k_rows() == pytest.approx({"node1": 0.15, "node2": 0.25})
    # a node that idled less than its measured rate did no negative work
    assert NodeWork("node1", cpu_s=0.5, idle_rate=0.1, window_s=10).work_s == 0.0


def test_should_compare_sizes_repetition_by_repetition():
    by_size = {2: [rep(2, 10_000, [2.0, 2.0]), rep(2, 10_000, [2.5, 2.5])],
               4: [rep(4, 10_000, [1.1, 1.1, 1.1, 1.1]), rep(4, 10_000, [1.0, 1.0, 1.0, 1.0])]}
    assert growth(by_size, 2, 4) == pytest.approx([4.4 / 4.0, 4.0 / 5.0])
    with pytest.raises(ValueError, match="as many repetitions"):
        growth({2: by_size[2], 4: by_size[4][:1]}, 2, 4)


def test_should_project_along_the_least_squares_line():
    assert fit_line([(2, 1.0), (3, 1.5), (4, 2.0)]) == pytest.approx((0.0, 0.5))
    # 0.4 CPU-s per 1,000 rows at every size: 12 nodes x 1,000 / 0.4 = 30,000 rows/s per core of each node
    by_size = {n: [rep(n, 10_000, [4.0 / n] * n)] for n in (2, 3, 4)}
    projected = project(by_size, 12)
    assert projected.per_1k_rows == pytest.approx(0.4)
    assert projected.rows_per_s_per_core == pytest.approx(30_000)
    with pytest.raises(ValueError, match="two sizes"):
        fit_line([(2, 1.0), (2, 2.0)])
    falling = {2: [rep(2, 1000, [1.0, 1.0])], 4: [rep(4, 1000, [0.1] * 4)]}
    with pytest.raises(ValueError, match="too few or too noisy"):
        project(falling, 12)


def test_should_refuse_a_repetition_without_rows_or_with_a_node_missing():
    with pytest.raises(ValueError, match="must write rows"):
        rep(2, 0, [1.0, 1.0])
    with pytest.raises(ValueError, match="3 nodes but 2 measured"):
        Repetition(3, 10, 1.0, 1.0, (NodeWork("node1", 1, 0, 1), NodeWork("node2", 1, 0, 1)))


def test_should_build_a_graph_where_every_tweet_row_is_distinct():
    pairs = work_per_row.graph(authors=30, followers=5, celebrity=100)
    authors = {u for u, _ in pairs}
    assert len(pairs) == 30 * 5 + 100
    assert not authors & {f for _, f in pairs}, "an author follows an author: a row could count twice"
    lines, figures = work_per_row.report({2: [rep(2, 1000, [1.0, 1.0])], 4: [rep(4, 1000, [0.6] * 4)]}, 12)
    assert figures["growth"] == pytest.approx([1.2]) and figures["verdict"] == "missed"
    assert any("missed" in line for line in lines)


def test_should_read_whether_compactions_are_idle_from_nodetools_table():
    idle = "concurrent compactors         1\npending tasks                 0\ncompactions completed         12\n"
    busy = ("concurrent compactors 1\npending tasks 0\n"
            "id compaction type keyspace table completed total unit progress\nab Compaction workbench timeline 1 9 bytes 11%\n")
    assert work_per_row.compactions_idle(idle)
    assert not work_per_row.compactions_idle(busy)
    assert not work_per_row.compactions_idle(idle.replace("pending tasks                 0", "pending tasks 3"))
    with pytest.raises(ValueError, match="no pending tasks count"):
        work_per_row.compactions_idle("error: connection refused")


def test_should_sum_thread_cpu_by_group_between_two_readings():
    from async_triggers.benchmarks.harness.work_share import by_group, thread_group
    assert [thread_group(n) for n in ("MutationStage-3", "GC Thread#1", "async-trigger-f", "Native-Transpor")] == [
        "MutationStage", "GC Thread", "async-trigger-f", "Native-Transpor"]
    before = {(1, "MutationStage-1"): 2.0, (2, "MutationStage-2"): 1.0, (3, "GC Thread#0"): 5.0}
    after = {(1, "MutationStage-1"): 3.5, (2, "MutationStage-2"): 1.5, (3, "GC Thread#0"): 5.25,
             (4, "ReadStage-1"): 0.75}   # started in between: counts from zero
    assert by_group(before, after) == {"MutationStage": 2.0, "GC Thread": 0.25, "ReadStage": 0.75}
    # a shared-pool worker renamed after the stage it serves now: its interval, not its whole life
    renamed = {(2, "ReadStage-2"): 1.25}
    assert by_group(before, renamed) == {"ReadStage": 0.25}
    r = Repetition(1, 2000, 1.0, 1.0, (NodeWork("node1", 3.0, 0.0, 1.0),), by_group(before, after))
    assert r.top_threads(2) == [("MutationStage", 1.0), ("ReadStage", 0.375)]


def test_should_set_each_paxos_variant_side_by_side_by_size_and_refuse_an_unknown_one():
    v1 = {2: [rep(2, 1000, [1.0, 1.0]), rep(2, 1000, [1.2, 1.2])], 4: [rep(4, 1000, [1.0] * 4)] * 2}
    v2 = {2: [rep(2, 1000, [0.5, 0.5]), rep(2, 1000, [0.7, 0.7])], 4: [rep(4, 1000, [0.4] * 4)] * 2}
    lines = work_per_row.compare({"v1": v1, "v2": v2}, ["v1", "v2"])
    # medians: 2 nodes v1 (2.0 + 2.4) / 2 = 2.2, v2 1.2 -> 0.55x; 4 nodes v1 4.0, v2 1.6 -> 0.40x
    assert lines[1] == "  2 nodes: v1 2.200, v2 1.200 (0.55x)"
    assert lines[2] == "  4 nodes: v1 4.000, v2 1.600 (0.40x)"
    assert "paxos_variant v2" in work_per_row.report(v2, 12, "v2")[0][0]
    for wrong in ("v3", "v1,v1", ""):
        with pytest.raises(SystemExit):
            work_per_row.main(["--paxos", wrong])


def test_should_derive_the_controls_rows_as_the_flow_does_and_read_the_flow_against_it():
    tweets = [("t1", 7, "b", 5), ("t2", 8, "c", 6)]
    assert work_per_row.timeline_rows([(7, 100), (7, 101)], tweets) == [
        (7, "t1", 7, "b", 5), (100, "t1", 7, "b", 5), (101, "t1", 7, "b", 5), (8, "t2", 8, "c", 6)]
    flows = {2: [rep(2, 1000, [1.0, 1.0]), rep(2, 1000, [1.5, 1.5])], 4: [rep(4, 1000, [1.0] * 4)] * 2}
    plains = {2: [rep(2, 1000, [0.5, 0.5]), rep(2, 1000, [0.5, 0.5])], 4: [rep(4, 1000, [0.5] * 4)] * 2}
    lines, figures = work_per_row.control(flows, plains)
    # the flow 2.0 and 3.0 CPU-s per 1,000 rows at 2 nodes, the control 1.0 each: 2x, 3x; at 4 nodes 4.0 / 2.0: 2x
    assert figures["flow_over_control"] == {2: pytest.approx([2.0, 3.0]), 4: pytest.approx([2.0, 2.0])}
    assert figures["control_growth"] == pytest.approx([2.0, 2.0])
    assert figures["flow_over_control_growth"] == pytest.approx([1.0, 2.0 / 3.0])
    assert lines[1] == "  2 nodes: cluster 1.000, 1.000   the flow / the control: 2.00x, 3.00x"


def test_should_give_one_sizes_work_per_row_alone_and_refuse_a_size_below_the_rf():
    one = {2: [rep(2, 1000, [1.0, 1.0]), rep(2, 1000, [1.5, 1.5])]}
    lines, figures = work_per_row.report(one, 12)
    assert lines[1].startswith("  2 nodes: cluster 2.000, 3.000")
    assert set(figures) == {"sizes"}, "no growth, verdict or projection from one size"
    assert not any("projected" in line or "nodes /" in line for line in lines)
    lines, figures = work_per_row.control(one, {2: [rep(2, 1000, [0.5, 0.5])] * 2})
    assert figures["flow_over_control"] == {2: pytest.approx([2.0, 3.0])} and "control_growth" not in figures
    with pytest.raises(SystemExit):
        work_per_row.main(["--sizes", "1"])
