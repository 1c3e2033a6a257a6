"""A following fan-out's recency bound in Spark (spark_jobs/recent.py): a timeuuid's and a timestamp's time, the rows
the bound keeps at a time, the keys verify leaves out while the edge moves, and the backfill's TTL capped by it."""
from __future__ import annotations

import datetime as dt
import uuid

from async_triggers.spark_jobs import recent
from async_triggers.spec import FlowSpec

RECENT = {"column": "tweet_id", "type": "timeuuid", "target_column": "tweet_id", "seconds": 60}
TARGET = FlowSpec.parse({
    "name": "tl", "source": {"keyspace": "tw", "table": "tweets", "partition_key": ["tweet_id"]},
    "targets": [{"keyspace": "tw", "table": "timeline", "partition_key": ["user_id"], "clustering": ["tweet_id"],
                 "fanout": {"keyspace": "tw", "table": "followers",
                            "follow": {"index": 0, "keyspace": "tw", "table": "async_follows_tl", "recent": RECENT}}}],
}).targets[0]


def timeuuid(millis: int) -> str:
    """A version-1 UUID of that millisecond (the 100-ns count from 1582, a clock sequence and node of our own)."""
    ticks = millis * 10_000 + recent.UUID_EPOCH_OFFSET
    low, mid, high = ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, (ticks >> 48) & 0x0FFF
    return str(uuid.UUID(fields=(low, mid, high | 0x1000, 0x80, 0x01, 0x123456789ABC)))


def test_should_read_the_time_of_a_timeuuid_and_of_a_timestamp(spark):
    times = [0, 1_700_000_000_123, 4_102_444_800_000]
    assert uuid.UUID(timeuuid(times[1])).time == times[1] * 10_000 + recent.UUID_EPOCH_OFFSET
    df = spark.createDataFrame([(timeuuid(m), dt.datetime.fromtimestamp(m / 1000, dt.timezone.utc)) for m in times],
                               "u string, t timestamp")
    got = df.select(recent.time_millis("u", "timeuuid").alias("u"), recent.time_millis("t", "timestamp").alias("t"))
    assert [(r.u, r.t) for r in got.collect()] == [(m, m) for m in times]


def test_should_keep_the_rows_within_the_bound_and_leave_out_the_keys_at_its_edge(spark):
    now = 1_800_000_000.0
    ages = [10, 50, 64, 66, 70, 200]        # seconds before now
    rows = spark.createDataFrame([(1, timeuuid(int((now - a) * 1000))) for a in ages], "user_id long, tweet_id string")
    kept = recent.within_bound(TARGET, rows, now)
    # within 60 s, less a slack of 5: what the target may still hold
    assert sorted(ages[i] for i, r in enumerate(rows.collect()) if r in kept.collect()) == [10, 50, 64]
    # verify read from now to now + 20 s: a row 35 to 65 s old at its start (the bound, the 20 s and the slack) may
    # have left while it read, or not; the others are certain either way
    classified = rows.select("user_id", "tweet_id").toDF("k0", "k1")
    left = recent.without_edge([TARGET], classified, ["user_id", "tweet_id"], now, now + 20)
    assert sorted(ages[[r.k1 for r in classified.collect()].index(r.k1)] for r in left.collect()) == [10, 66, 70, 200]
