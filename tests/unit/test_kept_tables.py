"""The tables the plugin keeps for a flow (an aggregate's members, a following fan-out's join index and copy) say
what the flow saw while it ran: a drop removes them, and a deploy drops those an earlier deploy left before making
them anew, so that rows deleted or moved, or follows removed, while no flow ran are never counted or fanned out to."""
from types import SimpleNamespace

from async_triggers import aggregates, deploy, validate
from test_aggregate_steps import SCHEMA as ORDERS_SCHEMA, aggregate, flow as orders_flow
from test_follow_steps import SCHEMA as TWITTER_SCHEMA, flow as timeline_flow


def metadata(*tables: tuple[str, str]):
    keyspaces = {}
    for ks, t in tables:
        keyspaces.setdefault(ks, SimpleNamespace(tables={})).tables[t] = object()
    return SimpleNamespace(keyspaces=keyspaces)


def test_should_name_the_members_join_index_and_copy_of_a_flow():
    [totals] = validate.compile_all([orders_flow(aggregate())], ORDERS_SCHEMA)
    assert aggregates.kept_tables(totals) == [("shop", "async_members_totals")]
    main, companion = validate.compile_all([timeline_flow()], TWITTER_SCHEMA)
    assert aggregates.kept_tables(main) == [("twitter", "async_join_twitter_timeline"),
                                            ("twitter", "async_follows_twitter_timeline")]
    assert aggregates.kept_tables(companion) == [("twitter", "async_follows_twitter_timeline")]


def test_should_drop_before_a_deploy_only_what_no_deployed_flow_keeps():
    [totals] = validate.compile_all([orders_flow(aggregate())], ORDERS_SCHEMA)
    left = metadata(("shop", "async_members_totals"))
    assert deploy.stale_kept_tables(left, [totals], {}) == [("shop", "async_members_totals")]      # dropped before
    assert deploy.stale_kept_tables(left, [totals], {"totals": totals}) == []                      # a redeploy
    assert deploy.stale_kept_tables(metadata(), [totals], {}) == []                                # a first deploy
