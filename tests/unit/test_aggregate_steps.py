"""Aggregate steps: what they compile to (a members target the plugin recomputes totals from), the members table the
deploy creates, and every shape that could not be exact refused with a message naming the flow and the culprit."""
import pytest

from async_triggers import aggregates, render, schema, validate
from async_triggers.errors import ValidationError
from async_triggers.flows import Aggregate, Flow, Write, source

ORDERS = schema.TableSchema("shop", "orders", ("order_id",), (),
                            {"order_id": "bigint", "customer_id": "bigint", "status": "text", "amount": "int",
                             "price": "double", "total": "bigint", "note": "blob", "placed": "timestamp"})
TOTALS = schema.TableSchema("shop", "totals", ("customer_id",), ("status",),
                            {"customer_id": "bigint", "status": "text", "orders": "bigint", "amount": "bigint",
                             "smallest": "int", "largest": "int", "small": "int", "price": "double",
                             "grand": "varint", "big": "bigint", "first_placed": "timestamp", "note": "blob"})
SCHEMA = schema.of(ORDERS, TOTALS)
GROUP = {"customer_id": source.customer_id, "status": source.status}


def flow(*steps, **options) -> Flow:
    return Flow(name="totals", source="shop.orders", steps=list(steps), **options)


def aggregate(**changes) -> Aggregate:
    fields = dict(group_by=GROUP, count="orders", sum={"amount": source.amount}, min={"smallest": source.amount},
                  max={"largest": source.amount})
    fields.update(changes)
    return Aggregate("shop.totals", **fields)


def rejects(f: Flow, message: str, schema_=SCHEMA):
    with pytest.raises(ValidationError) as e:
        validate.compile_all([f], schema_)
    assert str(e.value) == message


def test_should_compile_an_aggregate_into_a_members_target_grouped_by_the_aggregates_key():
    spec = validate.compile_flow(flow(aggregate()), SCHEMA)
    [members] = spec["targets"]
    assert members["table"] == "async_members_totals" and members["mode"] == "lineage"
    assert members["partition_key"] == ["g0", "g1"] and members["clustering"] == ["k0"]
    assert members["columns"] == {"g0": "source.customer_id", "g1": "source.status", "k0": "source.order_id",
                                  "v0": "source.amount"}
    assert members["lineage_columns"] == ["customer_id", "status"]
    assert members["aggregate"] == {"keyspace": "shop", "table": "totals", "partition_key": ["customer_id"],
                                    "clustering": ["status"], "group": {"customer_id": "g0", "status": "g1"},
                                    "count": "orders", "sum": {"amount": "v0"}, "min": {"smallest": "v0"},
                                    "max": {"largest": "v0"}}


def test_should_create_the_members_table_from_the_source_types():
    spec = validate.compile_flow(flow(aggregate()), SCHEMA)
    script = render.deploy_script([spec], 1, 1)
    assert ('CREATE TABLE IF NOT EXISTS "shop"."async_members_totals" (\n  "g0" bigint,\n  "g1" text,\n  "k0" bigint,\n'
            '  "v0" int,\n  PRIMARY KEY (("g0", "g1"), "k0"));') in script
    assert "-- flow totals: shop.orders -> shop.async_members_totals, shop.totals" in script


def test_should_refuse_a_second_flow_into_an_aggregate_table():
    other = Flow(name="again", source="shop.orders", steps=[aggregate()])
    with pytest.raises(ValidationError, match="'shop.async_members_totals' is also written by flow"):
        validate.compile_all([flow(aggregate()), other], SCHEMA)


