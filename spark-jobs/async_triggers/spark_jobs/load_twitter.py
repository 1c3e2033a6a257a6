"""Generate a reproducible Twitter follower graph and load it into ``twitter.users`` and ``twitter.followers``.

    python -m async_triggers.spark_jobs.load_twitter --users 10000 --seed 42 --contact-points 127.0.0.1
    python -m async_triggers.spark_jobs.load_twitter --dry-run          # generate and print the figures, write nothing

Follower counts follow a power law P(k) ~ k^-2.3, the in-degree exponent Kwak et al. (WWW 2010, "What is
Twitter, a social network or a news media?") measured on the 2009 Twitter graph: most users have one or two
followers, a few have thousands. A sample of 10,000 users from that law rarely holds a user with 10,000
followers, which is what the fan-out benchmark needs, so the most-followed user is raised to
``min_celebrity`` followers (and the graph grows to ``min_celebrity + 1`` users if it is smaller: a follower
is a distinct user). Followers of a user are drawn uniformly among the other users: no self-follow, no
duplicate edge.

Every random draw is seeded from (seed, user id), not from a partition: the graph is the same whatever the
number of partitions or executors, and :func:`follower_counts` reproduces it in plain Python (the demo uses
:func:`celebrities` to pick the most-followed user without reading the cluster).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Sequence

from async_triggers.errors import AsyncTriggersError

from .errors import LoadError

DEFAULT_USERS = 10_000
DEFAULT_EXPONENT = 2.3
DEFAULT_SEED = 42
DEFAULT_MIN_CELEBRITY = 10_000
_COUNT, _FOLLOWERS = 0, 1  # the two independent random streams of a user


def effective_users(n_users: int, min_celebrity: int) -> int:
    """The number of users generated: at least ``min_celebrity + 1`` so the celebrity's followers exist."""
    return max(int(n_users), int(min_celebrity) + 1)


def _check(n_users: int, exponent: float, min_celebrity: int, min_followers: int) -> None:
    if n_users < 2:
        raise ValueError(f"'users' must be at least 2, found: {n_users}")
    if not exponent > 1.0:
        raise ValueError(f"'exponent' must be greater than 1 (a power law must be normalisable), found: {exponent}")
    if min_celebrity < 0:
        raise ValueError(f"'min_celebrity' must be positive or zero, found: {min_celebrity}")
    if min_followers < 0:
        raise ValueError(f"'min_followers' must be positive or zero, found: {min_followers}")


def _rng(seed: int, user_id: int, stream: int) -> random.Random:
    # an integer seed unique to (seed, user, stream); random.Random hashes it with init_by_array
    return random.Random(((seed & 0xFFFFFFFF) << 64) | (user_id << 1) | stream)


def sampled_count(user_id: int, n_users: int, exponent: float, seed: int, min_followers: int = 1) -> int:
    """The follower count of ``user_id`` drawn from the power law: the floor of a Pareto variate with tail
    exponent ``exponent - 1`` and scale ``min_followers``, capped at ``n_users - 1`` (everybody else)."""
    u = _rng(seed, user_id, _COUNT).random()
    x = min_followers * (1.0 - u) ** (-1.0 / (exponent - 1.0))
    return min(int(x), n_users - 1)


def follower_counts(n_users: int = DEFAULT_USERS, exponent: float = DEFAULT_EXPONENT, seed: int = DEFAULT_SEED,
                    min_celebrity: int = DEFAULT_MIN_CELEBRITY, min_followers: int = 1) -> list[int]:
    """The follower count of every user: element ``i`` is user ``i + 1``'s. The list has
    :func:`effective_users` elements. If no sampled count reaches ``min_celebrity``, the most-followed user
    (the smallest id among ties) is raised to exactly ``min_celebrity``. Same arguments, same list."""
    _check(n_users, exponent, min_celebrity, min_followers)
    n = effective_users(n_users, min_celebrity)
    counts = [sampled_count(uid, n, exponent, seed, min_followers) for uid in range(1, n + 1)]
    top = max(range(n), key=lambda i: (counts[i], -i))
    if counts[top] < min_celebrity:
        counts[top] = min_celebrity
    return counts


