"""Following fan-outs (FanOut(..., follow=True)): what they compile to (a lineage target with a join index before it,
and a companion flow on the fan-out table), the tables the deploy creates, the companion's capture, the tables each
flow writes, the companion's life with its flow (deploy, drop, uninstall), and every shape refused with a message
naming the flow and the culprit."""
import contextlib
import dataclasses
import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from async_triggers import aggregates, backup_map, capture_index, cli, deploy, dlq, drop_guard, render, schema, \
    uninstall, validate
from async_triggers.cli import trigger as cli_trigger
from async_triggers.errors import ConfigError, ValidationError
from async_triggers.flows import Aggregate, FanOut, Flow, Write, row, source
from async_triggers.spec import FlowSpec

TWEETS = schema.TableSchema("twitter", "tweets", ("tweet_id",), (),
                            {"tweet_id": "timeuuid", "author_id": "bigint", "body": "text", "created_at": "timestamp",
                             "tags": "set<text>", "topics": "frozen<set<text>>"})
FOLLOWERS = schema.TableSchema("twitter", "followers", ("user_id",), ("follower_id",),
                               {"user_id": "bigint", "follower_id": "bigint", "since": "timestamp",
                                "note": "text", "labels": "list<text>"}, static=frozenset({"note"}))
TIMELINE = schema.TableSchema("twitter", "timeline", ("user_id",), ("tweet_id",),
                              {"user_id": "bigint", "tweet_id": "timeuuid", "author_id": "bigint", "body": "text",
                               "followed": "timestamp", "tags": "set<text>", "topics": "frozen<set<text>>",
                               "note": "text", "labels": "list<text>"})
OWN = schema.TableSchema("twitter", "own", ("user_id",), ("tweet_id",), {"user_id": "bigint", "tweet_id": "timeuuid"})
SCHEMA = schema.of(TWEETS, FOLLOWERS, TIMELINE, OWN)
COLUMNS = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)


def following(**columns) -> FanOut:
    return FanOut("twitter.followers", match={"user_id": source.author_id}, follow=True).write(
        "twitter.timeline", user_id=row.follower_id, **(columns or COLUMNS))


def flow(*steps, name="twitter_timeline", **options) -> Flow:
    steps = steps or (Write("twitter.timeline", user_id=source.author_id, **COLUMNS), following())
    return Flow(name=name, source="twitter.tweets", steps=list(steps), **options)


def rejects(flows, message: str, schema_=SCHEMA, deployed=None):
    with pytest.raises(ValidationError) as e:
        validate.compile_all(flows if isinstance(flows, list) else [flows], schema_, deployed)
    assert str(e.value) == message


OWN_ROW = {"keyspace": "twitter", "table": "timeline", "partition_key": ["user_id"], "clustering": ["tweet_id"],
           "columns": {"user_id": "source.author_id", "tweet_id": "source.tweet_id", "author_id": "source.author_id",
                       "body": "source.body"},
           "fanout": None, "mode": "lineage", "lineage_columns": ["author_id"]}
INDEX = {"keyspace": "twitter", "table": "async_join_twitter_timeline", "partition_key": ["m0"], "clustering": ["k0"],
         "columns": {"m0": "source.author_id", "k0": "source.tweet_id", "v0": "source.body"},
         "fanout": None, "mode": "lineage", "lineage_columns": ["author_id"], "join_index": True}
FOLLOWING = {"keyspace": "twitter", "table": "timeline", "partition_key": ["user_id"], "clustering": ["tweet_id"],
             "columns": {"user_id": "row.follower_id", "tweet_id": "source.tweet_id",
                         "author_id": "source.author_id", "body": "source.body"},
             "fanout": {"keyspace": "twitter", "table": "followers", "match": {"user_id": "source.author_id"},
                        "columns": ["follower_id"],
                        "follow": {"index": 1, "keyspace": "twitter", "table": "async_follows_twitter_timeline"}},
             "mode": "lineage", "lineage_columns": ["author_id"]}


