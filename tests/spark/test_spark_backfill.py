"""async_triggers.spark_jobs.backfill and backfill_lineage: the per-row write options, the lineage entries a backfill
records, and the stale entries its convergence removes, on literal DataFrames (expected values written by hand)."""
from __future__ import annotations

import time

from pyspark.sql import functions as F  # noqa: E402
from spark_helpers import assert_same_rows  # noqa: E402
from async_triggers.spark_jobs import backfill, backfill_lineage, ring  # noqa: E402
from async_triggers.spec import FlowSpec  # noqa: E402

USERS = {
    "name": "users_by_name",
    "source": {"keyspace": "app", "table": "users", "partition_key": ["user_id"], "clustering": [],
               "columns": {"user_id": "int", "name": "text", "email": "text"}},
    "handler": None,
    "targets": [{"keyspace": "app", "table": "users_by_name", "partition_key": ["name"], "clustering": ["user_id"],
                 "columns": {"name": "source.name", "user_id": "source.user_id", "email": "source.email"},
                 "fanout": None, "mode": "lineage", "lineage_columns": ["name"]}],
}


def test_should_take_the_newest_writetime_and_the_first_expiry_of_a_row(spark):
    df = spark.createDataFrame([(1, 10, 30, None, 500), (2, 40, None, 900, None), (3, None, None, None, None)],
                               "user_id int, wt_0 long, wt_1 long, ttl_0 int, ttl_1 int")
    before = int(time.time())
    rows = {r.user_id: r for r in backfill.with_write_options(df, fallback_micros=99).collect()}
    after = int(time.time())
    assert list(rows[1].asDict()) == ["user_id", backfill.WRITETIME, backfill.EXPIRES]
    # a remaining TTL becomes when the row expires, from the clock as the row is read
    assert before + 500 <= rows[1][backfill.EXPIRES] <= after + 500 and rows[1][backfill.WRITETIME] == 30
    assert before + 900 <= rows[2][backfill.EXPIRES] <= after + 900
    assert (rows[3][backfill.WRITETIME], rows[3][backfill.EXPIRES]) == (99, 0)


def test_should_reckon_each_rows_ttl_when_it_is_written_not_when_it_was_derived(spark):
    # a backfill derives its rows, then counts, shuffles and writes them: a TTL counted when they were derived would
    # let them outlive their source by that time
    now = int(time.time())
    df = spark.createDataFrame([(1, 5, now + 100), (2, 5, 0), (3, 5, now + 3)],
                               f"user_id int, {backfill.WRITETIME} long, {backfill.EXPIRES} long")
    planned = backfill.with_ttl(df)
    time.sleep(3.2)                            # planned, then computed more than three seconds later
    taken = int(time.time())
    rows = {r.user_id: r for r in planned.collect()}
    assert planned.columns == ["user_id", backfill.WRITETIME, backfill.TTL]
    assert now + 100 - int(time.time()) <= rows[1][backfill.TTL] <= now + 100 - taken
    assert rows[2][backfill.TTL] == 0          # no expiry
    assert 3 not in rows                       # expired before it was written: derives nothing


def test_should_record_the_image_of_each_row_that_has_one(spark):
    part = spark.createDataFrame([(1, "ann", "a@x", 10, 0), (2, None, "b@x", 20, 0), (3, "cy", "c@x", 30, 100)],
                                 f"user_id int, name string, email string, {backfill.WRITETIME} long, "
                                 f"{backfill.EXPIRES} long")
    spec = FlowSpec.parse(USERS)
    part = backfill.with_ring_columns(part, spec)
    rows = backfill.lineage_rows(spec, 0, part).collect()
    # no image for the row without a name; a TTL'd row's entry outlives it by the plugin's grace (10 days)
    assert sorted((r["flow"], bytes(r["source_key"]), bytes(r["target_key"]), r["ts"], r[backfill.WRITETIME],
                   r[backfill.EXPIRES]) for r in rows) == [
        ("users_by_name", b"\x00\x00\x00\x04\x00\x00\x00\x01",
         b"\x00\x00\x00\x04\x00\x00\x00\x00" + b"\x00\x00\x00\x03ann", 10, 10, 0),
        ("users_by_name", b"\x00\x00\x00\x04\x00\x00\x00\x03",
         b"\x00\x00\x00\x04\x00\x00\x00\x00" + b"\x00\x00\x00\x02cy", 30, 30, 100 + 10 * 86400)]


