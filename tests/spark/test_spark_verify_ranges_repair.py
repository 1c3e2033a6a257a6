"""async_triggers.spark_jobs.verify_run, repair and verify_report on literal DataFrames: a comparison split into token
ranges adds up to the whole-table one; the writes and deletes a repair computes, with their timestamps; the report,
the JSON lines and the exit code. Expected values are written by hand."""
from __future__ import annotations

import json

import pytest

from spark_helpers import assert_same_rows  # noqa: E402
from async_triggers.spark_jobs import backfill, compare, derive, repair, ring, verify, verify_progress  # noqa: E402
from async_triggers.spark_jobs import verify_run  # noqa: E402
from async_triggers.spark_jobs.compare import Result  # noqa: E402
from async_triggers.spark_jobs.repair import Repaired  # noqa: E402
from async_triggers.spark_jobs.verify_run import FlowReport, Options  # noqa: E402
from async_triggers.spec import FlowSpec  # noqa: E402

WT, EXP, FOUND = backfill.WRITETIME, backfill.EXPIRES, repair.FOUND_WRITETIME

# one source, two tables: orders_by_status's key carries the source partition key (tenant), by_order's does not
SPEC = {
    "name": "orders_index", "handler": None,
    "source": {"keyspace": "shop", "table": "orders", "partition_key": ["tenant"], "clustering": ["order_id"],
               "columns": {"tenant": "int", "order_id": "int", "status": "text", "total": "int"}},
    "targets": [
        {"keyspace": "shop", "table": "orders_by_status", "partition_key": ["status"],
         "clustering": ["tenant", "order_id"],
         "columns": {"status": "source.status", "tenant": "source.tenant", "order_id": "source.order_id",
                     "total": "source.total"}, "fanout": None, "mode": "lineage", "lineage_columns": ["status"]},
        {"keyspace": "shop", "table": "by_order", "partition_key": ["order_id"], "clustering": [],
         "columns": {"order_id": "source.order_id", "status": "source.status"}, "fanout": None, "mode": "direct"},
    ],
}
ORDERS = [(t, 100 + t, "open" if t % 2 else "paid", 10 * t) for t in range(1, 9)]


def counts(r):
    return r.expected, r.present, r.missing, r.unexpected, r.wrong_value


def test_should_trace_a_target_row_to_its_source_token_only_through_its_key():
    spec = FlowSpec.parse(SPEC)
    groups = derive.targets_by_table(spec)
    assert derive.trace_columns(spec, groups["shop.orders_by_status"]) == ["tenant"]
    assert derive.trace_columns(spec, groups["shop.by_order"]) is None


def test_should_add_up_the_token_ranges_to_the_whole_table_comparison(spark):
    source = spark.createDataFrame(ORDERS, "tenant int, order_id int, status string, total int")
    by_status = [(s, t, o, v) for t, o, s, v in ORDERS]
    by_status[0] = ("open", 1, 101, 11)                    # a wrong total
    del by_status[3]                                        # tenant 4's row missing
    by_status.append(("open", 9, 109, 90))                  # no tenant 9: unexpected
    by_order = [(o, s) for _, o, s, _ in ORDERS[:-1]] + [(999, "open")]   # 108 missing, 999 unexpected
    targets = {
        "shop.orders_by_status": spark.createDataFrame(by_status, "status string, tenant int, order_id int, total int"),
        "shop.by_order": spark.createDataFrame(by_order, "order_id int, status string")}
    spec = FlowSpec.parse(SPEC)
    traced = {t: derive.trace_columns(spec, g) for t, g in derive.targets_by_table(spec).items()}
    whole, _ = verify_run.compare_unit(spec, verify_run.WHOLE, source, {}, targets, traced, Options())

    options = Options(ranges=4)
    tokened = verify_run._with_token(source, ["tenant"], ["int"], backfill.TOKEN)
    ranged_targets = dict(targets)
    ranged_targets["shop.orders_by_status"] = verify_run._with_token(
        targets["shop.orders_by_status"], ["tenant"], ["int"], verify_run.TRACE_TOKEN)
    units = ring.split_ring(4) + [verify_progress.FINAL]
    per_unit = [verify_run.compare_unit(spec, u, tokened, {}, ranged_targets, traced, options)[0] for u in units]
    assert "shop.orders_by_status" not in per_unit[-1]       # the last unit only looks at by_order's unexpected rows
    assert per_unit[-1]["shop.by_order"].unexpected == 1
    assert sum(1 for res in per_unit[:-1] if res["shop.orders_by_status"].expected) > 1   # spread over ranges
    for table, expected in (("shop.orders_by_status", (8, 6, 1, 1, 1)), ("shop.by_order", (8, 7, 1, 1, 0))):
        merged = compare.merge([res[table] for res in per_unit if table in res])
        assert counts(whole[table]) == counts(merged) == expected, table


