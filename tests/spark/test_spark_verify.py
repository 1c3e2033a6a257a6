"""async_triggers.spark_jobs.verify: expected rows derived from a flow specification, and their comparison with a
table, key by key: present, missing, unexpected, wrong value; any column names.

Expected rows are written out by hand here, never computed by the code under test."""
from __future__ import annotations

import copy

import pytest

from spark_helpers import assert_same_rows  # noqa: E402
from async_triggers.spark_jobs import verify  # noqa: E402
from async_triggers.spark_jobs.errors import VerifyError  # noqa: E402
from async_triggers.spec import FlowSpec  # noqa: E402
TIMELINE = {
    "name": "twitter_timeline",
    "source": {"keyspace": "twitter", "table": "tweets", "partition_key": ["tweet_id"], "clustering": [],
               "columns": {"tweet_id": "uuid", "author_id": "bigint", "body": "text"}},
    "events": ["insert", "update", "delete"],
    "read_consistency": "ONE", "write_consistency": "ONE",
    "queue": {"capacity": 10000, "workers": 2}, "page_size": 500, "handler": None,
    "targets": [
        {"keyspace": "twitter", "table": "timeline", "partition_key": ["user_id"], "clustering": ["tweet_id"],
         "columns": {"user_id": "source.author_id", "tweet_id": "source.tweet_id",
                     "author_id": "source.author_id", "body": "source.body"},
         "fanout": None, "mode": "direct"},
        {"keyspace": "twitter", "table": "timeline", "partition_key": ["user_id"], "clustering": ["tweet_id"],
         "columns": {"user_id": "row.follower_id", "tweet_id": "source.tweet_id",
                     "author_id": "source.author_id", "body": "source.body"},
         "fanout": {"keyspace": "twitter", "table": "followers", "match": {"user_id": "source.author_id"},
                    "columns": ["follower_id"]},
         "mode": "direct"},
    ],
}

USERS_BY_NAME = {
    "name": "users_by_name",
    "source": {"keyspace": "app", "table": "users", "partition_key": ["user_id"], "clustering": [],
               "columns": {"user_id": "uuid", "name": "text", "email": "text"}},
    "events": ["insert", "update", "delete"], "handler": None,
    "targets": [
        {"keyspace": "app", "table": "users_by_name", "partition_key": ["name"], "clustering": ["user_id"],
         "columns": {"name": "source.name", "user_id": "source.user_id", "email": "source.email"},
         "fanout": None, "mode": "lineage"},
    ],
}

TIMELINE_COLS = ["user_id", "tweet_id", "author_id", "body"]

# user 1 has followers 10 and 11, user 2 has follower 10, user 3 has none; user 4 follows... nobody tweets
OWN_ROWS = [(1, "t1", 1, "hello"), (2, "t2", 2, "hi"), (3, "t3", 3, None)]
FOLLOWER_ROWS = [(10, "t1", 1, "hello"), (11, "t1", 1, "hello"), (10, "t2", 2, "hi")]


@pytest.fixture(scope="module")
def tweets(spark):
    return spark.createDataFrame([("t1", 1, "hello"), ("t2", 2, "hi"), ("t3", 3, None)],
                                 "tweet_id string, author_id long, body string")


@pytest.fixture(scope="module")
def followers(spark):
    return spark.createDataFrame([(1, 10), (1, 11), (2, 10), (4, 12)], "user_id long, follower_id long")


def only_target(spec, index):
    s = copy.deepcopy(spec)
    s["targets"] = [s["targets"][index]]
    return s


def timeline_df(spark, rows):
    return spark.createDataFrame(rows, "user_id long, tweet_id string, author_id long, body string")


def counts(r):
    return r.expected, r.present, r.missing, r.unexpected, r.wrong_value


# --- what a flow derives ---------------------------------------------------------------------------------------

def test_should_map_source_columns_into_a_direct_target(tweets, followers):
    out = verify.expected_rows(FlowSpec.parse(only_target(TIMELINE, 0)), tweets, {})
    assert list(out) == ["twitter.timeline"]
    assert out["twitter.timeline"].columns == TIMELINE_COLS
    assert_same_rows(out["twitter.timeline"], OWN_ROWS)


