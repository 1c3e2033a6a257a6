"""The closed contract on the session's real 3-node cluster (RF 2): the shapes a deploy accepts end exact, the ones it
cannot keep exact are refused with a message (docs/design.md, "Write shapes" and "Lineage").

- collections and UDTs (set, map, list, a non-frozen UDT and a frozen set) copied through element additions, removals,
  element deletes, overwrites, nulls and element TTLs, on sources with and without clustering columns, and a list
  that two targets write into one row;
- an index whose key column becomes the empty string (no row, as for a null) and then a name again;
- every key shape a materialized view allows: a target partitioned by a source clustering column under range and
  partition deletes, and a cascade from an index into a second index keyed by the first's clustering column;
- the Twitter flow (a direct write and a fan-out into one table) under late stamps: a tweet's author changed, then its
  body edited with a timestamp between the insert and the author change, and random histories of the same shape;
- two flows writing one table: refused at deploy, naming both.

Each case has tables and flows of its own in keyspace ``contract``, deployed once; the verify job
(tests/verifier.py) must find nothing wrong, and each case also states the rows it expects.
"""
from __future__ import annotations

import random
import time

import pytest

from helpers import create_empty, create_schema, deploy_flow_text, drain, run_ctl
from verifier import shared

KS = "contract"
SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TYPE IF NOT EXISTS {KS}.address (street text, city text);
CREATE TABLE IF NOT EXISTS {KS}.items (id int PRIMARY KEY, tags set<text>, attrs map<text, int>, notes list<text>,
  addr address, fixed frozen<set<text>>, label text);
CREATE TABLE IF NOT EXISTS {KS}.items_copy (id int PRIMARY KEY, tags set<text>, attrs map<text, int>,
  notes list<text>, addr address, fixed frozen<set<text>>, label text);