# --- repair: what it writes and deletes, pure ------------------------------------------------------------------

def classified(spark, source_rows, actual_rows):
    source = spark.createDataFrame(source_rows, f"tenant int, order_id int, status string, total int, "
                                                f"{WT} long, {EXP} long")
    spec = FlowSpec.parse(dict(SPEC, targets=SPEC["targets"][:1]))
    exp = derive.expected_rows(spec, source, {}, carry=(WT, EXP))["shop.orders_by_status"]
    actual = spark.createDataFrame(actual_rows, f"status string, tenant int, order_id int, total int, {FOUND} long")
    return compare.classify(exp, actual, ["status", "tenant", "order_id"], carry=(WT, EXP), found=(FOUND,),
                            newest=WT)


def test_should_write_missing_and_wrong_rows_at_their_source_rows_time_and_delete_unexpected_rows_at_their_own(spark):
    df, layout = classified(spark, [
        (1, 1, "open", 10, 1_000, 0),         # present
        (1, 2, "open", 20, 2_000, 3600),      # missing: written at 2000, expiring with its source
        (1, 3, "paid", 30, 3_000, 0),         # wrong (older in the table): written at 3000
        (1, 4, "paid", 40, 4_000, 0),         # wrong, but the table's row is newer: left alone
    ], [
        ("open", 1, 1, 10, 1_000),
        ("paid", 1, 3, 31, 2_500),
        ("paid", 1, 4, 41, 9_000),
        ("gone", 1, 5, 50, 5_000),            # unexpected: deleted at its own newest cell
        ("gone", 1, 6, None, None),           # unexpected, no readable write time: deleted at the run's start
    ])
    writes = repair.planned_writes(df, layout)
    assert writes.columns == ["status", "tenant", "order_id", "total", WT, EXP]
    assert_same_rows(writes, [("open", 1, 2, 20, 2_000, 3600), ("paid", 1, 3, 30, 3_000, 0)])
    assert_same_rows(repair.planned_deletes(df, layout, fallback_micros=77),
                     [("gone", 1, 5, 5_000), ("gone", 1, 6, 77)])
    assert df.where(repair.blocked(layout)).count() == 1


def test_should_write_the_newest_source_rows_values_when_several_derive_one_key(spark):
    # two source rows (tenants 1 and 2, order 7) derive the same by_order row: the newer one's status is written
    spec = FlowSpec.parse(dict(SPEC, targets=SPEC["targets"][1:]))
    source = spark.createDataFrame([(1, 7, "open", 1, 5_000, 0), (2, 7, "paid", 1, 6_000, 0)],
                                   f"tenant int, order_id int, status string, total int, {WT} long, {EXP} long")
    exp = derive.expected_rows(spec, source, {}, carry=(WT, EXP))["shop.by_order"]
    actual = spark.createDataFrame([(7, "lost", 1_000)], f"order_id int, status string, {FOUND} long")
    df, layout = compare.classify(exp, actual, ["order_id"], carry=(WT, EXP), found=(FOUND,), newest=WT)
    assert_same_rows(repair.planned_writes(df, layout), [(7, "paid", 6_000, 0)])


def test_should_bind_spark_values_as_the_driver_wants_them():
    import datetime as dt
    import decimal
    import uuid
    u = uuid.uuid4()
    assert repair.driver_value(str(u), "uuid") == u
    assert repair.driver_value(decimal.Decimal(12), "varint") == 12
    assert repair.driver_value(bytearray(b"ab"), "blob") == b"ab"
    assert repair.driver_value(dt.datetime(2024, 1, 1), "timestamp").tzinfo is not None
    assert repair.driver_value(None, "int") is None and repair.driver_value(5, "int") == 5


