"""async_triggers.spark_jobs.verify: expected rows derived from a flow specification, and their comparison with a table.

Expected rows are written out by hand here, never computed by the code under test."""
from __future__ import annotations

import copy

import pytest

from spark_helpers import assert_same_rows  # noqa: E402
from async_triggers.spark_jobs import verify  # noqa: E402
from async_triggers.spark_jobs.errors import VerifyError  # noqa: E402


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


def test_direct_target_maps_source_columns(tweets, followers):
    out = verify.expected_rows(only_target(TIMELINE, 0), tweets, {})
    assert list(out) == ["twitter.timeline"]
    assert out["twitter.timeline"].columns == TIMELINE_COLS
    assert_same_rows(out["twitter.timeline"], OWN_ROWS)


def test_fanout_target_joins_source_with_fanout_table_on_match(tweets, followers):
    out = verify.expected_rows(only_target(TIMELINE, 1), tweets, {"twitter.followers": followers})
    assert_same_rows(out["twitter.timeline"], FOLLOWER_ROWS)


def test_targets_writing_the_same_table_are_unioned(tweets, followers):
    out = verify.expected_rows(TIMELINE, tweets, {"twitter.followers": followers})
    assert list(out) == ["twitter.timeline"]
    assert_same_rows(out["twitter.timeline"], OWN_ROWS + FOLLOWER_ROWS)


def test_fanout_without_its_table_is_an_error(tweets):
    with pytest.raises(VerifyError, match="twitter.followers"):
        verify.expected_rows(TIMELINE, tweets, {})


def test_handler_flow_cannot_be_verified(tweets):
    spec = dict(TIMELINE, handler="com.example.MyHandler", targets=[])
    with pytest.raises(VerifyError, match="com.example.MyHandler"):
        verify.expected_rows(spec, tweets, {})


def test_columns_read_from_each_table():
    assert verify.source_columns(TIMELINE) == ["author_id", "tweet_id", "body"]
    assert dict(verify.fanout_columns(TIMELINE)) == {"twitter.followers": ["user_id", "follower_id"]}


def test_complete_table_has_nothing_missing_or_unexpected(spark, tweets, followers):
    # the actual table also holds a column the flow does not write: it is ignored
    actual = spark.createDataFrame([r + ("x",) for r in OWN_ROWS + FOLLOWER_ROWS],
                                   "user_id long, tweet_id string, author_id long, body string, extra string")
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert (r.table, r.expected, r.present, r.missing, r.unexpected, r.wrong_value) == \
           ("twitter.timeline", 6, 6, 0, 0, 0)
    assert r.ok and r.key_columns == ("user_id", "tweet_id")


def test_missing_rows_are_counted_and_sampled_by_key(spark, tweets, followers):
    actual = timeline_df(spark, [OWN_ROWS[0], OWN_ROWS[2], FOLLOWER_ROWS[0]])
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert (r.expected, r.present, r.missing, r.unexpected, r.wrong_value) == (6, 3, 3, 0, 0)
    assert not r.ok
    assert list(r.missing_sample) == [{"user_id": 2, "tweet_id": "t2"}, {"user_id": 10, "tweet_id": "t2"},
                                      {"user_id": 11, "tweet_id": "t1"}]


def test_wrong_value_counts_as_missing_and_unexpected(spark, tweets, followers):
    stale = (11, "t1", 1, "hello (before the edit)")
    actual = timeline_df(spark, OWN_ROWS + FOLLOWER_ROWS[:1] + FOLLOWER_ROWS[2:] + [stale])
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert (r.expected, r.present, r.missing, r.unexpected, r.wrong_value) == (6, 5, 1, 1, 1)
    assert list(r.missing_sample) == [{"user_id": 11, "tweet_id": "t1"}]
    assert list(r.unexpected_sample) == [{"user_id": 11, "tweet_id": "t1"}]


def test_rows_the_flow_would_not_produce_are_unexpected(spark, tweets, followers):
    # follower 12 follows user 4, who never tweeted t1: a row the flow cannot have written
    actual = timeline_df(spark, OWN_ROWS + FOLLOWER_ROWS + [(12, "t1", 1, "hello")])
    [r] = verify.verify_frames(TIMELINE, tweets, {"twitter.followers": followers}, {"twitter.timeline": actual})
    assert (r.expected, r.present, r.missing, r.unexpected, r.wrong_value) == (6, 6, 0, 1, 0)
    assert r.ok  # unexpected rows are reported, but only missing ones fail a verification
    assert list(r.unexpected_sample) == [{"user_id": 12, "tweet_id": "t1"}]