def test_should_compile_the_twitter_flow_into_a_join_index_before_its_following_target_and_a_companion():
    main, companion = validate.compile_all([flow()], SCHEMA)
    assert main["targets"] == [OWN_ROW, INDEX, FOLLOWING]
    assert companion == {
        "name": "twitter_timeline_follows",
        "source": {"keyspace": "twitter", "table": "followers", "partition_key": ["user_id"],
                   "clustering": ["follower_id"], "columns": dict(FOLLOWERS.columns)},
        "events": ["delete", "insert", "update"],
        **{o: main[o] for o in ("read_consistency", "write_consistency", "queue", "page_size", "start_delay_ms",
                                "retry", "overflow", "backup")},
        "handler": None, "targets": [],
        "follows": {"flow": "twitter_timeline", "source": main["source"], "index": INDEX, "target": FOLLOWING}}
    assert json.loads(render.spec_json(companion)) == companion


def test_should_copy_the_main_flows_options_into_its_companion():
    main, companion = validate.compile_all([flow(read_consistency="QUORUM", page_size=50, events=("insert",))], SCHEMA)
    assert companion["read_consistency"] == "QUORUM" and companion["page_size"] == 50
    assert companion["events"] == ["delete", "insert", "update"] and main["events"] == ["insert"]


def test_should_make_the_following_target_and_its_table_lineage_with_the_index_at_its_position():
    keyed = flow(Write("twitter.own", user_id=source.author_id, tweet_id=source.tweet_id),
                 FanOut("twitter.followers", match={"user_id": source.author_id}, follow=True)
                 .write("twitter.timeline", user_id=row.follower_id, tweet_id=source.tweet_id, topics=source.topics))
    [main, _] = validate.compile_all([keyed], SCHEMA)
    assert [t["table"] for t in main["targets"]] == ["own", "async_join_twitter_timeline", "timeline"]
    assert main["targets"][2]["fanout"]["follow"]["index"] == 1 and main["targets"][2]["mode"] == "lineage"
    # the index holds the non-key source columns the target copies, not those of the match
    assert main["targets"][1]["columns"] == {"m0": "source.author_id", "k0": "source.tweet_id", "v0": "source.topics"}


def test_should_render_the_join_index_and_the_copy_before_the_flows():
    script = render.deploy_script(validate.compile_all([flow()], SCHEMA), 1, 1)
    join = ('CREATE TABLE IF NOT EXISTS "twitter"."async_join_twitter_timeline" (\n  "m0" bigint,\n  "k0" timeuuid,\n'
            '  "v0" text,\n  "async_version" bigint,\n  "async_gone" boolean,\n  PRIMARY KEY (("m0"), "k0"));')
    copy = ('CREATE TABLE IF NOT EXISTS "twitter"."async_follows_twitter_timeline" (\n  "user_id" bigint,\n'
            '  "follower_id" bigint,\n  "async_n" bigint,\n  "async_expires" bigint,\n  "async_gone" boolean,\n'
            '  PRIMARY KEY (("user_id"), "follower_id"));')
    assert join in script and copy in script
    assert script.index(copy) < script.index('INSERT INTO "async_triggers"."flows"')
    assert "-- flow twitter_timeline: twitter.tweets -> twitter.async_join_twitter_timeline, twitter.timeline" in script
    assert ("-- flow twitter_timeline_follows: twitter.followers -> twitter.async_follows_twitter_timeline, "
            "twitter.timeline") in script
    assert 'CREATE TABLE IF NOT EXISTS "twitter"."async_backup_followers"' in script
    assert 'CREATE TRIGGER IF NOT EXISTS "async_triggers" ON "twitter"."followers"' in script


def test_should_copy_the_fanout_columns_the_target_uses_and_capture_them():
    main, companion = validate.compile_all([flow(following(followed=row.since, **COLUMNS))], SCHEMA)
    assert capture_index.captured_columns(companion) == ["since"]
    assert capture_index.options_json([companion]) == (
        '{"twitter_timeline_follows":{"backup":true,"columns":["since"],"events":["delete","insert","update"]}}')
    assert capture_index.captured_columns(main) == ["author_id", "body"]
    script = render.deploy_script([main, companion], 1, 1)
    assert ('"twitter"."async_follows_twitter_timeline" (\n  "user_id" bigint,\n  "follower_id" bigint,\n'
            '  "since" timestamp,\n  "async_n" bigint,\n  "async_expires" bigint,\n') in script


def test_should_capture_no_value_of_a_fanout_table_the_target_uses_by_key_only():
    assert capture_index.captured_columns(validate.compile_all([flow()], SCHEMA)[1]) == []


