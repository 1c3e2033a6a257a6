"""A following fan-out's recency bound in Spark (docs/design.md, "A fan-out that follows its table"): the target holds
the rows whose source time (a timeuuid or timestamp key column, which the target's key holds too) is within the bound
of now. Verify derives the rows within it and compares no row whose time crossed the edge while it read; the backfill
caps each row's TTL by it (follows.following_rows).
"""
from __future__ import annotations

from typing import Sequence

from async_triggers.spec import Recent, Target

# a recency bound's edge is uncertain by the clocks of the nodes and of Spark and by a TTL's whole seconds: verify
# compares no row whose time crosses the edge, widened by this, while it reads
RECENT_SLACK_S = 5
UUID_EPOCH_OFFSET = 0x01B21DD213814000   # 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch


def recent_of(target: Target) -> Recent | None:
    """A following fan-out's recency bound (``column``, ``type``, ``target_column``, ``seconds``); None: none."""
    return target.fanout.follow.recent if target.follows else None


def time_millis(column: str, cql_type: str):
    """The milliseconds since the epoch of a timestamp or timeuuid column (the connector reads a timeuuid as its
    text: the time is its first three groups, the version digit left out)."""
    from pyspark.sql import functions as F
    c = F.col(column)
    if cql_type == "timestamp":
        return F.expr(f"unix_millis(`{column}`)")
    low = F.conv(F.substring(c, 1, 8), 16, 10).cast("long")
    mid = F.conv(F.substring(c, 10, 4), 16, 10).cast("long")
    high = F.conv(F.substring(c, 16, 3), 16, 10).cast("long")
    ticks = high * F.lit(1 << 48) + mid * F.lit(1 << 32) + low
    return F.floor((ticks - F.lit(UUID_EPOCH_OFFSET)) / 10_000).cast("long")


def within_bound(target: Target, rows, since_s: float):
    """``rows`` of ``target`` (its columns) without those its recency bound has taken out of it by ``since_s``, an
    epoch time in seconds, less the slack: what the target holds of them."""
    from pyspark.sql import functions as F
    recent = recent_of(target)
    if recent is None:
        return rows
    edge = int((since_s - recent.seconds - RECENT_SLACK_S) * 1000)
    return rows.where(time_millis(recent.target_column, recent.type) > F.lit(edge))


def without_edge(group: Sequence[Target], classified, keys, started_s: float, ended_s: float):
    """The classified keys of a table (``k0, ...`` for ``keys``) less those whose time crossed the recency bound of
    the table's following fan-out between ``started_s`` and ``ended_s`` (epoch seconds, widened by the slack): such a
    row may or may not be there, whatever the flow does."""
    from pyspark.sql import functions as F
    recent = next((recent_of(t) for t in group if recent_of(t)), None)
    if recent is None:
        return classified
    at = time_millis(f"k{list(keys).index(recent.target_column)}", recent.type)
    low = int((started_s - recent.seconds - RECENT_SLACK_S) * 1000)
    high = int((ended_s - recent.seconds + RECENT_SLACK_S) * 1000)
    return classified.where((at <= F.lit(low)) | (at > F.lit(high)))