def test_should_count_a_row_read_back_only_when_it_holds_what_the_repair_wrote_at_its_timestamp():
    from async_triggers.spark_jobs.repair_confirm import holds
    dated = {0: 500}                                  # column 0 dated, written at 500; column 1 a collection
    assert holds(["a", [1]], ["a", [1]], dated, 500)
    assert not holds(["a", [1]], None, dated, 500), "absent: a newer tombstone shadows the write"
    assert not holds(["a", [1]], ["b", [1]], {0: 900}, 500), "a newer value made by hand"
    assert not holds([None, None], ["x", None], {0: 900}, 500), "an expected null must be absent"
    assert holds([None, None], [None, []], {0: None}, 500), "an empty collection is a null"
    assert not holds(["a", [1]], ["a", None], dated, 500)


def test_should_hand_the_read_back_each_row_with_its_source_key_and_cells(spark):
    # the source key columns (tenant, order_id) are also target columns: carried by position, never by name
    spec = FlowSpec.parse(dict(SPEC, targets=SPEC["targets"][:1]))
    source = spark.createDataFrame(
        [(1, 1, "open", 10, 5_000, 60, [5_000, 4_000]), (2, 2, "paid", 20, 6_000, 0, [6_000, None])],
        f"tenant int, order_id int, status string, total int, {WT} long, {EXP} long, {backfill.CELLS} array<long>")
    carry = (WT, EXP, backfill.CELLS, "tenant", "order_id")
    exp = derive.expected_rows(spec, source, {}, carry=carry)["shop.orders_by_status"]
    actual = spark.createDataFrame([("paid", 2, 2, 99, 9_000)],
                                   f"status string, tenant int, order_id int, total int, {FOUND} long")
    df, layout = compare.classify(exp, actual, ["status", "tenant", "order_id"], carry=carry, found=(FOUND,),
                                  newest=WT)
    rows = sorted((repair.as_wanted(r, layout) for r in repair.wanted_rows(df, layout, 2).collect()),
                  key=lambda w: w.key)
    from async_triggers.spark_jobs.repair_confirm import Wanted
    assert rows == [
        Wanted(key=("open", 1, 1), values=(10,), source_key=(1, 1), source_writetime=5_000,
               source_cells=(5_000, 4_000), found_writetime=None, written=True),
        Wanted(key=("paid", 2, 2), values=(20,), source_key=(2, 2), source_writetime=6_000,
               source_cells=(6_000, None), found_writetime=9_000, written=False)]   # newer in the table: blocked


def test_should_raise_a_row_that_tied_a_cell_of_the_table_and_trust_no_single_replica():
    from async_triggers.spark_jobs.repair_confirm import Wanted, trusted_level
    row = dict(key=(1,), values=("a",), source_key=(1,), source_writetime=500, source_cells=(500,), written=True)
    read_back = (["a"], {0: 500})
    assert Wanted(**row, found_writetime=None).confirmed_by(read_back)
    assert not Wanted(**row, found_writetime=500).confirmed_by(read_back), \
        "a tie: Cassandra may have kept the table's value, whatever the read back shows"
    assert not Wanted(**row, found_writetime=None).confirmed_by(None)
    assert not Wanted(**{**row, "written": False}, found_writetime=900).confirmed_by(read_back)
    assert [trusted_level(c) for c in ("ONE", "LOCAL_ONE", "TWO", "LOCAL_QUORUM", "ALL")] == \
        ["QUORUM", "QUORUM", "QUORUM", "LOCAL_QUORUM", "ALL"]


def test_should_raise_above_every_newer_write_and_never_below_now():
    from async_triggers.spark_jobs.repair_confirm import least_ttl, newest, raised_timestamp
    assert raised_timestamp(1_000, 5_000, None, 7_000) == 7_001
    assert raised_timestamp(9_000, 5_000, None) == 9_000
    assert newest([None, 3, 8]) == 8 and newest([None]) is None
    assert least_ttl([None, 0, 30, 12]) == 12 and least_ttl([None, 0]) == 0


# --- report, JSON lines, exit codes ----------------------------------------------------------------------------