def celebrities(k: int = 1, n_users: int = DEFAULT_USERS, exponent: float = DEFAULT_EXPONENT,
                seed: int = DEFAULT_SEED, min_celebrity: int = DEFAULT_MIN_CELEBRITY,
                min_followers: int = 1) -> list[tuple[int, int]]:
    """The ``k`` most-followed ``(user_id, followers)`` of the graph these arguments generate, most-followed
    first (ties: smaller id first). Pure Python: no Spark, no cluster."""
    counts = follower_counts(n_users, exponent, seed, min_celebrity, min_followers)
    ranked = sorted(range(len(counts)), key=lambda i: (-counts[i], i))[:k]
    return [(i + 1, counts[i]) for i in ranked]


def followers_of(user_id: int, count: int, n_users: int, seed: int) -> list[int]:
    """``count`` distinct followers of ``user_id`` drawn uniformly among users ``1..n_users`` but itself."""
    # sample among the n - 1 others as 1..n-1, then shift the ids at or above user_id by one to skip it
    picks = _rng(seed, user_id, _FOLLOWERS).sample(range(1, n_users), count)
    return [p + 1 if p >= user_id else p for p in picks]


# --- Spark transforms ------------------------------------------------------------------------------------------

def _partitions(spark, n: int, partitions: int | None) -> int:
    return partitions or max(2, min(spark.sparkContext.defaultParallelism * 2, n // 1000 + 1))


def counts_df(spark, n_users: int = DEFAULT_USERS, exponent: float = DEFAULT_EXPONENT, seed: int = DEFAULT_SEED,
              min_celebrity: int = DEFAULT_MIN_CELEBRITY, min_followers: int = 1, partitions: int | None = None):
    """DataFrame ``(user_id bigint, followers int)``: :func:`follower_counts`, drawn in the executors."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    _check(n_users, exponent, min_celebrity, min_followers)
    n = effective_users(n_users, min_celebrity)

    def draw(ids):
        for uid in ids:
            yield uid, sampled_count(uid, n, exponent, seed, min_followers)

    schema = StructType([StructField("user_id", LongType(), False), StructField("followers", IntegerType(), False)])
    rdd = spark.sparkContext.range(1, n + 1, numSlices=_partitions(spark, n, partitions)).mapPartitions(draw)
    df = spark.createDataFrame(rdd, schema)
    top = df.orderBy(F.desc("followers"), F.asc("user_id")).first()
    if top["followers"] < min_celebrity:
        df = df.withColumn("followers", F.when(F.col("user_id") == top["user_id"], F.lit(min_celebrity))
                           .otherwise(F.col("followers")))
    return df


def edges_df(spark, n_users: int = DEFAULT_USERS, exponent: float = DEFAULT_EXPONENT, seed: int = DEFAULT_SEED,
             min_celebrity: int = DEFAULT_MIN_CELEBRITY, min_followers: int = 1, partitions: int | None = None,
             counts=None):
    """DataFrame ``(user_id bigint, follower_id bigint)``, the rows of ``twitter.followers``: for every user,
    :func:`followers_of` its count. ``counts`` reuses a :func:`counts_df` result."""
    from pyspark.sql.types import LongType, StructField, StructType

    counts = counts if counts is not None else counts_df(spark, n_users, exponent, seed, min_celebrity,
                                                         min_followers, partitions)
    n = effective_users(n_users, min_celebrity)

    def expand(rows):
        for r in rows:
            uid = r["user_id"]
            for f in followers_of(uid, r["followers"], n, seed):
                yield uid, f

    schema = StructType([StructField("user_id", LongType(), False), StructField("follower_id", LongType(), False)])
    return spark.createDataFrame(counts.rdd.mapPartitions(expand), schema)


def users_df(spark, n_users: int = DEFAULT_USERS, min_celebrity: int = DEFAULT_MIN_CELEBRITY,
             partitions: int | None = None):
    """DataFrame ``(user_id bigint, name text)``, the rows of ``twitter.users``: ``user<id>``."""
    from pyspark.sql import functions as F

    n = effective_users(n_users, min_celebrity)
    return spark.range(1, n + 1, numPartitions=_partitions(spark, n, partitions)) \
        .select(F.col("id").alias("user_id"), F.concat(F.lit("user"), F.col("id").cast("string")).alias("name"))


def top_users(counts, k: int = 5) -> list[tuple[int, int]]:
    """The ``k`` most-followed ``(user_id, followers)`` of a ``(user_id, followers)`` DataFrame."""
    from pyspark.sql import functions as F

    rows = counts.orderBy(F.desc("followers"), F.asc("user_id")).limit(k).collect()
    return [(r["user_id"], r["followers"]) for r in rows]


# --- CLI -------------------------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.spark_jobs.load_twitter", description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=DEFAULT_USERS)
    p.add_argument("--exponent", type=float, default=DEFAULT_EXPONENT, help="power-law exponent of follower counts")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--min-celebrity", type=int, default=DEFAULT_MIN_CELEBRITY,
                   help="the most-followed user has at least this many followers")
    p.add_argument("--min-followers", type=int, default=1, help="scale of the power law (smallest typical count)")
    p.add_argument("--keyspace", default="twitter", help="keyspace holding users and followers (examples/twitter/schema.cql)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--partitions", type=int, default=None)
    p.add_argument("--home", default=None, help="cache dir (default $ASYNC_TRIGGERS_HOME or ~/.cache/async-triggers)")
    p.add_argument("--dry-run", action="store_true", help="generate and print the figures; write nothing "
                                                          "(starts Spark without the connector)")
    from async_triggers.connection import add_arguments
    add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .errors import describe_error
    from .session import build_session, write_table

    started = time.monotonic()
    try:
        _check(args.users, args.exponent, args.min_celebrity, args.min_followers)
        from async_triggers.connection import from_arguments
        spark = build_session(master=args.master, connection=from_arguments(args),
                              app_name="load-twitter", home=args.home, jars=() if args.dry_run else None)
        gen = dict(n_users=args.users, exponent=args.exponent, seed=args.seed, min_celebrity=args.min_celebrity,
                   min_followers=args.min_followers, partitions=args.partitions)
        counts = counts_df(spark, **gen).cache()
        edges = edges_df(spark, **gen, counts=counts).cache()
        users = users_df(spark, args.users, args.min_celebrity, args.partitions)
        n_users, n_edges = counts.count(), edges.count()
        top = top_users(counts, 5)
        median = counts.approxQuantile("followers", [0.5], 0.0)[0]
        if not args.dry_run:
            try:
                write_table(users, args.keyspace, "users")
                write_table(edges, args.keyspace, "followers")
            except Exception as e:
                reason = describe_error(e)
                hint = " (create them with examples/twitter/schema.cql)" if "find" in reason or "exist" in reason else ""
                raise LoadError(f"writing {args.keyspace}.users / {args.keyspace}.followers failed{hint}: "
                                f"{reason}") from e
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except AsyncTriggersError as e:
        from async_triggers.errors import exit_code_of
        print(f"error: {e}", file=sys.stderr)
        return exit_code_of(e)
    elapsed = time.monotonic() - started
    if n_users != args.users:
        print(f"note: grew the graph from {args.users} to {n_users} users so that a user can have "
              f"{args.min_celebrity} followers")
    print(f"users {n_users}  edges {n_edges}  max followers {top[0][1]}  median followers {median:g}  "
          f"(exponent {args.exponent}, seed {args.seed})")
    print("top 5 by followers: " + ", ".join(f"{uid} ({n})" for uid, n in top))
    where = "dry run, nothing written" if args.dry_run else f"written to {args.keyspace}.users, {args.keyspace}.followers"
    print(f"{where} in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
