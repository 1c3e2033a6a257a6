"""pycontrol/async_triggers/spec.py: every rendered specification parses into its typed form, every field of the documents is one
the typed form reads (a field added to the rendering must be added there too), and a malformed document fails
naming the flow and the field."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from async_triggers.spec import FlowSpec, SpecError, column_of

GOLDEN = sorted((Path(__file__).parents[1] / "golden").glob("*.json"))
# the fields of each level the typed form reads (the flow's options stay in the document: the plugin reads them)
READ = {
    "flow": {"name", "source", "targets", "events", "handler", "follows"},
    "table": {"keyspace", "table", "partition_key", "clustering", "columns"},
    "target": {"keyspace", "table", "partition_key", "clustering", "columns", "mode", "lineage_columns", "fanout",
               "join_index", "aggregate"},
    "fanout": {"keyspace", "table", "match", "columns", "follow"},
    "follow": {"index", "keyspace", "table", "recent"},
    "aggregate": {"keyspace", "table", "partition_key", "clustering", "group", "count", "sum", "min", "max"},
    "follows": {"flow", "source", "index", "target"},
}
OPTIONS = {"queue", "retry", "overflow", "backup", "page_size", "start_delay_ms", "read_consistency",
           "write_consistency"}


def _unread(doc: dict) -> list[str]:
    out = [f"flow.{k}" for k in set(doc) - READ["flow"] - OPTIONS]
    out += [f"source.{k}" for k in set(doc["source"]) - READ["table"]]
    targets = list(doc["targets"]) + ([doc["follows"]["index"], doc["follows"]["target"]] if doc.get("follows") else [])
    for t in targets:
        out += [f"target.{k}" for k in set(t) - READ["target"]]
        if t.get("fanout"):
            out += [f"fanout.{k}" for k in set(t["fanout"]) - READ["fanout"]]
            if t["fanout"].get("follow"):
                out += [f"follow.{k}" for k in set(t["fanout"]["follow"]) - READ["follow"]]
        if t.get("aggregate"):
            out += [f"aggregate.{k}" for k in set(t["aggregate"]) - READ["aggregate"]]
    if doc.get("follows"):
        out += [f"follows.{k}" for k in set(doc["follows"]) - READ["follows"]]
    return out


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_should_read_every_field_of_each_rendered_spec(path):
    doc = json.loads(path.read_text())
    spec = FlowSpec.parse(doc)
    assert spec.name == doc["name"] and spec.doc is doc
    assert [t.qualified for t in spec.targets] == [f"{t['keyspace']}.{t['table']}" for t in doc["targets"]]
    assert _unread(doc) == [], "fields the typed spec does not read: add them to pycontrol/async_triggers/spec.py"
    assert FlowSpec.parse(spec) is spec and FlowSpec.parse(spec, version=7).version == 7


def test_should_type_the_following_fanout_its_companion_and_the_aggregate():
    main = FlowSpec.parse(json.loads((GOLDEN[0].parent / "twitter_timeline.json").read_text()))
    following = main.following_target
    assert following.fanout.qualified == "twitter.followers" and following.fanout.follow.index == 1
    assert main.targets[following.fanout.follow.index].join_index and main.targets[1].key == ("m0", "k0")
    assert column_of(following.columns["user_id"]) == ("row", "follower_id")
    companion = FlowSpec.parse(json.loads((GOLDEN[0].parent / "twitter_timeline_follows.json").read_text()))
    assert companion.follows.flow == "twitter_timeline" and companion.targets == ()
    assert companion.follows.target == following and companion.follows.source == main.source
    counts = FlowSpec.parse(json.loads((GOLDEN[0].parent / "twitter_tweet_counts.json").read_text()))
    aggregate = counts.targets[0].aggregate
    assert (aggregate.qualified, aggregate.count, dict(aggregate.max)) == (
        "twitter.tweet_counts", "tweets", {"last_tweet_at": "v0"})


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("name"), "'flow.name'"),
    (lambda d: d.update(targets={}), "'targets'"),
    (lambda d: d["source"].update(partition_key="tweet_id"), "'source.partition_key'"),
    (lambda d: d["targets"][2]["fanout"].update(match=["user_id"]), "'targets[2].fanout.match'"),
    (lambda d: d["targets"][2]["fanout"]["follow"].update(index="1"), "'targets[2].fanout.follow.index'"),
    (lambda d: d["targets"][1].update(join_index="yes"), "'targets[1].join_index'"),
    (lambda d: d["targets"].append(3), "'targets[3]'"),
])
def test_should_name_the_flow_and_field_of_a_malformed_document(change, field):
    doc = json.loads((GOLDEN[0].parent / "twitter_timeline.json").read_text())
    change(doc)
    with pytest.raises(SpecError, match=re.escape(field)) as failed:
        FlowSpec.parse(doc)
    assert "flow 'twitter_timeline'" in str(failed.value) or "name" in field
    with pytest.raises(SpecError, match="must be an object"):
        FlowSpec.parse([doc])