def test_should_list_the_tables_each_flow_writes_and_let_a_flow_share_them_with_its_own_companion_only():
    main, companion = validate.compile_all([flow()], SCHEMA)
    assert aggregates.written_tables(main) == ["twitter.timeline", "twitter.async_join_twitter_timeline"]
    assert aggregates.written_tables(companion) == ["twitter.timeline", "twitter.async_follows_twitter_timeline"]
    validate.check_one_flow_per_target([main, companion])
    stranger = dict(companion, name="other_follows", follows=dict(companion["follows"], flow="other"))
    with pytest.raises(ValidationError, match="'twitter.async_follows_twitter_timeline' is also written by flow"):
        validate.check_one_flow_per_target([main, companion, stranger])
    copy = Flow(name="copy", source="twitter.own",
                steps=[Write("twitter.timeline", user_id=source.user_id, tweet_id=source.tweet_id)])
    rejects([flow(), copy], "flow 'copy': the target table 'twitter.timeline' is also written by flow(s) "
                            "'twitter_timeline', 'twitter_timeline_follows': a table is derived by one flow, whose "
                            "tasks alone decide its rows; give each flow a table of its own, or write both sources' "
                            "rows from one source table (a cascade into one flow)")


def test_should_refuse_a_cycle_through_the_companion():
    likes = schema.TableSchema("twitter", "likes", ("user_id",), ("tweet_id",), {"user_id": "bigint", "tweet_id": "timeuuid"})
    liked = flow(FanOut("twitter.likes", match={"user_id": source.author_id}, follow=True)
                 .write("twitter.timeline", user_id=row.user_id, tweet_id=source.tweet_id))
    back = Flow(name="back", source="twitter.timeline",
                steps=[Write("twitter.likes", user_id=source.user_id, tweet_id=source.tweet_id)])
    rejects([liked, back], "flow 'back': flows form a cycle: twitter.likes -> twitter.timeline -> twitter.likes "
                           "(flows: back, twitter_timeline_follows)", schema.of(TWEETS, likes, TIMELINE))


@pytest.mark.parametrize("columns, message", [
    (dict(COLUMNS, tags=source.tags),
     "copies 'source.tags' into column 'tags' of 'twitter.timeline', a non-frozen collection or user-defined type "
     "(set<text>) of 'twitter.tweets'"),
    (dict(COLUMNS, note=row.note),
     "copies 'row.note' into column 'note' of 'twitter.timeline', a static column of 'twitter.followers'"),
    (dict(COLUMNS, labels=row.labels),
     "copies 'row.labels' into column 'labels' of 'twitter.timeline', a non-frozen collection or user-defined type "
     "(list<text>) of 'twitter.followers'"),
])
def test_should_refuse_a_value_that_is_not_one_cell(columns, message):
    rejects(flow(following(**columns)), f"flow 'twitter_timeline': the following fan-out over 'twitter.followers' "
                                        f"{message}: a following fan-out copies single-cell values (keep it in a "
                                        "frozen or a regular column, or drop follow=True)")


def test_should_refuse_a_static_source_column():
    posts = schema.TableSchema("twitter", "posts", ("author_id",), ("tweet_id",),
                               {"author_id": "bigint", "tweet_id": "timeuuid", "body": "text"}, static=frozenset({"body"}))
    feed = schema.TableSchema("twitter", "feed", ("user_id",), ("author_id", "tweet_id"),
                              {"user_id": "bigint", "author_id": "bigint", "tweet_id": "timeuuid", "body": "text"})
    step = FanOut("twitter.followers", match={"user_id": source.author_id}, follow=True).write(
        "twitter.feed", user_id=row.follower_id, author_id=source.author_id, tweet_id=source.tweet_id, body=source.body)
    rejects(dataclasses.replace(flow(step), source="twitter.posts"),
            "flow 'twitter_timeline': the following fan-out over 'twitter.followers' copies 'source.body' into column "
            "'body' of 'twitter.feed', a static column of 'twitter.posts': a following fan-out copies single-cell "
            "values (keep it in a frozen or a regular column, or drop follow=True)", schema.of(posts, FOLLOWERS, feed))


def test_should_refuse_two_following_fanouts_in_one_flow():
    two = following().write("twitter.own", user_id=row.follower_id, tweet_id=source.tweet_id)
    rejects(flow(two), "flow 'twitter_timeline': a flow has at most one following fan-out (follow=True), found 2: "
                       "'twitter.followers' into 'twitter.timeline', 'twitter.followers' into 'twitter.own'; "
                       "follow in one flow per fan-out")


