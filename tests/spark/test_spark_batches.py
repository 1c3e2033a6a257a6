"""How the jobs' writes are batched (spark_jobs/batches.py), on local DataFrames: a batch of several partitions stays
under Cassandra's warning thresholds whatever its rows' columns, a row's values are bounded from above, and the rows
of a partition come together in one task."""
from __future__ import annotations

from async_triggers.spark_jobs import batches


def test_should_keep_a_batch_of_small_rows_under_cassandras_thresholds_for_any_width():
    for columns in range(1, 200):
        rows = batches.rows_per_batch(columns)
        per_row = batches.SMALL_ROW_BYTES + batches.CELL_BYTES * columns + batches.ROW_BYTES
        assert 1 <= rows <= batches.WARN_PARTITIONS
        assert rows == 1 or rows * per_row < batches.WARN_BYTES, columns
    assert batches.rows_per_batch(6) == 8 and batches.rows_per_batch(200) == 1


def test_should_bound_a_rows_values_by_their_bytes(spark):
    df = spark.createDataFrame([("é" * 10, b"\x00" * 7, 5, None), (None, None, None, "x")],
                               "s string, b binary, n long, t string")
    sizes = [r[0] for r in df.select(batches.value_bytes(df)).collect()]
    assert sizes == [20 + 7 + batches.FIXED_BYTES, 0 + 0 + batches.FIXED_BYTES + 1]


def test_should_not_size_a_row_with_a_collection(spark):
    df = spark.createDataFrame([(1, [1, 2])], "k long, l array<long>")
    assert batches.value_bytes(df) is None


def test_should_bring_a_partitions_rows_together_in_as_many_tasks(spark):
    df = spark.createDataFrame([(k % 5, i) for i, k in enumerate(range(200))], "k long, i long").repartition(6)
    out = batches.by_partition(df, ["k"])
    assert out.rdd.getNumPartitions() == 6
    for part in out.rdd.glom().collect():
        keys = [r.k for r in part]
        assert keys == sorted(keys)                          # a partition's rows next to each other
    tasks = out.rdd.mapPartitionsWithIndex(lambda i, rows: [(r.k, i) for r in rows]).distinct().collect()
    assert len({k for k, _ in tasks}) == len(tasks) == 5     # each partition key in one task only


def test_should_leave_rows_keyed_by_a_map_as_they_are(spark):
    df = spark.createDataFrame([({"a": 1}, 1)], "k map<string,int>, i long")
    assert batches.by_partition(df, ["k"]) is df