CREATE TABLE IF NOT EXISTS {KS}.bags (b int, i int, tags set<text>, PRIMARY KEY (b, i));
CREATE TABLE IF NOT EXISTS {KS}.bags_copy (b int, i int, tags set<text>, PRIMARY KEY (b, i));
CREATE TABLE IF NOT EXISTS {KS}.people (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.people_by_name (name text, id int, email text, PRIMARY KEY (name, id));
CREATE TABLE IF NOT EXISTS {KS}.people_by_id (id int, name text, email text, PRIMARY KEY (id, name));
CREATE TABLE IF NOT EXISTS {KS}.visits (site int, day int, n int, PRIMARY KEY (site, day));
CREATE TABLE IF NOT EXISTS {KS}.visits_by_day (day int, site int, n int, PRIMARY KEY (day, site));
CREATE TABLE IF NOT EXISTS {KS}.tweets (tweet_id int PRIMARY KEY, author_id int, body text);
CREATE TABLE IF NOT EXISTS {KS}.followers (user_id int, follower_id int, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS {KS}.timeline (user_id int, tweet_id int, author_id int, body text,
  PRIMARY KEY (user_id, tweet_id));
CREATE TABLE IF NOT EXISTS {KS}.admins (id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.lists (id int PRIMARY KEY, n int, l list<int>);
CREATE TABLE IF NOT EXISTS {KS}.lists_both (u int, id int, l list<int>, PRIMARY KEY (u, id));
CREATE TABLE IF NOT EXISTS {KS}.shelves (k int, r text, n int, l list<int>, m map<text, int>, PRIMARY KEY (k, r));
CREATE TABLE IF NOT EXISTS {KS}.shelves_copy (k int, r text, n int, l list<int>, m map<text, int>, PRIMARY KEY (k, r));
"""
TABLES = ["items", "items_copy", "bags", "bags_copy", "people", "people_by_name", "people_by_id", "visits",
          "visits_by_day", "tweets", "followers", "timeline", "admins", "lists", "lists_both", "shelves",
          "shelves_copy"]
FLOWS = f"""
from async_triggers.flows import FanOut, Flow, Write, row, source as s

TIMELINE = dict(tweet_id=s.tweet_id, author_id=s.author_id, body=s.body)
FLOWS = [
    Flow(name="contract_items", source="{KS}.items", steps=[Write("{KS}.items_copy", id=s.id, tags=s.tags,
         attrs=s.attrs, notes=s.notes, addr=s.addr, fixed=s.fixed, label=s.label)]),
    Flow(name="contract_bags", source="{KS}.bags", steps=[Write("{KS}.bags_copy", b=s.b, i=s.i, tags=s.tags)]),
    Flow(name="contract_people", source="{KS}.people", steps=[Write("{KS}.people_by_name", name=s.name, id=s.id,
         email=s.email)]),
    Flow(name="contract_people_by_id", source="{KS}.people_by_name", steps=[Write("{KS}.people_by_id", id=s.id,
         name=s.name, email=s.email)]),
    Flow(name="contract_visits", source="{KS}.visits", steps=[Write("{KS}.visits_by_day", day=s.day, site=s.site,
         n=s.n)]),
    Flow(name="contract_lists", source="{KS}.lists", steps=[Write("{KS}.lists_both", u=s.id, id=s.id, l=s.l),
                                                           Write("{KS}.lists_both", u=s.n, id=s.id, l=s.l)]),
    Flow(name="contract_shelves", source="{KS}.shelves", steps=[Write("{KS}.shelves_copy", k=s.k, r=s.r, n=s.n,
                                                                       l=s.l, m=s.m)]),
    Flow(name="contract_timeline", source="{KS}.tweets", steps=[
        Write("{KS}.timeline", user_id=s.author_id, **TIMELINE),
        FanOut("{KS}.followers", match={{"user_id": s.author_id}}).write("{KS}.timeline", user_id=row.follower_id,
                                                                            **TIMELINE)]),
]
"""
FLOW_NAMES = ("contract_items", "contract_bags", "contract_people", "contract_people_by_id", "contract_visits",
              "contract_lists", "contract_shelves", "contract_timeline")
T0 = 1_000_000   # explicit timestamps (microseconds; far below any client's clock)
FOLLOWERS = {1: (10, 11, 12), 2: (11, 12, 13, 14), 3: (10, 14)}


@pytest.fixture(scope="module")
def verifier(cluster_settings):
    return shared(cluster_settings)


@pytest.fixture(scope="module")
def flows(cluster_settings, tmp_path_factory, verifier):
    create_empty(cluster_settings, SCHEMA, KS, TABLES)
    create_schema(cluster_settings, "\n".join(f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES ({u}, {f});"
                                              for u, fs in FOLLOWERS.items() for f in fs))
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("contract"), FLOWS)


def execute(session, cql: str, args=(), consistency: str = "QUORUM"):
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    return session.execute(SimpleStatement(cql, consistency_level=getattr(ConsistencyLevel, consistency)), args)


def rows_at_all(session, table: str, columns: str) -> set[tuple]:
    return {tuple(freeze(v) for v in r) for r in execute(session, f"SELECT {columns} FROM {KS}.{table}", consistency="ALL")}


def freeze(value):
    """A row's value as a set member: collections and UDTs as tuples."""
    if isinstance(value, (set, frozenset)) or type(value).__name__ == "SortedSet":
        return tuple(sorted(value))
    if isinstance(value, dict) or type(value).__name__ == "OrderedMapSerializedKey":
        return tuple(sorted(value.items()))
    if isinstance(value, list):
        return tuple(value)
    if hasattr(value, "_fields"):
        return tuple(value)
    return value


def assert_derives(verifier, flows: tuple[str, ...], got: set, want: set) -> None:
    problems = verifier.problems(*flows)
    if got != want:
        problems.append(f"unexpected {sorted(got - want, key=str)[:10]}, missing {sorted(want - got, key=str)[:10]}")
    assert not problems, "\n".join(problems)


# --- collections and UDTs ---------------------------------------------------------------------------------------

def test_should_copy_collections_and_udts_through_every_element_change(flows, verifier, session):
    columns = "id, tags, attrs, notes, addr, fixed, label"
    w = lambda cql, *args: execute(session, f"UPDATE {KS}.items {cql}", args)
    execute(session, f"INSERT INTO {KS}.items (id, tags, attrs, notes, addr, fixed, label) VALUES "
                     "(1, {'a', 'b'}, {'x': 1, 'y': 2}, ['n1', 'n2'], {street: 's1', city: 'c1'}, {'f1'}, 'one')")
    w("SET tags = tags + {'y'} WHERE id = 2")                     # a row made by an element addition alone
    w("SET tags = tags - {'a'}, attrs['z'] = 3 WHERE id = 1")
    execute(session, f"DELETE attrs['x'] FROM {KS}.items WHERE id = 1")
    w("SET notes = notes + ['n3'], notes[0] = 'n0' WHERE id = 1")
    w("SET notes = ['p'] + notes WHERE id = 1")
    w("SET addr.city = 'c2' WHERE id = 1")
    execute(session, f"INSERT INTO {KS}.items (id, tags, label) VALUES (3, {{'t'}}, 'three')")
    w("SET tags = {'u', 'v'}, attrs = null WHERE id = 3")          # an overwrite, and a null
    w("SET tags = tags + {'late'} WHERE id = 3")
    execute(session, f"INSERT INTO {KS}.items (id, fixed) VALUES (4, {{'g1', 'g2'}})")
    execute(session, f"UPDATE {KS}.items USING TIMESTAMP {T0} SET tags = tags + {{'old'}} WHERE id = 4")
    expires = time.monotonic() + 12
    w("USING TTL 12 SET tags = tags + {'brief'}, attrs = attrs + {'brief': 9} WHERE id = 1")
    w("USING TTL 12 SET notes = notes + ['brief'] WHERE id = 1")
    drain(session, "contract_items")
    want = rows_at_all(session, "items", columns)
    row1 = next(r for r in want if r[0] == 1)
    assert row1[1] == ("b", "brief") and dict(row1[2]) == {"y": 2, "z": 3, "brief": 9}, row1
    assert row1[3] == ("p", "n0", "n2", "n3", "brief") and row1[4] == ("s1", "c2"), row1
    if time.monotonic() < expires - 1:   # before the elements with a TTL expire (the Spark check comes after)
        assert rows_at_all(session, "items_copy", columns) == want
    time.sleep(max(0.0, expires - time.monotonic()) + 1)
    # they expired in the source and in the copy, element by element, while the rest stays
    want = rows_at_all(session, "items", columns)
    assert next(r for r in want if r[0] == 1)[1] == ("b",)
    assert_derives(verifier, ("contract_items",), rows_at_all(session, "items_copy", columns), want)


def test_should_copy_a_set_emptied_element_by_element_on_a_clustered_source(flows, verifier, session):
    execute(session, f"INSERT INTO {KS}.bags (b, i, tags) VALUES (1, 1, {{'a', 'b'}})")
    execute(session, f"INSERT INTO {KS}.bags (b, i, tags) VALUES (1, 2, {{'c'}})")
    execute(session, f"UPDATE {KS}.bags SET tags = tags - {{'a'}} WHERE b = 1 AND i = 1")
    execute(session, f"UPDATE {KS}.bags SET tags = tags - {{'b'}} WHERE b = 1 AND i = 1")
    execute(session, f"UPDATE {KS}.bags SET tags = tags + {{'d'}} WHERE b = 2 AND i = 1")
    execute(session, f"UPDATE {KS}.bags SET tags = tags - {{'d'}} WHERE b = 2 AND i = 1")   # a row gone with its last element
    drain(session, "contract_bags")
    want = {(1, 1, None), (1, 2, ("c",))}
    assert rows_at_all(session, "bags", "b, i, tags") == want
    assert_derives(verifier, ("contract_bags",), rows_at_all(session, "bags_copy", "b, i, tags"), want)


def test_should_write_a_list_once_into_a_row_two_targets_derive(flows, verifier, session):
    # rows (u=1, id=1): the first target's (u = id) and, while n = 1, the second's too; a list written through CQL
    # twice gets its elements twice (each write gives them new positions)
    execute(session, f"INSERT INTO {KS}.lists (id, n, l) VALUES (1, 1, [3, 2, 1])")
    execute(session, f"INSERT INTO {KS}.lists (id, n, l) VALUES (2, 7, [5])")
    execute(session, f"UPDATE {KS}.lists SET l = l + [4] WHERE id = 1")
    execute(session, f"UPDATE {KS}.lists USING TTL 600 SET l = [6] + l WHERE id = 2")
    drain(session, "contract_lists")
    want = {(1, 1, (3, 2, 1, 4)), (2, 2, (6, 5)), (7, 2, (6, 5))}
    assert_derives(verifier, ("contract_lists",), rows_at_all(session, "lists_both", "u, id, l"), want)


def test_should_empty_a_list_set_to_null_in_a_batch_beside_another_row_of_its_partition(flows, verifier, session):
    execute(session, f"BEGIN UNLOGGED BATCH UPDATE {KS}.shelves USING TIMESTAMP {T0 + 21_000} SET l = [3, 1] "
                     f"WHERE k = 4 AND r = 'd'; INSERT INTO {KS}.shelves (k, r, n, l, m) VALUES (4, 'd', 1, [1, 3], "
                     f"{{'x': 3}}) USING TIMESTAMP {T0 + 23_000}; APPLY BATCH", consistency="ONE")
    execute(session, f"INSERT INTO {KS}.shelves (k, r, l) VALUES (4, 'a', [3]) USING TIMESTAMP {T0 + 25_000}",
            consistency="ONE")
    drain(session, "contract_shelves")
    execute(session, f"BEGIN BATCH UPDATE {KS}.shelves USING TIMESTAMP {T0 + 40_000} SET l = null WHERE k = 4 AND "
                     f"r = 'd'; INSERT INTO {KS}.shelves (k, r, n, m) VALUES (4, 'a', 2, {{'y': 2}}) USING TIMESTAMP "
                     f"{T0 + 41_000}; APPLY BATCH")
    drain(session, "contract_shelves")
    want = {(4, "a", 2, (3,), (("y", 2),)), (4, "d", 1, None, (("x", 3),))}
    assert rows_at_all(session, "shelves", "k, r, n, l, m") == want
    assert_derives(verifier, ("contract_shelves",), rows_at_all(session, "shelves_copy", "k, r, n, l, m"), want)


# --- empty key values, and every key shape a view allows -------------------------------------------------------

def test_should_derive_no_row_for_an_empty_name_and_go_on_converging(flows, verifier, session):
    execute(session, f"INSERT INTO {KS}.people (id, name, email) VALUES (1, 'ann', 'a@x')")
    execute(session, f"INSERT INTO {KS}.people (id, name, email) VALUES (2, 'bea', 'b@x')")
    execute(session, f"UPDATE {KS}.people SET name = '' WHERE id = 1")
    drain(session, "contract_people", "contract_people_by_id")
    assert rows_at_all(session, "people_by_name", "name, id") == {("bea", 2)}
    execute(session, f"UPDATE {KS}.people SET name = 'cy' WHERE id = 1")
    execute(session, f"UPDATE {KS}.people SET name = '' WHERE id = 2")
    execute(session, f"UPDATE {KS}.people SET name = 'dee' WHERE id = 2")
    drain(session, "contract_people", "contract_people_by_id")
    want = {("cy", 1, "a@x"), ("dee", 2, "b@x")}
    assert_derives(verifier, ("contract_people",), rows_at_all(session, "people_by_name", "name, id, email"), want)
    # the cascade: the index's own index, keyed by its clustering column, follows the renames and their deletes
    assert_derives(verifier, ("contract_people_by_id",), rows_at_all(session, "people_by_id", "name, id, email"), want)
    letters = execute(session, "SELECT error FROM async_triggers.dead_letters WHERE flow IN "
                               "('contract_people', 'contract_people_by_id')", consistency="QUORUM")
    assert [r.error for r in letters] == [], "no dead letter ('Key may not be empty' before)"


def test_should_keep_a_target_partitioned_by_a_source_clustering_column_through_range_and_partition_deletes(
        flows, verifier, session):
    for site in (1, 2, 3):
        for day in range(1, 8):
            execute(session, f"INSERT INTO {KS}.visits (site, day, n) VALUES ({site}, {day}, {site * 10 + day})")
    execute(session, f"DELETE FROM {KS}.visits WHERE site = 1 AND day >= 2 AND day < 5")
    execute(session, f"DELETE FROM {KS}.visits WHERE site = 2")
    execute(session, f"DELETE FROM {KS}.visits WHERE site = 3 AND day > 6")
    execute(session, f"INSERT INTO {KS}.visits (site, day, n) VALUES (2, 4, 99)")   # back after the partition delete
    drain(session, "contract_visits")
    want = {(1, d, 10 + d) for d in (1, 5, 6, 7)} | {(2, 4, 99)} | {(3, d, 30 + d) for d in range(1, 7)}
    assert rows_at_all(session, "visits", "site, day, n") == want
    assert_derives(verifier, ("contract_visits",), rows_at_all(session, "visits_by_day", "site, day, n"), want)


# --- the Twitter flow under late stamps ---------------------------------------------------------------------------

def timeline_of(session) -> set[tuple]:
    return rows_at_all(session, "timeline", "user_id, tweet_id, author_id, body")


def expected_timeline(session) -> set[tuple]:
    out = set()
    for tweet_id, author, body in rows_at_all(session, "tweets", "tweet_id, author_id, body"):
        if author is not None:
            out |= {(u, tweet_id, author, body) for u in (author, *FOLLOWERS.get(author, ()))}
    return out


def test_should_give_every_timeline_row_the_body_edited_with_a_stamp_between_the_insert_and_the_author_change(
        flows, verifier, session):
    execute(session, f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES (1, 1, 'first') USING TIMESTAMP {T0}")
    execute(session, f"UPDATE {KS}.tweets USING TIMESTAMP {T0 + 2000} SET author_id = 2 WHERE tweet_id = 1")
    # a client whose clock is 1 ms behind: its edit is older than the author change, newer than the insert
    execute(session, f"UPDATE {KS}.tweets USING TIMESTAMP {T0 + 1000} SET body = 'edited' WHERE tweet_id = 1")
    drain(session, "contract_timeline")
    rows = {r for r in timeline_of(session) if r[1] == 1}
    assert rows == {(u, 1, 2, "edited") for u in (2, 11, 12, 13, 14)}
    assert_derives(verifier, ("contract_timeline",), timeline_of(session), expected_timeline(session))


def test_should_derive_the_timeline_of_random_histories_with_late_and_equal_stamps(flows, verifier, session):
    rng = random.Random(37)
    for step in range(240):
        tweet = 100 + rng.randrange(12)
        ts = T0 + 1000 * rng.randrange(1, 9)   # eight stamps: ties, and writes older than ones applied before them
        kind = rng.randrange(6)
        if kind == 0:
            cql = (f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES ({tweet}, {rng.randrange(1, 5)}, "
                   f"'b{step}') USING TIMESTAMP {ts}")
        elif kind == 1:
            cql = f"UPDATE {KS}.tweets USING TIMESTAMP {ts} SET author_id = {rng.randrange(1, 5)} WHERE tweet_id = {tweet}"
        elif kind == 2:
            cql = f"UPDATE {KS}.tweets USING TIMESTAMP {ts} SET body = 'e{step}' WHERE tweet_id = {tweet}"
        elif kind == 3:
            cql = f"UPDATE {KS}.tweets USING TIMESTAMP {ts} SET author_id = null WHERE tweet_id = {tweet}"
        elif kind == 4:
            cql = f"UPDATE {KS}.tweets USING TIMESTAMP {ts} SET body = null WHERE tweet_id = {tweet}"
        else:
            cql = f"DELETE FROM {KS}.tweets USING TIMESTAMP {ts} WHERE tweet_id = {tweet}"
        execute(session, cql, consistency=rng.choice(("ONE", "QUORUM", "ALL")))
    drain(session, "contract_timeline")
    assert_derives(verifier, ("contract_timeline",), timeline_of(session), expected_timeline(session))


# --- refused ------------------------------------------------------------------------------------------------------

def test_should_refuse_a_second_flow_into_a_table_another_flow_writes(flows, cluster_settings, tmp_path):
    flow_file = tmp_path / "admins.py"
    flow_file.write_text(f'''
from async_triggers.flows import Flow, Write, source as s
FLOWS = [Flow(name="contract_admins", source="{KS}.admins",
              steps=[Write("{KS}.people_by_name", name=s.name, id=s.id, email=s.email)])]
''')
    result = run_ctl(cluster_settings, "trigger", "deploy", str(flow_file))
    assert result.returncode != 0
    assert ("the target table 'contract.people_by_name' is also written by flow(s) 'contract_people'"
            in result.stderr), result.stderr