def test_should_refuse_table_names_longer_than_cassandra_allows(monkeypatch):
    monkeypatch.setattr(backup_map, "MAX_TABLE_NAME", 26)
    rejects(flow(), "flow 'twitter_timeline': the name of its following fan-out's join index "
                    "'twitter.async_join_twitter_timeline' is too long (27 characters, Cassandra allows 26); give "
                    "the flow a shorter name")
    monkeypatch.setattr(backup_map, "MAX_TABLE_NAME", 29)
    rejects(flow(), "flow 'twitter_timeline': the name of its following fan-out's copy of the fan-out table "
                    "'twitter.async_follows_twitter_timeline' is too long (30 characters, Cassandra allows 29); give "
                    "the flow a shorter name")


JOIN = schema.TableSchema("twitter", "async_join_twitter_timeline", ("m0",), ("k0",),
                          {"m0": "bigint", "k0": "timeuuid", "v0": "text", "async_version": "bigint",
                           "async_gone": "boolean"})
COPY = schema.TableSchema("twitter", "async_follows_twitter_timeline", ("user_id",), ("follower_id",),
                          {"user_id": "bigint", "follower_id": "bigint", "async_n": "bigint", "async_expires": "bigint",
                           "async_gone": "boolean"})


def test_should_accept_tables_of_the_expected_layout_and_refuse_others():
    assert validate.compile_all([flow()], schema.of(TWEETS, FOLLOWERS, TIMELINE, JOIN, COPY))
    wrong_join = dataclasses.replace(JOIN, columns=dict(JOIN.columns, v0="varchar", async_version="int"))
    with pytest.raises(ValidationError, match=r"the table 'twitter.async_join_twitter_timeline' exists but is not "
                                              r"the join index this following fan-out needs \(columns"):
        validate.compile_all([flow()], schema.of(TWEETS, FOLLOWERS, TIMELINE, wrong_join))
    moved = dataclasses.replace(COPY, partition_key=("follower_id",), clustering=("user_id",))
    rejects(flow(), "flow 'twitter_timeline': the table 'twitter.async_follows_twitter_timeline' exists but is not "
                    "the copy of the fan-out table this following fan-out needs (columns {'user_id': 'bigint', "
                    "'follower_id': 'bigint', 'async_n': 'bigint', 'async_expires': 'bigint', 'async_gone': 'boolean'}, "
                    "primary key ((follower_id), user_id); expected columns {'user_id': 'bigint', 'follower_id': "
                    "'bigint', 'async_n': 'bigint', 'async_expires': 'bigint', 'async_gone': 'boolean'}, primary key ((user_id), follower_id)); drop "
                    "it, the deploy creates it", schema.of(TWEETS, FOLLOWERS, TIMELINE, moved))


def test_should_refuse_another_target_of_the_table_with_other_columns():
    rejects(flow(Write("twitter.timeline", user_id=source.author_id, tweet_id=source.tweet_id), following()),
            "flow 'twitter_timeline': another target of the flow writes 'twitter.timeline', which its following "
            "fan-out writes, with other columns (tweet_id, user_id instead of author_id, body, tweet_id, user_id): "
            "the rows they share would be partly one step's and partly the other's; map the same columns")


def test_should_refuse_an_aggregate_into_the_table_of_the_following_fanout():
    totals = Aggregate("twitter.timeline", group_by={"user_id": source.author_id, "tweet_id": source.tweet_id},
                       count="author_id")
    rejects(flow(following(), totals), "flow 'twitter_timeline': an aggregate of the flow writes 'twitter.timeline', "
                                       "which its following fan-out writes: a table holds one step's rows; give the "
                                       "aggregate a table of its own")


def test_should_refuse_a_companion_named_like_another_flow():
    user = Flow(name="twitter_timeline_follows", source="twitter.tweets",
                steps=[Write("twitter.own", user_id=source.author_id, tweet_id=source.tweet_id)])
    message = ("flow 'twitter_timeline': its following fan-out needs a companion flow named "
               "'twitter_timeline_follows', which is the name of another flow; rename one of them")
    rejects([flow(), user], message)
    deployed = validate.compile_all([user], SCHEMA)[0]
    rejects(flow(), message, deployed={"twitter_timeline_follows": deployed})
    # its own companion, deployed before: replaced
    own = validate.compile_all([flow()], SCHEMA)
    assert validate.compile_all([flow()], SCHEMA, {s["name"]: s for s in own}) == own
    # a user flow named like a deployed flow's companion
    rejects(user, "flow 'twitter_timeline_follows': a deployed flow of this name is the companion of flow "
                  "'twitter_timeline' (its following fan-out): name this flow otherwise, or drop 'twitter_timeline' "
                  "first", deployed={s["name"]: s for s in own})