def test_null_value_matches_null_in_the_table(spark, tweets):
    spec = only_target(TIMELINE, 0)
    [r] = verify.verify_frames(spec, tweets, {}, {"twitter.timeline": timeline_df(spark, OWN_ROWS)})
    assert (r.present, r.missing) == (3, 0)
    with_value = timeline_df(spark, OWN_ROWS[:2] + [(3, "t3", 3, "not null")])
    [r] = verify.verify_frames(spec, tweets, {}, {"twitter.timeline": with_value})
    assert (r.present, r.missing, r.unexpected, r.wrong_value) == (2, 1, 1, 1)


def test_lineage_expects_one_row_per_source_row_with_a_key(spark):
    users = spark.createDataFrame([("u1", "ada", "ada@x"), ("u2", "bob", None), ("u3", None, "anon@x")],
                                  "user_id string, name string, email string")
    out = verify.expected_rows(USERS_BY_NAME, users, {})
    # u3 has no name: no index row; columns in key order, then values
    assert out["app.users_by_name"].columns == ["name", "user_id", "email"]
    assert_same_rows(out["app.users_by_name"], [("ada", "u1", "ada@x"), ("bob", "u2", None)])

    # ada renamed herself from "ad": the row of her former name must be gone
    actual = spark.createDataFrame([("ada", "u1", "ada@x"), ("ad", "u1", "ada@x"), ("bob", "u2", None)],
                                   "name string, user_id string, email string")
    [r] = verify.verify_frames(USERS_BY_NAME, users, {}, {"app.users_by_name": actual})
    assert (r.table, r.expected, r.present, r.missing, r.unexpected, r.wrong_value) == \
           ("app.users_by_name", 2, 2, 0, 1, 0)
    assert list(r.unexpected_sample) == [{"name": "ad", "user_id": "u1"}]


def test_compare_needs_the_compared_columns_in_the_table(spark, tweets):
    exp = verify.expected_rows(only_target(TIMELINE, 0), tweets, {})["twitter.timeline"]
    actual = spark.createDataFrame([(1, "t1")], "user_id long, tweet_id string")
    with pytest.raises(VerifyError, match="author_id, body"):
        verify.compare(exp, actual, ["user_id", "tweet_id"], table="twitter.timeline")


def test_report_names_counts_and_missing_keys():
    r = verify.Result("twitter.timeline", ("user_id", "tweet_id"), expected=6, present=5, missing=1, unexpected=0,
                      missing_sample=({"user_id": 11, "tweet_id": "t1"},))
    text = verify.format_report("twitter_timeline", [r])
    assert "twitter.timeline" in text and "user_id=11, tweet_id=t1" in text
    assert text.splitlines()[-1] == "FAILED: 1 missing row(s)"


@pytest.mark.parametrize("missing, code", [(0, 0), (2, 1)])
def test_main_exit_code_says_whether_rows_are_missing(spark, tmp_path, monkeypatch, capsys, missing, code):
    import json

    from async_triggers.spark_jobs import session

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(TIMELINE))
    result = verify.Result("twitter.timeline", ("user_id", "tweet_id"), expected=6, present=6 - missing,
                           missing=missing, unexpected=0)
    monkeypatch.setattr(session, "build_session", lambda **kw: spark)  # no connector, no Cassandra
    monkeypatch.setattr(verify, "verify_with_session", lambda s, spec: [result])
    assert verify.main(["--spec", str(spec_file), "--json"]) == code
    [line] = capsys.readouterr().out.splitlines()
    [table] = json.loads(line)
    assert (table["flow"], table["table"], table["missing"]) == ("twitter_timeline", "twitter.timeline", missing)


def test_main_reports_an_unreadable_spec(tmp_path, capsys):
    assert verify.main(["--spec", str(tmp_path / "absent.json")]) == 2
    assert "cannot read the specification" in capsys.readouterr().err


@pytest.mark.parametrize("golden, source_cols, fanouts, compared", [
    ("twitter_timeline.json", {"tweet_id", "author_id", "body"}, {"twitter.followers": {"user_id", "follower_id"}},
     {"twitter.timeline": ["user_id", "tweet_id", "author_id", "body"]}),
    ("users_by_name.json", {"user_id", "name", "email"}, {}, {"app.users_by_name": ["name", "user_id", "email"]}),
])
def test_specs_rendered_by_the_control_plane_are_understood(golden, source_cols, fanouts, compared):
    import json
    from pathlib import Path

    spec = json.loads((Path(__file__).resolve().parents[1] / "golden" / golden).read_text())
    assert set(verify.source_columns(spec)) == source_cols
    assert {k: set(v) for k, v in verify.fanout_columns(spec).items()} == fanouts
    assert {k: verify.compared_columns(g) for k, g in verify.targets_by_table(spec).items()} == compared
