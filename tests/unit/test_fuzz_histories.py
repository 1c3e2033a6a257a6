"""The fuzzer's pure parts (``ctl fuzz``, pycontrol/async_triggers/fuzz): seeded histories, their CQL, the shrinker."""
from __future__ import annotations

from collections import Counter

import pytest

from async_triggers.fuzz import generator, schema, shrinker
from async_triggers.fuzz.generator import Fault, History


DESIGN = schema.draw(0)


def test_should_draw_the_same_history_for_the_same_seed_and_another_for_another():
    assert generator.generate(11, DESIGN, 40) == generator.generate(11, DESIGN, 40)
    assert generator.generate(11, DESIGN, 40) != generator.generate(12, DESIGN, 40)
    assert schema.draw(3) == schema.draw(3) and schema.draw(3) != schema.draw(4)


def test_should_draw_every_write_shape_over_fifty_seeds_of_five_designs():
    counts = sum((generator.generate(seed, schema.draw(seed // 10), 40).shapes() for seed in range(50)), Counter())
    assert [s for s in generator.SHAPES if not counts[s]] == []
    assert generator.summary_of(counts).endswith("every shape drawn")


def test_should_draw_every_column_type_kind_clustering_order_and_flow_shape_over_five_designs():
    designs = [schema.draw(d) for d in range(5)]
    types = schema.types_of(designs)
    assert {"set<text>", "list<int>", "map<text, int>", "pair", "frozen<set<int>>", "int", "bigint", "text", "uuid",
            "timeuuid", "blob"} <= types
    assert {"clustering int ASC", "clustering int DESC", "clustering text ASC", "clustering text DESC"} <= types
    assert any(t.startswith("static ") for t in types)
    assert schema.flow_shapes_of(designs) == {
        "copy (direct)", "copy (lineage)", "index", "cascade", "fan-out of several pages, following its table",
        "a direct write and an index into one table", "target partitioned by a clustering column",
        "aggregate (count, sum, min, max per group)"}


def test_should_deploy_a_drawn_design_as_ctl_validates_it():
    # the design's schema and flows pass the deploy's validation (the types, the lineage rules)
    from async_triggers import validate
    from async_triggers.cql_schema import parse_cql_file
    from async_triggers.flow_file import load_flow_file
    import tempfile
    from pathlib import Path
    for d in range(5):
        design = schema.draw(d)
        folder = Path(tempfile.mkdtemp())
        (folder / "schema.cql").write_text(design.schema_cql("fz").replace(
            "CREATE TYPE IF NOT EXISTS fz.pair (a int, b text)", ""))
        (folder / "flows.py").write_text(design.flow_file("fz"))
        specs = validate.compile_all(load_flow_file(folder / "flows.py"), parse_cql_file(folder / "schema.cql"))
        modes = {spec["name"]: [t["mode"] for t in spec["targets"]] for spec in specs}
        assert modes["fz_s2_copy"] == ["direct"] and modes["fz_s0_copy"] == ["lineage"], modes
        assert modes["fz_s0_both"] == ["lineage", "lineage"], modes
        assert modes["fz_s1_by_c"] == ["lineage"], modes
        # each feed follows fans (a join index before it) and has a companion on fans
        assert modes["fz_s0_feed"] == ["lineage", "lineage"] and "fz_s0_feed_follows" in modes, modes


def test_should_write_at_one_and_without_lightweight_transactions_while_a_replica_is_down():
    faulty = [h for h in (generator.generate(s, DESIGN, 40) for s in range(60)) if h.fault]
    assert 10 <= len(faulty) <= 35, "about a third of the histories stop a replica"
    for h in faulty:
        down = [op for op in h.ops if h.fault.stop_before <= op.index < h.fault.start_before]
        assert down and all(op.consistency == "ONE" and not op.lwt for op in down), h.seed
    assert not any(generator.generate(s, DESIGN, 40, fault_rate=0.0).fault for s in range(60))


def test_should_render_the_run_and_the_timestamps_into_each_statement():
    insert = generator.Stmt("s0", "insert", (("k", "= 1"),), (("a", generator.literal("it's")), ("n", "null")),
                            ts=2_000, ttl=3, ks=(1,))
    assert insert.cql("fz", 77, 1_000_000) == ("INSERT INTO fz.s0 (run, k, a, n) VALUES (77, 1, 'it''s', null) "
                                               "USING TTL 3 AND TIMESTAMP 1002000")
    ranged = generator.Stmt("s1", "delete", (("k", "= 2"),), bounds=(("r0", ">", "1"), ("r0", "<=", "3")), ts=-500,
                            ks=(2,))
    assert ranged.cql("fz", 77, 1_000_000) == \
        "DELETE FROM fz.s1 USING TIMESTAMP 999500 WHERE run = 77 AND k = 2 AND r0 > 1 AND r0 <= 3"
    lwt = generator.Stmt("s1", "update", (("k", "= 0"), ("r0", "= 4")), (("v", "'v1'"),), condition="IF v = 'v0'",
                         ks=(0,))
    assert lwt.cql("fz", 77, 0) == "UPDATE fz.s1 SET v = 'v1' WHERE run = 77 AND k = 0 AND r0 = 4 IF v = 'v0'"
    both = generator.Stmt("s0", "delete", (("k", "IN (1, 3)"),), ts=0, ks=(1, 3))
    assert both.cql("fz", 5, 0) == "DELETE FROM fz.s0 USING TIMESTAMP 0 WHERE run = 5 AND k IN (1, 3)"
    batch = generator.Op(0, (ranged, insert), 1, "ALL", ("batch_logged",), "logged")
    assert batch.cql("fz", 5, 0).startswith("BEGIN BATCH DELETE FROM fz.s1") and batch.cql("fz", 5, 0).endswith(
        "; APPLY BATCH")
    assert batch.partitions == {("s1", 2), ("s0", 1)} and batch.short_ttl == 3 and both.partitions == {("s0", 1), ("s0", 3)}


def test_should_render_collection_udt_and_empty_literals():
    kinds = schema.KINDS
    assert generator.literal(frozenset({"y", "x"}), kinds["set"]) == "{'x', 'y'}"
    assert generator.literal((3, 1), kinds["list"]) == "[3, 1]"
    assert generator.literal((("y", 2), ("x", 1)), kinds["map"]) == "{'x': 1, 'y': 2}"
    assert generator.literal((1, None), kinds["udt"]) == "{a: 1, b: null}"
    assert generator.literal(b"", kinds["blob"]) == "0x" and generator.literal("", kinds["text"]) == "''"


def test_should_give_lightweight_transactions_no_timestamp_and_the_others_one():
    for seed in range(20):
        for op in generator.generate(seed, DESIGN, 40).ops:
            for s in op.statements:
                assert (s.ts is None) == bool(s.condition), op


def test_should_keep_each_clients_skew_within_fifty_milliseconds():
    histories = [generator.generate(seed, DESIGN, 60) for seed in range(20)]
    for history in histories:
        assert 2 <= history.clients <= 4 and {op.client for op in history.ops} <= set(range(history.clients))
        assert len(history.skews) == history.clients and history.skews[0] == 0
        assert all(abs(skew) <= generator.MAX_SKEW_US for skew in history.skews)
    assert len({skew for h in histories for skew in h.skews}) > 20, "skews are drawn"


def test_should_name_the_source_partitions_of_a_differing_row():
    assert DESIGN.suspects({"run": 1, "n": 2, "k": 4}) == {("s0", 4), ("s1", 4), ("s2", 4)}
    assert DESIGN.suspects({"run": 1, "f": 101}) == set()


def test_should_find_the_operations_that_fail_together_with_ddmin():
    calls = []

    def fails(items):
        calls.append(list(items))
        return {3, 17} <= set(items)

    assert shrinker.ddmin(list(range(40)), fails, shrinker.Budget(200)) == [3, 17]
    assert len(calls) == len({tuple(c) for c in calls}), "no candidate run twice"


def test_should_stop_ddmin_when_the_budget_is_spent():
    budget = shrinker.Budget(5)
    out = shrinker.ddmin(list(range(40)), lambda items: 3 in items, budget)
    assert budget.used == 5 and 3 in out and len(out) < 40


def test_should_shrink_by_dropping_the_fault_then_keeping_the_suspect_partitions():
    history = generator.generate(4, DESIGN, 30)
    history = History(history.seed, history.ops, Fault(1, 2, 9))
    culprit = next(op for op in history.ops if ("s0", 2) in op.partitions)
    tried = []

    def fails(candidate):
        tried.append(candidate)
        return culprit in candidate.ops

    shrunk = shrinker.shrink(history, fails, {("s0", 2)}, shrinker.Budget(100))
    assert tried[0] == history.without_fault()
    assert tried[1].ops == history.without_fault().touching({("s0", 2)}).ops
    assert shrunk.history.ops == (culprit,) and shrunk.history.fault is None and not shrunk.exhausted


@pytest.mark.parametrize("ops", [0, -1])
def test_should_refuse_a_history_without_operations(ops):
    with pytest.raises(ValueError, match="at least one operation"):
        generator.generate(1, DESIGN, ops)


@pytest.mark.parametrize("args, message", [(["--ops", "0"], "--ops must be at least 1, found: 0"),
                                           (["--seeds", "0"], "--seeds must be at least 1, found: 0"),
                                           (["--keyspace", "Fuzz-1"], "--keyspace must be a lower-case CQL"),
                                           (["--design-every", "0"], "--design-every must be at least 1, found: 0")])
def test_should_name_a_bad_fuzz_option_before_touching_a_cluster(args, message, tmp_path):
    from typer.testing import CliRunner

    from async_triggers import cli
    cli._register()
    result = CliRunner().invoke(cli.app, ["fuzz", "run", "--out", str(tmp_path), *args], env={"COLUMNS": "250"})
    assert result.exit_code == 2 and message in result.output, result.output