def test_should_refuse_a_follow_that_is_not_a_bool():
    rejects(flow(dataclasses.replace(following(), follow="yes")),
            "flow 'twitter_timeline': 'follow' of the fan-out over 'twitter.followers' must be True or False, "
            "found: 'yes'")


def test_should_refuse_a_counter_table_and_columns_the_copy_keeps_for_itself():
    counted = dataclasses.replace(FOLLOWERS, columns=dict(FOLLOWERS.columns, since="counter"))
    rejects(flow(), "flow 'twitter_timeline': the following fan-out's table 'twitter.followers' is a counter table "
                    "(column(s) since): no write to it carries its rows' values to follow",
            schema.of(TWEETS, counted, TIMELINE))
    clashing = dataclasses.replace(FOLLOWERS, clustering=("async_n",), columns={"user_id": "bigint", "async_n": "bigint"})
    step = FanOut("twitter.followers", match={"user_id": source.author_id}, follow=True).write(
        "twitter.timeline", user_id=row.async_n, **COLUMNS)
    rejects(flow(step), "flow 'twitter_timeline': the following fan-out's table 'twitter.followers' has column(s) "
                        "async_n, which its copy 'twitter.async_follows_twitter_timeline' keeps for itself",
            schema.of(TWEETS, clashing, TIMELINE))


def test_should_refuse_tables_named_like_ours():
    join = dataclasses.replace(OWN, name="async_join_x")
    rejects(flow(Write("twitter.async_join_x", user_id=source.author_id, tweet_id=source.tweet_id)),
            "flow 'twitter_timeline': target table 'twitter.async_join_x' is named like a following fan-out's join "
            "index: tables named 'async_join_<flow>' are reserved for the plugin", schema.of(TWEETS, join))


def test_should_leave_a_fanout_without_follow_as_it_was():
    plain = flow(Write("twitter.timeline", user_id=source.author_id, **COLUMNS),
                 FanOut("twitter.followers", match={"user_id": source.author_id})
                 .write("twitter.timeline", user_id=row.follower_id, **COLUMNS))
    [spec] = validate.compile_all([plain], SCHEMA)
    assert len(spec["targets"]) == 2 and "follow" not in spec["targets"][1]["fanout"]


# --- the companion's life with its flow ----------------------------------------------------------------------

class FakeSession:
    """Answers read_deployed with the given specs and every other read with nothing; records the rest."""

    def __init__(self, specs):
        self.specs = specs
        self.executed = []
        self.cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={"async_triggers": SimpleNamespace(tables={})},
                                                                cluster_name="fake"),
                                       contact_points=["127.0.0.1"], port=9042,
                                       control_connection=SimpleNamespace(wait_for_schema_agreement=lambda **_: True),
                                       refresh_schema_metadata=lambda: None)

    def execute(self, query, params=None, timeout=None):
        text = getattr(query, "query_string", query)
        if text.startswith('SELECT "name", "spec", "version"'):
            return [SimpleNamespace(name=s["name"], spec=json.dumps(s), version=1) for s in self.specs]
        if text.startswith("SELECT table_name FROM system_schema.tables"):
            return [SimpleNamespace(table_name=params[1])]
        if not text.startswith("SELECT"):
            self.executed.append((text, params))
        return []

    def prepare(self, cql):
        return SimpleNamespace(query_string=cql)


def test_should_drop_the_companion_with_its_flow_and_never_alone():
    session = FakeSession(validate.compile_all([flow()], SCHEMA))
    with pytest.raises(ConfigError, match="flow 'twitter_timeline_follows' is the companion of flow "
                                          "'twitter_timeline' .*: drop 'twitter_timeline', which drops it too"):
        deploy.drop(session, "twitter_timeline_follows")
    assert session.executed == []
    deploy.drop(session, "twitter_timeline")
    deletes = [p for q, p in session.executed if q.startswith('DELETE FROM "async_triggers"."flows"')]
    assert deletes == [("twitter_timeline_follows",), ("twitter_timeline",)]
    assert ('DROP TABLE IF EXISTS "twitter"."async_backup_followers"', None) in session.executed