def test_should_join_the_source_with_the_fanout_table_on_match(tweets, followers):
    out = verify.expected_rows(FlowSpec.parse(only_target(TIMELINE, 1)), tweets, {"twitter.followers": followers})
    assert_same_rows(out["twitter.timeline"], FOLLOWER_ROWS)


def test_should_union_the_targets_writing_the_same_table(tweets, followers):
    out = verify.expected_rows(FlowSpec.parse(TIMELINE), tweets, {"twitter.followers": followers})
    assert list(out) == ["twitter.timeline"]
    assert_same_rows(out["twitter.timeline"], OWN_ROWS + FOLLOWER_ROWS)


def test_should_refuse_a_fanout_without_its_table(tweets):
    with pytest.raises(VerifyError, match="twitter.followers"):
        verify.expected_rows(FlowSpec.parse(TIMELINE), tweets, {})


def test_should_refuse_a_handler_flow(tweets):
    spec = dict(TIMELINE, handler="com.example.MyHandler", targets=[])
    with pytest.raises(VerifyError, match="com.example.MyHandler"):
        verify.expected_rows(FlowSpec.parse(spec), tweets, {})


def test_should_name_a_column_the_source_lacks(spark):
    spec = only_target(TIMELINE, 0)
    no_body = spark.createDataFrame([("t1", 1)], "tweet_id string, author_id long")
    with pytest.raises(VerifyError, match="the source has no column 'body'"):
        verify.expected_rows(FlowSpec.parse(spec), no_body, {})


def test_should_list_the_columns_read_from_each_table():
    assert verify.source_columns(FlowSpec.parse(TIMELINE)) == ["author_id", "tweet_id", "body"]
    assert dict(verify.fanout_columns(FlowSpec.parse(TIMELINE))) == {"twitter.followers": ["user_id", "follower_id"]}


# --- the comparison --------------------------------------------------------------------------------------------

def test_should_find_nothing_wrong_in_a_complete_table(spark, tweets, followers):
    # the actual table also holds a column the flow does not write: it is ignored
    actual = spark.createDataFrame([r + ("x",) for r in OWN_ROWS + FOLLOWER_ROWS],
                                   "user_id long, tweet_id string, author_id long, body string, extra string")
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert (r.table, *counts(r)) == ("twitter.timeline", 6, 6, 0, 0, 0)
    assert r.ok and r.key_columns == ("user_id", "tweet_id")
    assert (r.missing_sample, r.unexpected_sample, r.wrong_value_sample) == ((), (), ())


def test_should_count_missing_rows_and_sample_the_expected_rows(spark, tweets, followers):
    actual = timeline_df(spark, [OWN_ROWS[0], OWN_ROWS[2], FOLLOWER_ROWS[0]])
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert counts(r) == (6, 3, 3, 0, 0)
    assert not r.ok
    assert list(r.missing_sample) == [
        {"user_id": 2, "tweet_id": "t2", "author_id": 2, "body": "hi"},
        {"user_id": 10, "tweet_id": "t2", "author_id": 2, "body": "hi"},
        {"user_id": 11, "tweet_id": "t1", "author_id": 1, "body": "hello"}]


def test_should_count_a_wrong_value_once_and_show_both_values(spark, tweets, followers):
    stale = (11, "t1", 1, "hello (before the edit)")
    actual = timeline_df(spark, OWN_ROWS + FOLLOWER_ROWS[:1] + FOLLOWER_ROWS[2:] + [stale])
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert counts(r) == (6, 5, 0, 0, 1)
    assert not r.ok
    assert list(r.wrong_value_sample) == [{
        "key": {"user_id": 11, "tweet_id": "t1"}, "expected": {"author_id": 1, "body": "hello"},
        "found": {"author_id": 1, "body": "hello (before the edit)"}, "columns": ["body"]}]
    assert (r.missing_sample, r.unexpected_sample) == ((), ())


