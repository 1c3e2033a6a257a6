"""What `ctl verify --repair` writes into the tables of a flow whose fan-out follows its table (spark_jobs/follows.py,
repair.py), on literal DataFrames: each target's rows at the plugin's stamp within their version, the following
fan-out's at its fan-out rows' change numbers over the copy, the newer stamp where two targets derive one key; and no
delete at the run's start in a table the following fan-out writes. Expected values are written by hand."""
from __future__ import annotations

from spark_helpers import assert_same_rows  # noqa: E402
from async_triggers.spark_jobs import backfill, compare, follows, repair  # noqa: E402
from async_triggers.spec import FlowSpec  # noqa: E402

WT, EXP, SPACING = backfill.WRITETIME, backfill.EXPIRES, follows.SPACING
LATER = 4_000_000_000   # an expiry in epoch seconds (2096)
SOURCE = {"keyspace": "tw", "table": "tweets", "partition_key": ["tweet_id"], "clustering": [],
          "columns": {"tweet_id": "bigint", "author_id": "bigint", "body": "text"}}
INDEX = {"keyspace": "tw", "table": "async_join_tl", "partition_key": ["m0"], "clustering": ["k0"],
         "columns": {"m0": "source.author_id", "k0": "source.tweet_id", "v0": "source.body"}, "fanout": None,
         "mode": "lineage", "lineage_columns": ["author_id"], "join_index": True}
OWN = {"keyspace": "tw", "table": "timeline", "partition_key": ["user_id"], "clustering": ["tweet_id"],
       "columns": {"user_id": "source.author_id", "tweet_id": "source.tweet_id", "body": "source.body"},
       "fanout": None, "mode": "lineage", "lineage_columns": ["author_id"]}
FOLLOWING = {**OWN, "columns": {"user_id": "row.follower_id", "tweet_id": "source.tweet_id", "body": "source.body"},
             "fanout": {"keyspace": "tw", "table": "followers", "match": {"user_id": "source.author_id"},
                        "columns": ["follower_id"],
                        "follow": {"index": 0, "keyspace": "tw", "table": "async_follows_tl"}}}
SPEC = {"name": "tl", "handler": None, "source": SOURCE, "targets": [INDEX, OWN, FOLLOWING]}
V = 3 * SPACING   # the version tweet 1's write time falls in


def test_should_write_each_target_at_its_stamp_and_a_follower_at_the_follows_change_number(spark, monkeypatch):
    part = spark.createDataFrame([(1, 5, "hi", V, 0), (2, 6, "yo", V + SPACING, LATER)],
                                 f"tweet_id long, author_id long, body string, {WT} long, {EXP} long")
    copy = spark.createDataFrame([(5, 7, 2, 0, None), (5, 5, 1, 0, None),   # 7 follows 5 (second change), 5 itself
                                  (5, 8, 4, 0, True),                       # 8 unfollowed 5: kept as gone
                                  (6, 9, 1, LATER - 100, None), (6, 10, 1, LATER + 100, None)],
                                 "user_id long, follower_id long, async_n long, async_expires long, async_gone boolean")
    monkeypatch.setattr(follows, "copy_frame", lambda spark, target: copy.where("async_gone is null or not async_gone"))
    timeline = follows.repair_rows(FlowSpec.parse(SPEC), "tw.timeline", part, {}, WT, EXP)
    assert_same_rows(timeline.select("user_id", "tweet_id", "body", WT, EXP), [
        (5, 1, "hi", V + SPACING - 1, 0),        # the author's own row; its self-follow's (V + 1) is older
        (7, 1, "hi", V + 2, 0),                  # through the follow, at its change number
        (6, 2, "yo", V + 2 * SPACING - 1, LATER),
        (9, 2, "yo", V + SPACING + 1, LATER - 100),   # ends with its follow, before the tweet
        (10, 2, "yo", V + SPACING + 1, LATER),        # with the tweet, before its follow
    ])
    index = follows.repair_rows(FlowSpec.parse(SPEC), "tw.async_join_tl", part, {}, WT, EXP)
    assert_same_rows(index.select("m0", "k0", "v0", follows.VERSION, WT), [
        (5, 1, "hi", V, V + SPACING - 2), (6, 2, "yo", V + SPACING, V + 2 * SPACING - 2)])