def test_should_drop_a_companion_whose_flow_is_gone():
    session = FakeSession(validate.compile_all([flow()], SCHEMA)[1:])
    deploy.drop(session, "twitter_timeline_follows")
    assert [p for q, p in session.executed if q.startswith("DELETE")] == [("twitter_timeline_follows",)]


def test_should_drop_the_companion_of_a_flow_redeployed_without_its_following_fanout(monkeypatch):
    session = FakeSession(validate.compile_all([flow()], SCHEMA))
    plain = validate.compile_all([flow(Write("twitter.timeline", user_id=source.author_id, **COLUMNS))], SCHEMA)
    monkeypatch.setattr(deploy, "plan", lambda s, flows: plain)
    monkeypatch.setattr(deploy.status_mod, "paused_flows", lambda s: set())
    monkeypatch.setattr(deploy, "replication_for", lambda s, specs, r: {"dc1": 1})
    session.cluster.metadata.keyspaces = {}
    monkeypatch.setattr(deploy, "read_deployed", lambda s: {x["name"]: FlowSpec.parse(x) for x in session.specs})
    deploy.deploy(session, [], check_plugin=False)
    statements = [q for q, _ in session.executed]
    dropped = statements.index('DELETE FROM "async_triggers"."flows" WHERE "name" = %s')
    assert session.executed[dropped][1] == ("twitter_timeline_follows",)
    assert dropped < next(i for i, q in enumerate(statements) if q.startswith('INSERT INTO "async_triggers"."flows"'))
    assert not any(q.startswith('DROP TABLE IF EXISTS "twitter"."async_backup_tweets"') for q in statements)


def test_should_uninstall_a_companion_with_its_flow(monkeypatch):
    dropped = []
    specs = {s["name"]: FlowSpec.parse(s) for s in validate.compile_all([flow()], SCHEMA)}
    monkeypatch.setattr(deploy, "read_deployed", lambda s: specs)
    monkeypatch.setattr(deploy, "drop", lambda s, name, progress: dropped.append(name))
    removed = uninstall.uninstall(FakeSession([]))
    assert dropped == ["twitter_timeline"] and removed.flows == ("twitter_timeline", "twitter_timeline_follows")


def drop_command(monkeypatch, held: dict, *args):
    """`ctl trigger drop` on the compiled Twitter flow, with what each flow holds; returns (result, calls)."""
    specs = {s["name"]: FlowSpec.parse(s) for s in validate.compile_all([flow()], SCHEMA)}
    calls = []
    monkeypatch.setattr(cli_trigger, "acting_on", contextlib.contextmanager(lambda settings, what: (yield object())))
    monkeypatch.setattr(deploy, "require_deployed", lambda session, names: specs)
    monkeypatch.setattr(drop_guard, "read_holdings", lambda session, name: (
        calls.append(("read", name)), drop_guard.Holdings(name, {}, held.get(name, 0)))[1])
    monkeypatch.setattr(deploy, "drop", lambda session, name, progress: calls.append(("drop", name)))
    monkeypatch.setattr(dlq, "purge", lambda session, name, everything: calls.append(("purge", name)))
    cli._register()
    return CliRunner().invoke(cli.app, ["trigger", "drop", *args], env={"COLUMNS": "250"}), calls


def test_should_refuse_to_drop_a_companion_alone_from_the_command_line(monkeypatch):
    result, calls = drop_command(monkeypatch, {}, "twitter_timeline_follows")
    assert result.exit_code == 2 and "drop 'twitter_timeline', which drops it too" in result.output
    assert calls == []


def test_should_guard_and_discard_what_the_companion_holds_with_its_flow(monkeypatch):
    result, calls = drop_command(monkeypatch, {"twitter_timeline_follows": 1}, "twitter_timeline")
    assert result.exit_code == 1 and "flow 'twitter_timeline_follows' still holds 1 dead letter(s)" in result.output
    assert ("drop", "twitter_timeline") not in calls
    result, calls = drop_command(monkeypatch, {"twitter_timeline_follows": 1}, "twitter_timeline",
                                 "--discard-pending", "--yes", "--json")
    assert result.exit_code == 0, result.output
    assert calls[-2:] == [("drop", "twitter_timeline"), ("purge", "twitter_timeline_follows")]
    out = json.loads(result.output)
    assert out["dropped"] == "twitter_timeline" and out["discarded"] is None
    assert out["companion"]["dropped"] == "twitter_timeline_follows"
    assert out["companion"]["discarded"]["dead_letters"] == 1


