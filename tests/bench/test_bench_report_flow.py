"""The benchmarks' tables and flow: the report's flow on the report's tables mirrors each write (no target keeps
lineage), and the example's schema, where a tweet is keyed by its id alone, makes the same flow keep lineage."""
from __future__ import annotations

import dataclasses
import re

from async_triggers import schema, validate
from async_triggers.benchmarks.apps.cassandra import KEYSPACE
from async_triggers.benchmarks.harness.twitter_example import report_flow, report_table


def _table(create: str) -> schema.TableSchema:
    """The TableSchema of one of the benchmarks' CREATE TABLE statements with a PRIMARY KEY clause."""
    name, columns, key = re.fullmatch(r"CREATE TABLE IF NOT EXISTS \w+\.(\w+) \((.*), PRIMARY KEY \(([^)]*)\)\)( WITH .*)?",
                                      create).group(1, 2, 3)
    (partition, *clustering) = [k.strip() for k in key.split(",")]
    return schema.TableSchema(KEYSPACE, name, (partition,), tuple(clustering),
                              dict(c.strip().split(" ") for c in columns.split(",")))


def _schema(**replaced: schema.TableSchema) -> schema.Schema:
    tables = {name: _table(report_table(name)) for name in ("tweets", "followers", "timeline")}
    return schema.of(*{**tables, **replaced}.values())


def test_should_mirror_each_write_on_the_reports_tables():
    spec = validate.compile_flow(report_flow("bench"), _schema())
    assert [(t["table"], t["mode"]) for t in spec["targets"]] == [("timeline", "direct"), ("timeline", "direct")]
    assert spec["source"]["partition_key"] == ["author_id"] and spec["source"]["clustering"] == ["tweet_id"]


def test_should_keep_lineage_where_a_tweet_is_keyed_by_its_id_alone():
    tweets = _table(report_table("tweets"))
    by_id = dataclasses.replace(tweets, partition_key=("tweet_id",), clustering=())
    spec = validate.compile_flow(report_flow("bench"), _schema(tweets=by_id))
    assert [t["mode"] for t in spec["targets"]] == ["lineage", "lineage"]
    assert spec["targets"][0]["lineage_columns"] == ["author_id"]