WRONG = Result("shop.orders_by_status", ("status", "tenant", "order_id"), expected=2, present=1, missing=0,
               unexpected=1, wrong_value=1,
               unexpected_sample=({"status": "paid", "tenant": 1, "order_id": 3, "total": 30},),
               wrong_value_sample=({"key": {"status": "open", "tenant": 1, "order_id": 1}, "expected": {"total": 10},
                                    "found": {"total": 11}, "columns": ["total"]},))
GOOD = Result("shop.by_order", ("order_id",), expected=2, present=2, missing=0, unexpected=0)


def test_should_report_each_kind_of_difference_with_samples():
    text = verify.format_report(FlowReport("orders_index", (WRONG, GOOD), 1.5, "ALL"))
    assert "read at ALL, the whole ring" in text
    assert "status=paid, tenant=1, order_id=3, total=30" in text
    assert "status=open, tenant=1, order_id=1: total expected 10, found 11" in text
    assert text.splitlines()[-1] == "FAILED: 1 unexpected, 1 wrong value"
    assert verify.format_report(FlowReport("f", (GOOD,), 1.0, "LOCAL_QUORUM")).splitlines()[-1] == "OK: no difference"


def test_should_print_one_json_line_per_flow_with_one_object_per_table():
    line = verify.json_line(FlowReport("orders_index", (WRONG, GOOD), 1.234, "LOCAL_QUORUM", ranges=4,
                                       run="2024-01-01 00:00:00", done_before=1))
    tables = json.loads(line)
    assert [t["table"] for t in tables] == ["shop.orders_by_status", "shop.by_order"]
    first = tables[0]
    assert (first["flow"], first["consistency"], first["ranges"], first["run"], first["ok"]) == \
           ("orders_index", "LOCAL_QUORUM", 4, "2024-01-01 00:00:00", False)
    assert (first["missing"], first["unexpected"], first["wrong_value"], first["expected"], first["present"]) == \
           (0, 1, 1, 2, 1)
    assert first["wrong_value_sample"][0]["columns"] == ["total"] and "repaired" not in first


def test_should_report_a_repair_and_succeed_when_everything_found_was_repaired():
    done = FlowReport("orders_index", (WRONG,), 2.0, "LOCAL_QUORUM",
                      repaired=(Repaired("shop.orders_by_status", written=1, deleted=1),))
    assert done.ok and verify.exit_code([done]) == 0
    assert verify.format_report(done).splitlines()[-1].startswith("REPAIRED: found 1 unexpected, 1 wrong value")
    assert json.loads(verify.json_line(done))[0]["repaired"] == {"written": 1, "deleted": 1, "not_repaired": 0,
                                                                 "raised": 0}
    left = FlowReport("orders_index", (WRONG,), 2.0, "LOCAL_QUORUM",
                      repaired=(Repaired("shop.orders_by_status", deleted=1, not_repaired=1),))
    assert not left.ok and verify.exit_code([left]) == 1


def test_should_exit_1_when_any_flow_differs_or_fails_and_name_the_failed_flow():
    from async_triggers.errors import UnknownFlowError
    good = FlowReport("a", (GOOD,), 1.0, "LOCAL_QUORUM")
    bad = FlowReport("b", (WRONG,), 1.0, "LOCAL_QUORUM")
    out, err, code = verify.outcome([good, bad], as_json=True)
    assert code == 1 and len(out) == 2 and err == []
    assert [json.loads(line)[0]["flow"] for line in out] == ["a", "b"]
    out, err, code = verify.outcome([good, verify.Failure("c", verify.VerifyError("Cassandra unreachable")),
                                     verify.Skipped("d", "runs a Java handler")], as_json=False)
    assert code == 1 and out[0].splitlines()[-1] == (
        "3 flows: 1 OK, 0 with differences, 1 could not be verified (c), 1 skipped (d)")
    assert err == ["verify d: skipped: runs a Java handler", "error: flow 'c': Cassandra unreachable"]
    assert verify.outcome([good], as_json=False)[2] == 0
    assert verify.outcome([verify.Failure("e", UnknownFlowError(["e"]))], as_json=True)[2] == 2