def test_should_refuse_a_target_keyed_by_a_non_key_column_of_the_fan_out_table():
    by_since = schema.TableSchema("twitter", "by_since", ("since",), ("tweet_id",),
                                  {"since": "timestamp", "tweet_id": "timeuuid"})
    bad = flow(FanOut("twitter.followers", match={"user_id": source.author_id}, follow=True)
               .write("twitter.by_since", since=row.since, tweet_id=source.tweet_id))
    with pytest.raises(ValidationError, match="a non-key column of the following fan-out's table 'twitter.followers'"):
        validate.compile_all([bad], schema.of(TWEETS, FOLLOWERS, by_since))


def test_should_refuse_turning_follow_on_or_off_for_a_deployed_flow():
    [main, companion] = validate.compile_all([flow()], SCHEMA)
    plain = Flow(name="twitter_timeline", source="twitter.tweets",
                 steps=[FanOut("twitter.followers", match={"user_id": source.author_id})
                        .write("twitter.timeline", user_id=row.follower_id, tweet_id=source.tweet_id,
                               author_id=source.author_id, body=source.body)])
    with pytest.raises(ValidationError, match="drop the flow .ctl trigger drop twitter_timeline., deploy it again"):
        validate.compile_all([plain], SCHEMA, deployed={main["name"]: main, companion["name"]: companion})
    [plain_spec] = validate.compile_all([plain], SCHEMA)
    with pytest.raises(ValidationError, match="does not follow its table and this version's does"):
        validate.compile_all([flow()], SCHEMA, deployed={plain_spec["name"]: plain_spec})
    # the same follow again: accepted
    assert len(validate.compile_all([flow()], SCHEMA, deployed={main["name"]: main, companion["name"]: companion})) == 2


def test_should_compile_a_recency_bound_and_refuse_one_that_could_not_be_kept():
    import datetime as dt

    from async_triggers.flows import Recent
    week = Recent(source.tweet_id, dt.timedelta(days=7))
    bounded = dataclasses.replace(following(), recent=week)
    main, companion = validate.compile_all([flow(Write("twitter.timeline", user_id=source.author_id, **COLUMNS),
                                                 bounded)], SCHEMA)
    recent = {"column": "tweet_id", "type": "timeuuid", "target_column": "tweet_id", "seconds": 7 * 86400}
    assert main["targets"][2]["fanout"]["follow"]["recent"] == recent
    assert companion["follows"]["target"]["fanout"]["follow"]["recent"] == recent
    # the bound only on a fan-out that follows, from a time that is the source's key (which a lineage target's key holds)
    rejects(flow(dataclasses.replace(bounded, follow=False)),
            "flow 'twitter_timeline': the fan-out over 'twitter.followers' into 'twitter.timeline' has a recency bound "
            "(recent=) but does not follow its table: the bound is kept for a fan-out with follow=True")
    rejects(flow(dataclasses.replace(bounded, recent=Recent(source.created_at, 60))),
            "flow 'twitter_timeline': the recency bound of the fan-out over 'twitter.followers' counts from "
            "source.created_at, which must be a timeuuid or timestamp column of the primary key of 'twitter.tweets' "
            "(found: timestamp, not in its primary key): a row's time must never change, so that every write of its "
            "rows ends at one time")
    for bad, says in ((Recent(source.tweet_id, 0), "between 1 second and 20 years"),
                      (Recent(source.tweet_id, "7d"), "must be a timedelta or a number of seconds"),
                      (Recent(row.follower_id, 60), "'steps[1].recent.by' must be source.<column>"),
                      ("7 days", "must be Recent(source.<time key column>, timedelta(...)) or None")):
        with pytest.raises(ValidationError) as e:
            validate.compile_all([flow(Write("twitter.timeline", user_id=source.author_id, **COLUMNS),
                                       dataclasses.replace(bounded, recent=bad))], SCHEMA)
        assert says in str(e.value), str(e.value)