def test_should_fail_on_a_row_the_flow_would_not_produce(spark, tweets, followers):
    # follower 12 follows user 4, who never tweeted t1: a row the flow cannot have written
    actual = timeline_df(spark, OWN_ROWS + FOLLOWER_ROWS + [(12, "t1", 1, "hello")])
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert counts(r) == (6, 6, 0, 1, 0)
    assert not r.ok
    assert list(r.unexpected_sample) == [{"user_id": 12, "tweet_id": "t1", "author_id": 1, "body": "hello"}]


def test_should_match_a_null_value_with_null_and_not_with_a_value(spark, tweets):
    spec = only_target(TIMELINE, 0)
    [r] = verify.verify_frames(spec, tweets, {}, {"twitter.timeline": timeline_df(spark, OWN_ROWS)})
    assert counts(r) == (3, 3, 0, 0, 0)
    with_value = timeline_df(spark, OWN_ROWS[:2] + [(3, "t3", 3, "not null")])
    [r] = verify.verify_frames(spec, tweets, {}, {"twitter.timeline": with_value})
    assert counts(r) == (3, 2, 0, 0, 1)
    assert r.wrong_value_sample[0]["columns"] == ["body"]


def test_should_expect_one_index_row_per_source_row_with_a_key_and_no_row_of_a_former_name(spark):
    users = spark.createDataFrame([("u1", "ada", "ada@x"), ("u2", "bob", None), ("u3", None, "anon@x")],
                                  "user_id string, name string, email string")
    out = verify.expected_rows(FlowSpec.parse(USERS_BY_NAME), users, {})
    # u3 has no name: no index row; columns in key order, then values
    assert out["app.users_by_name"].columns == ["name", "user_id", "email"]
    assert_same_rows(out["app.users_by_name"], [("ada", "u1", "ada@x"), ("bob", "u2", None)])

    # ada renamed herself from "ad": the row of her former name must be gone
    actual = spark.createDataFrame([("ada", "u1", "ada@x"), ("ad", "u1", "ada@x"), ("bob", "u2", None)],
                                   "name string, user_id string, email string")
    [r] = verify.verify_frames(USERS_BY_NAME, users, {}, {"app.users_by_name": actual})
    assert (r.table, *counts(r)) == ("app.users_by_name", 2, 2, 0, 1, 0)
    assert list(r.unexpected_sample) == [{"name": "ad", "user_id": "u1", "email": "ada@x"}]


def test_should_expect_no_row_where_a_partition_key_value_is_empty(spark):
    # Cassandra refuses an empty partition key: a user named '' has no index row, as one without a name
    users = spark.createDataFrame([("u1", "ada", "ada@x"), ("u2", "", "b@x")], "user_id string, name string, email string")
    out = verify.expected_rows(FlowSpec.parse(USERS_BY_NAME), users, {})
    assert_same_rows(out["app.users_by_name"], [("ada", "u1", "ada@x")])
    # an empty clustering value is a key like any other
    by_id = copy.deepcopy(USERS_BY_NAME)
    by_id["targets"][0].update(partition_key=["user_id"], clustering=["name"])
    assert_same_rows(verify.expected_rows(FlowSpec.parse(by_id), users, {})["app.users_by_name"],
                     [("u1", "ada", "ada@x"), ("u2", "", "b@x")])


def test_should_accept_any_of_the_values_several_source_rows_derive_for_one_key(spark):
    # the latest tweet per author: two tweets of author 1 write the same row, whichever was written last stays
    spec = {"name": "latest", "source": TIMELINE["source"], "handler": None, "targets": [
        {"keyspace": "twitter", "table": "latest", "partition_key": ["author_id"], "clustering": [],
         "columns": {"author_id": "source.author_id", "body": "source.body"}, "fanout": None, "mode": "direct"}]}
    tweets = spark.createDataFrame([("t1", 1, "first"), ("t2", 1, "second")],
                                   "tweet_id string, author_id long, body string")
    for body, expected in (("first", (1, 1, 0, 0, 0)), ("second", (1, 1, 0, 0, 0)), ("third", (1, 0, 0, 0, 1))):
        actual = spark.createDataFrame([(1, body)], "author_id long, body string")
        [r] = verify.verify_frames(spec, tweets, {}, {"twitter.latest": actual})
        assert counts(r) == expected, body