@pytest.mark.parametrize("step, message", [
    (aggregate(group_by={"customer_id": source.customer_id}),
     "the aggregate into 'shop.totals' must group by exactly its primary key (customer_id, status), found: customer_id"),
    (aggregate(sum={"price": source.price}),
     "'source.price' (sum into column 'price' of 'shop.totals') is double: an aggregate sums tinyint, smallint, int, "
     "bigint, varint and decimal (a sum of float or double depends on the order of its additions: keep the values as "
     "decimal)"),
    (aggregate(sum={"big": source.total}),
     "column 'big' of 'shop.totals' is bigint, but a sum of bigint ('source.total') is kept in varint"),
    (aggregate(sum={"small": source.amount}),
     "column 'small' of 'shop.totals' is int, but a sum of int ('source.amount') is kept in bigint or varint"),
    (aggregate(min={"note": source.note}),
     "'source.note' (min into column 'note' of 'shop.totals') is blob: an aggregate takes the min of ascii, bigint, "
     "boolean, date, decimal, double, float, int, smallint, text, time, timestamp, tinyint, varint"),
    (aggregate(max={"big": source.amount}),
     "type mismatch for column 'big' of 'shop.totals': it is bigint, but the max of 'source.amount' is int"),
    (aggregate(count="small"),
     "the count column 'small' of 'shop.totals' is int: a count is kept in bigint or varint"),
    (aggregate(count="status"),
     "the count column 'status' of 'shop.totals' is a key column: the key is the group (group_by)"),
    (aggregate(count="nope"),
     "the count column 'nope' does not exist in aggregate table 'shop.totals' (columns: amount, big, customer_id, "
     "first_placed, grand, largest, note, orders, price, small, smallest, status)"),
    (aggregate(count=None, sum={}, min={}, max={}),
     "the aggregate into 'shop.totals' computes nothing: give count=, sum=, min= or max="),
    (aggregate(count="amount"),
     "the aggregate writes column 'amount' of 'shop.totals' twice"),
    (aggregate(sum={"amount": "amount"}),
     "sum into column 'amount' of 'shop.totals' must be source.<column>, found: 'amount'"),
    (aggregate(group_by={"customer_id": source.customer_id, "status": source.amount}),
     "type mismatch for column 'status' of 'shop.totals': it is text, but 'source.amount' is int"),
])
def test_should_refuse_what_could_not_be_exact(step, message):
    rejects(flow(step), f"flow 'totals': {message}")


def test_should_refuse_an_aggregate_of_a_flow_that_leaves_out_an_event():
    rejects(flow(aggregate(), events=("insert", "update")),
            "flow 'totals': the aggregate into 'shop.totals' needs every event: without delete its totals would count "
            "rows that changed or went")


def test_should_keep_sums_exact_in_their_types():
    spec = validate.compile_flow(flow(aggregate(sum={"grand": source.total, "amount": source.amount},
                                                min={"first_placed": source.placed}, max={})), SCHEMA)
    a = spec["targets"][0]["aggregate"]
    assert a["sum"] == {"grand": "v0", "amount": "v1"} and a["min"] == {"first_placed": "v2"}


def test_should_refuse_a_table_named_like_a_members_table():
    members = schema.TableSchema("shop", "async_members_x", ("k",), (), {"k": "bigint"})
    rejects(Flow(name="m", source="shop.orders", steps=[Write("shop.async_members_x", k=source.order_id)]),
            "flow 'm': target table 'shop.async_members_x' is named like an aggregate's members table: tables named "
            "'async_members_<table>' are reserved for the plugin", schema.of(ORDERS, members))


def test_should_refuse_an_existing_table_of_the_members_name_that_is_not_one():
    wrong = schema.TableSchema("shop", "async_members_totals", ("g0", "g1"), ("k0",),
                               {"g0": "bigint", "g1": "text", "k0": "bigint", "v0": "text"})
    with pytest.raises(ValidationError, match="exists but is not the members table"):
        validate.compile_all([flow(aggregate())], schema.of(ORDERS, TOTALS, wrong))
    right = schema.TableSchema("shop", "async_members_totals", ("g0", "g1"), ("k0",),
                               {"g0": "bigint", "g1": "text", "k0": "bigint", "v0": "int"})
    assert validate.compile_all([flow(aggregate())], schema.of(ORDERS, TOTALS, right))


def test_should_list_every_table_a_flow_writes():
    spec = validate.compile_flow(flow(aggregate()), SCHEMA)
    assert aggregates.written_tables(spec) == ["shop.async_members_totals", "shop.totals"]