@pytest.mark.parametrize("result, code", [(GOOD, 0), (WRONG, 1),
                                          (Result("t.x", ("k",), expected=3, present=2, missing=1, unexpected=0), 1)])
def test_should_exit_1_from_verify_main_on_any_difference(spark, tmp_path, monkeypatch, capsys, result, code):
    from async_triggers.spark_jobs import session

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    monkeypatch.setattr(session, "build_session", lambda **kw: spark)  # no connector, no Cassandra
    seen = {}

    def fake_verify_flow(spark_, driver, spec, options, progress):
        seen["options"] = options
        return FlowReport(spec.name, (result,), 0.5, options.consistency)

    monkeypatch.setattr(verify, "verify_flow", fake_verify_flow)
    assert verify.main(["--spec", str(spec_file), "--json", "--consistency", "all"]) == code
    [line] = capsys.readouterr().out.splitlines()
    [table] = json.loads(line)
    assert (table["flow"], table["table"], table["consistency"]) == ("orders_index", result.table, "ALL")
    assert seen["options"] == Options(consistency="ALL")


def test_should_refuse_a_bad_consistency_level_and_an_unreadable_spec_in_verify_main(tmp_path, capsys):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    assert verify.main(["--spec", str(spec_file), "--consistency", "ANY"]) == 2
    assert "--consistency must be one of" in capsys.readouterr().err
    assert verify.main(["--spec", str(tmp_path / "absent.json")]) == 2
    assert "cannot read the specification" in capsys.readouterr().err


def test_should_resume_an_interrupted_run_and_add_the_recorded_ranges_to_the_new_ones(spark, monkeypatch):
    """verify_flow's checkpoints, with the checkpoint table's two statements kept in memory (the CQL itself is
    run by the cluster tests) and the tables as literal DataFrames."""
    source = spark.createDataFrame(ORDERS, "tenant int, order_id int, status string, total int")
    by_status = spark.createDataFrame([(s, t, o, v) for t, o, s, v in ORDERS[1:]],            # tenant 1's row missing
                                      "status string, tenant int, order_id int, total int")
    by_order = spark.createDataFrame([(o, s) for _, o, s, _ in ORDERS] + [(999, "open")], "order_id int, status string")
    tables = {"shop.orders_by_status": by_status, "shop.by_order": by_order}
    store: list[dict] = []
    monkeypatch.setattr(verify_progress, "recorded", lambda session, flow: list(store))
    monkeypatch.setattr(verify_progress, "record", lambda session, run, unit, result: store.append(
        {"run": run.started, "range_start": unit[0], "ranges": len(run.ranges), "mode": run.mode,
         "consistency": run.consistency, "spec_hash": run.spec_hash, "result": json.dumps(result, default=str)}))
    monkeypatch.setattr(verify_run, "read_source", lambda spark_, spec, options, fallback: verify_run._with_token(
        source, ["tenant"], ["int"], backfill.TOKEN))
    monkeypatch.setattr(verify_run, "read_target", lambda spark_, session, spec, table, traced, options: tables[table]
                        if traced is None else verify_run._with_token(tables[table], traced, ["int"],
                                                                      verify_run.TRACE_TOKEN))

    class Crash(Exception):
        pass

    lines = []

    def crash_after_two(line):
        lines.append(line)
        if "ranges 2/5 done" in line:
            raise Crash()

    options = Options(ranges=4)
    with pytest.raises(Crash):
        verify_run.verify_flow(spark, None, SPEC, options, crash_after_two)
    assert len(store) == 2
    lines.clear()
    report = verify_run.verify_flow(spark, None, SPEC, options, lines.append)
    assert "2/5 units done before, 3 to do" in lines[0] and "ranges 5/5 done" in lines[-1]
    assert (report.ranges, report.done_before, report.run) == (4, 2, str(store[0]["run"]))
    assert [counts(r) for r in report.results] == [(8, 7, 1, 0, 0), (8, 8, 0, 1, 0)]
    assert report.results[0].missing_sample == ({"status": "open", "tenant": 1, "order_id": 101, "total": 10},)
    assert not report.ok and len(store) == 5
    again = verify_run.verify_flow(spark, None, SPEC, options, lines.append)   # complete: a new run, all 5 units
    assert again.done_before == 0 and again.run != report.run and len(store) == 10