def test_should_name_the_compared_columns_a_table_lacks(spark, tweets):
    exp = verify.expected_rows(FlowSpec.parse(only_target(TIMELINE, 0)), tweets, {})["twitter.timeline"]
    actual = spark.createDataFrame([(1, "t1")], "user_id long, tweet_id string")
    with pytest.raises(VerifyError, match="author_id, body"):
        verify.compare(exp, actual, ["user_id", "tweet_id"], table="twitter.timeline")


@pytest.mark.parametrize("golden, source_cols, fanouts, compared", [
    # the example's fan-out follows its table: its join index (author, tweet, body) is a target too
    ("twitter_timeline.json", {"tweet_id", "author_id", "body"}, {"twitter.followers": {"user_id", "follower_id"}},
     {"twitter.timeline": ["user_id", "tweet_id", "author_id", "body"],
      "twitter.async_join_twitter_timeline": ["m0", "k0", "v0"]}),
    ("users_by_name.json", {"user_id", "name", "email"}, {}, {"app.users_by_name": ["name", "user_id", "email"]}),
])
def test_should_understand_the_specs_the_control_plane_renders(golden, source_cols, fanouts, compared):
    import json
    from pathlib import Path

    spec = json.loads((Path(__file__).resolve().parents[1] / "golden" / golden).read_text())
    assert set(verify.source_columns(FlowSpec.parse(spec))) == source_cols
    assert {k: set(v) for k, v in verify.fanout_columns(FlowSpec.parse(spec)).items()} == fanouts
    assert {k: verify.compared_columns(g) for k, g in verify.targets_by_table(FlowSpec.parse(spec)).items()} == compared


# --- any column names: a verdict, never Spark's AMBIGUOUS_REFERENCE --------------------------------------------

ORDERS_BY_STATUS = {
    "name": "orders_by_status",
    "source": {"keyspace": "shop", "table": "orders", "partition_key": ["tenant"], "clustering": ["order_id"],
               "columns": {"tenant": "int", "order_id": "int", "status": "text", "total": "int"}},
    "events": ["insert", "update", "delete"], "handler": None,
    "targets": [
        {"keyspace": "shop", "table": "orders_by_status", "partition_key": ["status"],
         "clustering": ["tenant", "order_id"],
         "columns": {"status": "source.status", "tenant": "source.tenant", "order_id": "source.order_id",
                     "total": "source.total"},
         "fanout": None, "mode": "lineage", "lineage_columns": ["status"]},
    ],
}
# a cascade from it: the index's rows are the next flow's source; its target repeats the names once more
STATUS_TOTALS = {
    "name": "status_totals",
    "source": {"keyspace": "shop", "table": "orders_by_status", "partition_key": ["status"],
               "clustering": ["tenant", "order_id"],
               "columns": {"status": "text", "tenant": "int", "order_id": "int", "total": "int"}},
    "events": ["insert", "update", "delete"], "handler": None,
    "targets": [
        {"keyspace": "shop", "table": "by_total", "partition_key": ["total"], "clustering": ["status", "order_id"],
         "columns": {"total": "source.total", "status": "source.status", "order_id": "source.order_id",
                     "tenant": "source.tenant"},
         "fanout": None, "mode": "lineage", "lineage_columns": ["total"]},
    ],
}
ORDERS = [(1, 1, "open", 10), (1, 2, "paid", 20)]


@pytest.fixture(scope="module")
def orders(spark):
    return spark.createDataFrame(ORDERS, "tenant int, order_id int, status string, total int")


def by_status(spark, rows):
    return spark.createDataFrame(rows, "status string, tenant int, order_id int, total int")


def test_should_give_a_verdict_when_a_target_column_is_named_like_a_source_column(spark, orders):
    actual = by_status(spark, [("open", 1, 1, 10), ("paid", 1, 2, 20)])
    [r] = verify.verify_frames(ORDERS_BY_STATUS, orders, {}, {"shop.orders_by_status": actual})
    assert counts(r) == (2, 2, 0, 0, 0) and r.ok


