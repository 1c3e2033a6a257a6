"""The totals an aggregate table should hold (spark_jobs.derive.aggregate_rows) and their comparison with the table:
counts, sums (a sum of bigint kept in varint), least and greatest values with nulls left out, no group for a null or
empty group value. Expected rows are written out by hand here, never computed by the code under test."""
from __future__ import annotations

from decimal import Decimal

import pytest

from spark_helpers import assert_same_rows  # noqa: E402
from async_triggers.spark_jobs import derive, verify  # noqa: E402
from async_triggers.spec import FlowSpec  # noqa: E402

SPEC = {
    "name": "totals", "handler": None, "events": ["insert", "update", "delete"],
    "source": {"keyspace": "shop", "table": "orders", "partition_key": ["order_id"], "clustering": [],
               "columns": {"order_id": "bigint", "customer_id": "bigint", "status": "text", "amount": "int",
                           "total": "bigint"}},
    "targets": [{
        "keyspace": "shop", "table": "async_members_totals", "partition_key": ["g0", "g1"], "clustering": ["k0"],
        "columns": {"g0": "source.customer_id", "g1": "source.status", "k0": "source.order_id",
                    "v0": "source.amount", "v1": "source.total"},
        "fanout": None, "mode": "lineage", "lineage_columns": ["customer_id", "status"],
        "aggregate": {"keyspace": "shop", "table": "totals", "partition_key": ["customer_id"], "clustering": ["status"],
                      "group": {"customer_id": "g0", "status": "g1"}, "count": "orders",
                      "sum": {"amount": "v0", "grand": "v1"}, "min": {"smallest": "v0"}, "max": {"largest": "v0"}},
    }],
}
COLUMNS = ["customer_id", "status", "orders", "amount", "grand", "smallest", "largest"]


@pytest.fixture(scope="module")
def orders(spark):
    return spark.createDataFrame([
        (1, 10, "open", 5, 2**62), (2, 10, "open", 7, 2**62), (3, 10, "open", None, None),
        (4, 10, "done", -2, 1), (5, 11, "open", None, None),
        (6, None, "open", 9, 9), (7, 12, "", 9, 9),            # no group: a null or empty group value
    ], "order_id long, customer_id long, status string, amount int, total long")


def test_should_total_every_group_leaving_nulls_out(spark, orders):
    [table] = derive.aggregate_tables(FlowSpec.parse(SPEC)).values()
    rows = derive.aggregate_rows(table, orders, {})
    assert rows.columns == COLUMNS
    assert_same_rows(rows, [
        (10, "open", 3, 12, Decimal(2**63), 5, 7),
        (10, "done", 1, -2, Decimal(1), -2, -2),
        (11, "open", 1, None, None, None, None),
    ])


def test_should_compare_an_aggregate_table_key_by_key(spark, orders):
    found = spark.createDataFrame([
        (10, "open", 3, 12, Decimal(2**63), 5, 7),
        (10, "done", 2, -2, Decimal(1), -2, -2),        # a wrong count
        (13, "open", 1, 1, Decimal(1), 1, 1),           # a group without rows
    ], "customer_id long, status string, orders long, amount long, grand decimal(38,0), smallest int, largest int")
    results = verify.verify_frames(SPEC, orders, {}, {"shop.totals": found,
                                                      "shop.async_members_totals": _members(spark)})
    totals = next(r for r in results if r.table == "shop.totals")
    assert (totals.present, totals.missing, totals.unexpected, totals.wrong_value) == (1, 1, 1, 1)


def _members(spark):
    return spark.createDataFrame([
        (10, "open", 1, 5, 2**62), (10, "open", 2, 7, 2**62), (10, "open", 3, None, None), (10, "done", 4, -2, 1),
        (11, "open", 5, None, None)], "g0 long, g1 string, k0 long, v0 int, v1 long")


def test_should_list_an_aggregate_table_among_the_tables_a_flow_writes():
    spec = FlowSpec.parse(SPEC)
    groups = derive.targets_by_table(spec)
    assert list(groups) == ["shop.async_members_totals", "shop.totals"]
    assert derive.compared_columns(groups["shop.totals"]) == COLUMNS
    assert derive.trace_columns(spec, groups["shop.totals"]) is None