def test_should_leave_an_unexpected_row_without_a_write_time_when_told_to(spark):
    expected = spark.createDataFrame([(5, 1, "hi", V, 0)],
                                     f"user_id long, tweet_id long, body string, {WT} long, {EXP} long")
    found = spark.createDataFrame([(5, 1, "hi", V), (7, 3, "x", 1_000), (8, 4, None, None)],
                                  f"user_id long, tweet_id long, body string, {repair.FOUND_WRITETIME} long")
    classified, layout = compare.classify(expected, found, ["user_id", "tweet_id"], carry=(WT, EXP),
                                          found=(repair.FOUND_WRITETIME,), newest=WT, table="tw.timeline")
    assert_same_rows(repair.planned_deletes(classified, layout, None), [(7, 3, 1_000)])
    assert_same_rows(repair.planned_deletes(classified, layout, 77), [(7, 3, 1_000), (8, 4, 77)])


def test_should_confirm_a_row_at_the_stamp_the_repair_wrote_it_at_and_not_one_it_could_not_write(spark):
    cells = backfill.CELLS
    expected = spark.createDataFrame([(7, 1, "hi", 1_000, 0, ["body"], 1), (8, 1, "hi", 1_000, 0, ["body"], 1)],
                                     f"user_id long, tweet_id long, body string, {WT} long, {EXP} long, "
                                     f"{cells} array<string>, src_tweet_id long")
    found = spark.createDataFrame([], f"user_id long, tweet_id long, body string, {repair.FOUND_WRITETIME} long")
    classified, layout = compare.classify(expected, found, ["user_id", "tweet_id"],
                                          carry=(WT, EXP, cells, "src_tweet_id"), found=(repair.FOUND_WRITETIME,),
                                          newest=WT, table="tw.timeline")
    writes = spark.createDataFrame([(7, 1, "hi", V + 2, 0)],   # 8's follow is not in the copy: nothing written
                                   f"user_id long, tweet_id long, body string, {WT} long, {EXP} long")
    wanted = repair.restamped(repair.wanted_rows(classified, layout, 1), writes, layout)
    got = sorted((repair.as_wanted(r, layout) for r in wanted.collect()), key=lambda w: w.key)
    assert [(w.key, w.values, w.source_writetime, w.source_key, w.written) for w in got] == [
        ((7, 1), ("hi",), V + 2, (1,), True), ((8, 1), ("hi",), 1_000, (1,), False)]


def test_should_take_each_source_rows_version_from_its_join_index_row_else_from_its_write_time(spark, monkeypatch):
    from async_triggers.spark_jobs import session
    part = spark.createDataFrame([(1, 5, 10 * SPACING + 5), (2, 6, 3 * SPACING + 7), (3, 6, 4 * SPACING)],
                                 f"tweet_id long, author_id long, {WT} long")
    index = spark.createDataFrame([(5, 1, 2 * SPACING, None),    # the version the plugin holds: older than the
                                   (6, 2, 9 * SPACING, True)],   # run's start a key-only row's write time reads as
                                  f"m0 long, k0 long, {follows.VERSION} long, {follows.GONE} boolean")
    monkeypatch.setattr(session, "read_table", lambda spark, keyspace, table, columns=None, options=None: index)
    got = follows.at_versions(FlowSpec.parse(SPEC), part, WT, "LOCAL_QUORUM")
    assert got.columns == part.columns
    # a row kept as gone holds no version: tweet 2 is at the version its write time falls in
    assert_same_rows(got, [(1, 5, 2 * SPACING), (2, 6, 3 * SPACING), (3, 6, 4 * SPACING)])