def test_should_fail_on_an_unexpected_row_or_a_wrong_value_and_count_a_wrong_value_once(spark, orders):
    actual = by_status(spark, [("open", 1, 1, 11), ("paid", 1, 2, 20), ("paid", 1, 3, 30)])
    [r] = verify.verify_frames(ORDERS_BY_STATUS, orders, {}, {"shop.orders_by_status": actual})
    assert counts(r) == (2, 1, 0, 1, 1)
    assert not r.ok
    assert r.unexpected_sample == ({"status": "paid", "tenant": 1, "order_id": 3, "total": 30},)
    assert r.wrong_value_sample[0]["key"] == {"status": "open", "tenant": 1, "order_id": 1}


def test_should_verify_both_flows_of_a_cascade(spark):
    index = by_status(spark, [("open", 1, 1, 10), ("paid", 1, 2, 20)])   # flow 1's target, flow 2's source
    by_total = spark.createDataFrame([(10, "open", 1, 1), (20, "paid", 2, 2)],
                                     "total int, status string, order_id int, tenant int")
    [r] = verify.verify_frames(STATUS_TOTALS, index, {}, {"shop.by_total": by_total})
    assert counts(r) == (2, 1, 0, 0, 1)
    assert r.wrong_value_sample[0] == {"key": {"total": 20, "status": "paid", "order_id": 2},
                                       "expected": {"tenant": 1}, "found": {"tenant": 2}, "columns": ["tenant"]}
    # the same DataFrame as flow 1's actual table and flow 2's source
    [r1] = verify.verify_frames(ORDERS_BY_STATUS, spark.createDataFrame(ORDERS, "tenant int, order_id int, "
                                                                                "status string, total int"),
                                {}, {"shop.orders_by_status": index})
    assert r1.ok


def test_should_keep_a_fanout_column_named_like_a_source_column_apart(spark):
    # the source names its author user_id, as the fan-out table names the followed user; the target's user_id is
    # the follower
    spec = {"name": "feed", "handler": None,
            "source": {"keyspace": "t", "table": "posts", "partition_key": ["post_id"], "clustering": [],
                       "columns": {"post_id": "int", "user_id": "int", "body": "text"}},
            "targets": [{"keyspace": "t", "table": "feed", "partition_key": ["user_id"], "clustering": ["post_id"],
                         "columns": {"user_id": "row.follower_id", "post_id": "source.post_id",
                                     "author": "source.user_id", "body": "source.body"},
                         "fanout": {"keyspace": "t", "table": "followers", "match": {"user_id": "source.user_id"},
                                    "columns": ["follower_id"]}, "mode": "direct"}]}
    posts = spark.createDataFrame([(1, 7, "x")], "post_id int, user_id int, body string")
    followers = spark.createDataFrame([(7, 70), (7, 71), (8, 80)], "user_id int, follower_id int")
    actual = spark.createDataFrame([(70, 1, 7, "x"), (80, 1, 7, "x")],
                                   "user_id int, post_id int, author int, body string")
    [r] = verify.verify_frames(spec, posts, {"t.followers": followers}, {"t.feed": actual})
    assert counts(r) == (2, 1, 1, 1, 0)
    assert r.missing_sample == ({"user_id": 71, "post_id": 1, "author": 7, "body": "x"},)


def test_should_compare_composite_partition_keys(spark):
    spec = {"name": "events_by_day", "handler": None,
            "source": {"keyspace": "t", "table": "events", "partition_key": ["site", "day"], "clustering": ["seq"],
                       "columns": {"site": "text", "day": "int", "seq": "int", "kind": "text"}},
            "targets": [{"keyspace": "t", "table": "by_kind", "partition_key": ["kind", "day"],
                         "clustering": ["site", "seq"],
                         "columns": {"kind": "source.kind", "day": "source.day", "site": "source.site",
                                     "seq": "source.seq"}, "fanout": None, "mode": "lineage",
                         "lineage_columns": ["kind"]}]}
    events = spark.createDataFrame([("a", 1, 1, "click"), ("a", 1, 2, "view"), ("b", 1, 1, "click")],
                                   "site string, day int, seq int, kind string")
    actual = spark.createDataFrame([("click", 1, "a", 1), ("click", 1, "b", 1), ("click", 1, "a", 2)],
                                   "kind string, day int, site string, seq int")
    [r] = verify.verify_frames(spec, events, {}, {"t.by_kind": actual})
    assert counts(r) == (3, 2, 1, 1, 0)
    assert r.key_columns == ("kind", "day", "site", "seq")
    assert r.missing_sample == ({"kind": "view", "day": 1, "site": "a", "seq": 2},)


