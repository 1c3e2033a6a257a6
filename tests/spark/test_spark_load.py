"""async_triggers.spark_jobs.load_twitter: a reproducible power-law follower graph, drawn in Spark, no Cassandra needed."""
from __future__ import annotations

import math
import statistics

import pytest
from pyspark.sql import functions as F

from spark_helpers import rows_of  # noqa: E402
from async_triggers.spark_jobs import load_twitter as lt  # noqa: E402



def test_should_give_the_default_graph_a_celebrity_and_mostly_small_counts():
    counts = lt.follower_counts()  # the demo's graph: 10,000 users asked, min_celebrity 10,000
    assert len(counts) == 10_001  # grown by one: the celebrity's 10,000 followers are other users
    assert max(counts) >= 10_000
    assert statistics.median(counts) <= 2
    assert sum(1 for c in counts if c >= 1000) < 10  # a handful of heavy hitters, not a uniform graph


def test_should_draw_follower_counts_with_the_requested_exponent():
    # P(K >= k) = k^-(alpha - 1) for the floored Pareto law: alpha = 1 + log10(P(K>=10) / P(K>=100))
    def estimate(alpha):
        counts = lt.follower_counts(100_000, exponent=alpha, seed=3, min_celebrity=0)
        ge10, ge100 = sum(c >= 10 for c in counts), sum(c >= 100 for c in counts)
        return 1 + math.log10(ge10 / ge100)

    assert estimate(2.3) == pytest.approx(2.3, abs=0.15)
    assert estimate(2.8) == pytest.approx(2.8, abs=0.2)


def test_should_draw_the_same_graph_for_a_seed_and_another_for_another_seed():
    assert lt.follower_counts(5000, seed=1, min_celebrity=3000) == lt.follower_counts(5000, seed=1, min_celebrity=3000)
    assert lt.follower_counts(5000, seed=1, min_celebrity=3000) != lt.follower_counts(5000, seed=2, min_celebrity=3000)
    assert lt.followers_of(7, 50, 1000, seed=1) == lt.followers_of(7, 50, 1000, seed=1)
    assert lt.followers_of(7, 50, 1000, seed=1) != lt.followers_of(7, 50, 1000, seed=2)


def test_should_grow_the_graph_to_hold_the_celebrity():
    counts = lt.follower_counts(100, seed=5, min_celebrity=500)
    assert len(counts) == 501 and max(counts) == 500
    assert lt.celebrities(1, 100, seed=5, min_celebrity=500)[0][1] == 500


def test_should_raise_no_count_without_min_celebrity():
    counts = lt.follower_counts(2000, seed=9, min_celebrity=0)
    assert len(counts) == 2000
    assert max(counts) == max(lt.sampled_count(u, 2000, 2.3, 9) for u in range(1, 2001))


def test_should_draw_followers_as_distinct_other_users():
    for uid, k in [(1, 99), (50, 99), (100, 99), (37, 10)]:
        fs = lt.followers_of(uid, k, 100, seed=4)
        assert len(fs) == len(set(fs)) == k
        assert uid not in fs and all(1 <= f <= 100 for f in fs)
    assert sorted(lt.followers_of(50, 99, 100, seed=4)) == [u for u in range(1, 101) if u != 50]


@pytest.mark.parametrize("bad, message", [(dict(n_users=1), "'users' must be at least 2"),
                                          (dict(exponent=1.0), "'exponent' must be greater than 1"),
                                          (dict(min_celebrity=-1), "'min_celebrity' must be positive")])
def test_should_name_invalid_graph_arguments(bad, message):
    with pytest.raises(ValueError, match=message):
        lt.follower_counts(**{**dict(n_users=100, exponent=2.3, min_celebrity=10), **bad})


@pytest.fixture(scope="module")
def graph(spark):
    gen = dict(n_users=2000, exponent=2.3, seed=7, min_celebrity=1500)
    counts = lt.counts_df(spark, **gen, partitions=3).cache()
    edges = lt.edges_df(spark, **gen, partitions=3, counts=counts).cache()
    return gen, counts, edges


def test_should_make_spark_edges_without_self_follows_or_duplicates(graph):
    _, _, edges = graph
    assert edges.where(F.col("user_id") == F.col("follower_id")).count() == 0
    assert edges.count() == edges.distinct().count()
    assert edges.where((F.col("follower_id") < 1) | (F.col("follower_id") > 2000)).count() == 0


def test_should_match_the_pure_counts_in_the_spark_graph(graph):
    gen, counts, edges = graph
    pure = lt.follower_counts(**gen)
    per_user = edges.groupBy("user_id").count()
    # users with no follower have no edge: compare the non-zero counts
    assert rows_of(per_user) == [(i + 1, c) for i, c in enumerate(pure) if c > 0]
    assert rows_of(counts) == [(i + 1, c) for i, c in enumerate(pure)]
    assert lt.top_users(counts, 5) == lt.celebrities(5, **gen)
    assert lt.top_users(counts, 1)[0][1] == 1500


def test_should_make_the_same_spark_graph_whatever_the_partitioning(spark, graph):
    gen, _, edges = graph
    again = lt.edges_df(spark, **gen, partitions=7)
    assert rows_of(again) == rows_of(edges)
    other_seed = lt.edges_df(spark, **{**gen, "seed": 8}, partitions=3)
    assert rows_of(other_seed) != rows_of(edges)


def test_should_make_one_user_row_per_user_with_its_name(spark):
    users = lt.users_df(spark, 20, min_celebrity=24, partitions=2)
    assert rows_of(users) == [(i, f"user{i}") for i in range(1, 26)]
    assert [f.dataType.simpleString() for f in users.schema.fields] == ["bigint", "string"]


def test_should_print_the_graph_figures_on_a_dry_run(spark, monkeypatch, capsys):
    from async_triggers.spark_jobs import session

    monkeypatch.setattr(session, "build_session", lambda **kw: spark)
    assert lt.main(["--users", "3000", "--min-celebrity", "2000", "--seed", "11", "--dry-run"]) == 0
    out = capsys.readouterr().out
    top = lt.celebrities(5, 3000, seed=11, min_celebrity=2000)
    assert f"users 3000  edges {sum(lt.follower_counts(3000, seed=11, min_celebrity=2000))}  max followers 2000" in out
    assert "top 5 by followers: " + ", ".join(f"{u} ({n})" for u, n in top) in out