def test_should_give_the_same_images_from_the_key_and_image_columns_alone(spark):
    # the convergence reads the source again for its images only: the key, the lineage columns, a target's key
    spec = FlowSpec.parse(USERS)
    assert backfill.image_columns(spec) == ["user_id", "name"]
    whole = spark.createDataFrame([(1, "ann", "a@x", 10, 0), (2, None, "b@x", 20, 0), (3, "", None, 30, 4_000_000_000)],
                                  f"user_id int, name string, email string, {backfill.WRITETIME} long, "
                                  f"{backfill.EXPIRES} long")
    narrow = whole.select("user_id", "name").withColumn(backfill.WRITETIME, F.lit(0).cast("long")) \
        .withColumn(backfill.EXPIRES, F.lit(0).cast("long"))

    def images(df):
        rows = backfill.lineage_rows(spec, 0, backfill.with_ring_columns(df, spec)).collect()
        return sorted((bytes(r["source_key"]), bytes(r["target_key"])) for r in rows)

    assert images(narrow) == images(whole) and len(images(whole)) == 1   # no name, an empty name: no image


def test_should_find_every_recorded_image_the_source_rows_no_longer_have(spark):
    key1, key2, key3 = (ring.source_key([i], ["int"]) for i in (1, 2, 3))
    old, new = ring.lineage_key(0, ["ann"], ["text"]), ring.lineage_key(0, ["bea"], ["text"])
    sentinel = ring.lineage_key(0, [], [])                       # a former plugin's deletion record
    floor = ring.lineage_key(2**31 - 1, [], [])                  # a former plugin's floor: no entry of a target
    lineage = spark.createDataFrame([
        ("users_by_name", key1, old, 10, None), ("users_by_name", key1, new, 20, 20),   # renamed: ann is stale
        ("users_by_name", key1, floor, 25, 25),
        ("users_by_name", key2, old, 10, 40), ("users_by_name", key2, sentinel, 30, 30),  # deleted since
        ("users_by_name", key3, old, 5, 5),                                              # still ann
        ("other_flow", key1, old, 1, 1)], "flow string, source_key binary, target_key binary, ts long, written long")
    # what the source rows' images give now: key1 is bea, key3 still ann, key2 is gone
    fresh = spark.createDataFrame([(key1, new), (key3, old)], "source_key binary, target_key binary")
    stale = backfill_lineage.stale_entries(lineage, fresh, "users_by_name")
    # each at its own timestamp (a former plugin's newest cell written to its rows where that is newer)
    assert sorted((bytes(r["source_key"]), bytes(r["target_key"]), r["at"]) for r in stale.collect()) == sorted([
        (key1, old, 10), (key1, floor, 25), (key2, old, 40), (key2, sentinel, 30)])


def test_should_date_a_row_by_its_collections_elements_too(spark):
    # a collection's WRITETIME and TTL are its elements' (the connector reads arrays): the newest, and the least
    df = spark.createDataFrame([(1, 10, [5, 40], None, [300, None])],
                               "user_id int, wt_0 long, wt_1 array<long>, ttl_0 int, ttl_1 array<int>")
    before = int(time.time())
    [row] = backfill.with_write_options(df, fallback_micros=99).collect()
    assert row[backfill.WRITETIME] == 40 and before + 300 <= row[backfill.EXPIRES] <= int(time.time()) + 300


def test_should_count_a_waves_source_rows_per_token_range_and_keep_only_its_ranges(spark):
    # ranges (start, end]: a token on a range's end is that range's; one outside every range of the wave is left out
    df = spark.createDataFrame([(1, -100), (2, -50), (3, 0), (4, 1), (5, 99), (6, 100), (7, 500)],
                               f"user_id int, {backfill.TOKEN} long")
    wave = [(-100, 0), (0, 100), (200, 300)]
    assert backfill.range_counts(df, wave) == {-100: 2, 0: 3, 200: 0}
    assert sorted(r["user_id"] for r in backfill.in_ranges(df, wave).collect()) == [2, 3, 4, 5, 6]