def test_should_read_static_source_columns_into_every_row_of_their_partition(spark):
    # the source's "owner" is static: one value per partition; a partition with no row (its clustering column null)
    # derives nothing
    spec = {"name": "items_by_owner", "handler": None,
            "source": {"keyspace": "t", "table": "lists", "partition_key": ["list_id"], "clustering": ["item"],
                       "columns": {"list_id": "int", "item": "text", "owner": "text", "qty": "int"}},
            "targets": [{"keyspace": "t", "table": "by_owner", "partition_key": ["owner"],
                         "clustering": ["list_id", "item"],
                         "columns": {"owner": "source.owner", "list_id": "source.list_id", "item": "source.item",
                                     "qty": "source.qty"}, "fanout": None, "mode": "lineage",
                         "lineage_columns": ["owner"]}]}
    lists = spark.createDataFrame([(1, "egg", "ann", 6), (1, "milk", "ann", 1), (2, None, "bob", None)],
                                  "list_id int, item string, owner string, qty int")
    actual = spark.createDataFrame([("ann", 1, "egg", 6), ("ann", 1, "milk", 2)],
                                   "owner string, list_id int, item string, qty int")
    [r] = verify.verify_frames(spec, lists, {}, {"t.by_owner": actual})
    assert counts(r) == (2, 1, 0, 0, 1)


def test_should_handle_quoted_names_with_dots_spaces_and_differing_only_in_case(spark):
    # CQL's quoted names: "Status" and "status" are two columns; Spark would resolve them as one
    spec = {"name": "quoted", "handler": None,
            "source": {"keyspace": "t", "table": "src", "partition_key": ["Order Id"], "clustering": [],
                       "columns": {"Order Id": "int", "Status": "text", "status": "text", "a.b": "int"}},
            "targets": [{"keyspace": "t", "table": "dst", "partition_key": ["status"], "clustering": ["Order Id"],
                         "columns": {"status": "source.Status", "Order Id": "source.Order Id",
                                     "Status": "source.status", "a.b": "source.a.b"},
                         "fanout": None, "mode": "lineage", "lineage_columns": ["Status"]}]}
    src = spark.createDataFrame([(1, "OPEN", "lower", 5), (2, "PAID", "low", 6)],
                                "`Order Id` int, Status string, status string, `a.b` int")
    actual = spark.createDataFrame([("OPEN", 1, "lower", 5), ("PAID", 2, "LOW", 6)],
                                   "status string, `Order Id` int, Status string, `a.b` int")
    [r] = verify.verify_frames(spec, src, {}, {"t.dst": actual})
    assert counts(r) == (2, 1, 0, 0, 1)
    assert r.wrong_value_sample == ({"key": {"status": "PAID", "Order Id": 2}, "expected": {"Status": "low", "a.b": 6},
                                     "found": {"Status": "LOW", "a.b": 6}, "columns": ["Status"]},)


def test_should_compare_map_columns_whatever_the_order_of_their_entries(spark):
    spec = copy.deepcopy(USERS_BY_NAME)
    spec["source"]["columns"]["attrs"] = "map<text, int>"
    spec["targets"][0]["columns"]["attrs"] = "source.attrs"
    users = spark.createDataFrame([("u1", "ada", "a@x", {"x": 1, "y": 2}), ("u1", "ada", "a@x", {"y": 2, "x": 1}),
                                   ("u2", "bob", "b@x", None)],
                                  "user_id string, name string, email string, attrs map<string, int>")
    actual = spark.createDataFrame([("ada", "u1", "a@x", {"y": 2, "x": 1}), ("bob", "u2", "b@x", {"z": 3})],
                                   "name string, user_id string, email string, attrs map<string, int>")
    [r] = verify.verify_frames(spec, users, {}, {"app.users_by_name": actual})
    assert (r.table, *counts(r)) == ("app.users_by_name", 2, 1, 0, 0, 1)
    assert r.wrong_value_sample[0]["columns"] == ["attrs"]
