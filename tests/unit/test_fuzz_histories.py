"""The fuzzer's pure parts (``ctl fuzz``, pycontrol/fuzz): seeded histories, their CQL, the shrinker."""
from __future__ import annotations

from collections import Counter

import pytest

from async_triggers.fuzz import generator, schema, shrinker
from async_triggers.fuzz.generator import Fault, History


def test_should_draw_the_same_history_for_the_same_seed_and_another_for_another():
    assert generator.generate(11, 40) == generator.generate(11, 40)
    assert generator.generate(11, 40) != generator.generate(12, 40)


def test_should_draw_every_write_shape_over_thirty_seeds():
    counts = sum((generator.generate(seed, 40).shapes() for seed in range(1, 31)), Counter())
    assert [s for s in generator.SHAPES if not counts[s]] == []
    assert generator.summary_of(counts).endswith("every shape drawn")


def test_should_write_at_one_and_without_lightweight_transactions_while_a_replica_is_down():
    faulty = [h for h in (generator.generate(s, 40) for s in range(60)) if h.fault]
    assert 10 <= len(faulty) <= 35, "about a third of the histories stop a replica"
    for h in faulty:
        down = [op for op in h.ops if h.fault.stop_before <= op.index < h.fault.start_before]
        assert down and all(op.consistency == "ONE" and not op.lwt for op in down), h.seed
    assert not any(generator.generate(s, 40, fault_rate=0.0).fault for s in range(60))


def test_should_render_the_run_and_the_timestamps_into_each_statement():
    insert = generator.Stmt("kv", "insert", (("k", 1),), (("a", "it's"), ("n", None)), ts=2_000, ttl=3)
    assert insert.cql("fz", 77, 1_000_000) == ("INSERT INTO fz.kv (run, k, a, n) VALUES (77, 1, 'it''s', null) "
                                               "USING TTL 3 AND TIMESTAMP 1002000")
    ranged = generator.Stmt("cl", "delete", (("p", 2),), bounds=(("c", ">", 1), ("c", "<=", 3)), ts=-500)
    assert ranged.cql("fz", 77, 1_000_000) == \
        "DELETE FROM fz.cl USING TIMESTAMP 999500 WHERE run = 77 AND p = 2 AND c > 1 AND c <= 3"
    lwt = generator.Stmt("cl", "update", (("p", 0), ("c", 4)), (("v", "v1"),), condition="IF v = 'v0'")
    assert lwt.cql("fz", 77, 0) == "UPDATE fz.cl SET v = 'v1' WHERE run = 77 AND p = 0 AND c = 4 IF v = 'v0'"
    batch = generator.Op(0, (ranged, insert), 1, "ALL", ("batch_logged",), "logged")
    assert batch.cql("fz", 5, 0).startswith("BEGIN BATCH DELETE FROM fz.cl") and batch.cql("fz", 5, 0).endswith(
        "; APPLY BATCH")
    assert batch.partitions == {("cl", 2), ("kv", 1)} and batch.short_ttl == 3


def test_should_give_lightweight_transactions_no_timestamp_and_the_others_one():
    for seed in range(20):
        for op in generator.generate(seed, 40).ops:
            for s in op.statements:
                assert (s.ts is None) == bool(s.condition), op


def test_should_name_the_source_partitions_of_a_differing_row():
    assert schema.suspects({"run": 1, "a": "a1", "k": 4}) == {("kv", 4)}
    assert schema.suspects({"run": 1, "w": 2, "p": 0, "c": 3}) == {("cl", 0)}
    assert schema.suspects({"run": 1, "f": 101}) == set()


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
    history = generator.generate(4, 30)
    history = History(history.seed, history.ops, Fault(1, 2, 9))
    culprit = next(op for op in history.ops if ("kv", 2) in op.partitions)
    tried = []

    def fails(candidate):
        tried.append(candidate)
        return culprit in candidate.ops

    shrunk = shrinker.shrink(history, fails, {("kv", 2)}, shrinker.Budget(100))
    assert tried[0] == history.without_fault()
    assert tried[1].ops == history.without_fault().touching({("kv", 2)}).ops
    assert shrunk.history.ops == (culprit,) and shrunk.history.fault is None and not shrunk.exhausted


@pytest.mark.parametrize("ops", [0, -1])
def test_should_refuse_a_history_without_operations(ops):
    with pytest.raises(ValueError, match="at least one operation"):
        generator.generate(1, ops)


@pytest.mark.parametrize("args, message", [(["--ops", "0"], "--ops must be at least 1, found: 0"),
                                           (["--seeds", "0"], "--seeds must be at least 1, found: 0"),
                                           (["--keyspace", "Fuzz-1"], "--keyspace must be a lower-case CQL")])
def test_should_name_a_bad_fuzz_option_before_touching_a_cluster(args, message, tmp_path):
    from typer.testing import CliRunner

    from async_triggers import cli
    cli._register()
    result = CliRunner().invoke(cli.app, ["fuzz", "run", "--out", str(tmp_path), *args], env={"COLUMNS": "250"})
    assert result.exit_code == 2 and message in result.output, result.output
