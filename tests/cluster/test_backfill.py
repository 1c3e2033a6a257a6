"""Backfill on a real cluster: rows written before their flow was deployed get their derived rows, at the source's
own write timestamp and remaining TTL; a crashed backfill resumes and skips the ranges it recorded; live updates
racing the backfill win and converge (lineage); a later live update of a backfilled row replaces its derived row;
`ctl trigger deploy --backfill` deploys and backfills; `ctl verify` finds nothing missing or unexpected."""
import datetime as dt
import json
import subprocess
import sys
import time

import pytest

from async_triggers.spark_jobs import ring
from async_triggers.spark_jobs.source_rows import LINEAGE_TTL_GRACE_SECONDS
from helpers import ROOT, create_schema, deploy_flow_text, drain, run_ctl, verify_ctl

KS = "bfill"
USERS_FLOW, TIMELINE_FLOW = "bf_users_by_name", "bf_timeline"
N_USERS, N_TWEETS = 120, 45
FOLLOWERS = {1: list(range(100, 140)), 2: [200, 201, 202], 3: []}
RACED = list(range(0, N_USERS, 12))          # renamed while the resumed backfill holds its (older) snapshot
DELETED = [5, 17]                            # deleted meanwhile
LATER = 7                                    # renamed after the backfill is done
# names of 30,000 characters: their lineage entries (the name is their image) are larger than Cassandra lets a batch
# of several partitions be (batch_size_fail_threshold, 50 KiB), so the backfill must not batch two of them together
LONG = range(90, 114)


def _name(i: int) -> str:
    return f"n{i}" + ("x" * 30_000 if i in LONG else "")

SCHEMA = f"""
CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}};
CREATE TABLE IF NOT EXISTS {KS}.users (user_id int PRIMARY KEY, name text, email text);
CREATE TABLE IF NOT EXISTS {KS}.users_by_name (name text, user_id int, email text, PRIMARY KEY (name, user_id));
CREATE TABLE IF NOT EXISTS {KS}.tweets (tweet_id int PRIMARY KEY, author_id int, body text);
CREATE TABLE IF NOT EXISTS {KS}.followers (user_id int, follower_id int, PRIMARY KEY (user_id, follower_id));
CREATE TABLE IF NOT EXISTS {KS}.timeline (
  user_id int, tweet_id int, author_id int, body text, PRIMARY KEY (user_id, tweet_id));
"""

USERS_FLOW_FILE = f"""
from async_triggers.flows import Flow, Write, source
FLOWS = [Flow(name="{USERS_FLOW}", source="{KS}.users",
              steps=[Write("{KS}.users_by_name", name=source.name, user_id=source.user_id, email=source.email)])]
"""

TIMELINE_FLOW_FILE = f"""
from async_triggers.flows import FanOut, Flow, Write, row, source
COLUMNS = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)
FLOWS = [Flow(name="{TIMELINE_FLOW}", source="{KS}.tweets", steps=[
    Write("{KS}.timeline", user_id=source.author_id, **COLUMNS),
    FanOut("{KS}.followers", match={{"user_id": source.author_id}}).write("{KS}.timeline", user_id=row.follower_id,
                                                                          **COLUMNS)])]
"""


def _ttl(i: int) -> str:
    return " USING TTL 3600" if i % 4 == 0 else ""


@pytest.fixture(scope="module")
def old_rows(cluster_settings, tmp_path_factory):
    """Users, followers and tweets written before any flow on them exists; the users flow deployed afterwards."""
    from cassandra.concurrent import execute_concurrent
    from async_triggers.cql import connect
    create_schema(cluster_settings, SCHEMA)
    with connect(cluster_settings) as s:
        statements = [(f"INSERT INTO {KS}.users (user_id, name, email) VALUES (%s, %s, %s){_ttl(i)}",
                       (i, _name(i), f"u{i}@example.org")) for i in range(N_USERS)]
        statements += [(f"INSERT INTO {KS}.followers (user_id, follower_id) VALUES (%s, %s)", (a, f))
                       for a, fs in FOLLOWERS.items() for f in fs]
        statements += [(f"INSERT INTO {KS}.tweets (tweet_id, author_id, body) VALUES (%s, %s, %s){_ttl(j)}",
                        (j, j % 3 + 1, f"tweet {j}")) for j in range(N_TWEETS)]
        execute_concurrent(s, statements, concurrency=32, raise_on_first_error=True)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("users_flow"), USERS_FLOW_FILE)
    return tmp_path_factory.mktemp("backfill")


def _job(settings, *args: str) -> list[str]:
    return [sys.executable, "-m", "async_triggers.spark_jobs.backfill", "--contact-points",
            ",".join(settings.contact_points), "--master", "local[2]", *args]


def _verify(settings, flow: str) -> dict:
    result = verify_ctl(settings, flow)
    assert result.returncode in (0, 1), result.stdout + result.stderr     # 1: rows are missing
    [table] = json.loads(result.stdout.strip().splitlines()[-1])
    return table


def _checkpoints(session, flow: str) -> list:
    return list(session.execute("SELECT run, range_start, source_rows, done_at FROM async_triggers.backfill_progress "
                                "WHERE flow = %s", (flow,)))


def _index(session) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for r in session.execute(f"SELECT name, user_id FROM {KS}.users_by_name"):
        out.setdefault(r.user_id, set()).add(r.name)
    return out


def test_should_compute_the_tokens_cassandra_computes(old_rows, session):
    from async_triggers.spark_jobs import ring
    for r in session.execute(f"SELECT user_id, token(user_id) AS t FROM {KS}.users LIMIT 20"):
        assert ring.token([r.user_id], ["int"]) == r.t


def test_should_resume_a_crashed_backfill_and_converge_with_racing_live_updates(old_rows, session, cluster_settings):
    assert _verify(cluster_settings, USERS_FLOW)["missing"] == N_USERS      # deployed on old rows: nothing yet

    crashed = subprocess.run(_job(cluster_settings, "--flow", USERS_FLOW, "--ranges", "8", "--stop-after-ranges", "3"),
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert crashed.returncode == 3, crashed.stderr
    first = _checkpoints(session, USERS_FLOW)
    assert len(first) == 3 and len({c.run for c in first}) == 1

    hold = old_rows / "hold"
    hold.write_text("")
    resumed_at = time.time()
    resumed = subprocess.Popen(_job(cluster_settings, "--flow", USERS_FLOW, "--ranges", "8", "--hold-while",
                                    str(hold)), cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    seen = []
    while not any("source rows read" in line for line in seen):   # the backfill holds its snapshot of the source
        line = resumed.stderr.readline()
        assert line or resumed.poll() is None, "".join(seen)
        seen.append(line)
    assert any("3/8 token ranges done before, 5 to do" in line for line in seen), "".join(seen)
    for i in RACED:
        session.execute(f"UPDATE {KS}.users SET name = %s WHERE user_id = %s", (f"renamed{i}", i))
    for i in DELETED:
        session.execute(f"DELETE FROM {KS}.users WHERE user_id = %s", (i,))
    drain(session, USERS_FLOW)
    time.sleep(5)                                 # its writes come well after its read: TTLs must not count from it
    hold.unlink()                                 # now it writes the older images it read
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, "".join(seen) + err
    assert "(3 done before, 5 now)" in out

    done = _checkpoints(session, USERS_FLOW)
    assert len(done) == 8 and {c.run for c in done} == {first[0].run}
    before = {c.range_start for c in done if c.done_at.replace(tzinfo=dt.timezone.utc).timestamp() < resumed_at}
    assert before == {c.range_start for c in first}                     # the 3 ranges were not done again
    assert sum(c.source_rows for c in done) >= N_USERS - len(DELETED)

    index = _index(session)
    assert all(index.get(i) == {f"renamed{i}"} for i in RACED), {i: index.get(i) for i in RACED}
    assert not any(i in index for i in DELETED)
    report = _verify(cluster_settings, USERS_FLOW)
    assert (report["missing"], report["unexpected"], report["present"]) == (0, 0, N_USERS - len(DELETED))

    # derived rows carry the source's own timestamp, and expire with a source written with a TTL: their TTL is
    # reckoned as they are written (read here after the source's, within a second of it), at most a second or two
    # longer (CQL's remaining TTLs count whole seconds); the resumed run wrote them over 5 s after reading the source
    for i in sorted(set(range(N_USERS)) - set(RACED) - set(DELETED) - {LATER}):
        [src] = session.execute(f"SELECT WRITETIME(email) AS wt, TTL(email) AS ttl FROM {KS}.users WHERE user_id = %s",
                                (i,))
        [dst] = session.execute(f"SELECT WRITETIME(email) AS wt, TTL(email) AS ttl FROM {KS}.users_by_name "
                                "WHERE name = %s AND user_id = %s", (_name(i), i))
        assert dst.wt == src.wt
        assert (dst.ttl is None) == (src.ttl is None)
        assert dst.ttl is None or (0 < dst.ttl <= 3600 and -1 <= dst.ttl - src.ttl <= 3), (i, src.ttl, dst.ttl)
        # its lineage entry too (written in batches of several rows' entries, each with its own timestamp and TTL),
        # the TTL'd one living the plugin's grace period longer
        [entry] = session.execute("SELECT ts, WRITETIME(ts) AS wt, TTL(ts) AS ttl FROM async_triggers.lineage "
                                  "WHERE flow = %s AND source_key = %s", (USERS_FLOW, ring.source_key([i], ["int"])))
        assert entry.ts == entry.wt == src.wt
        assert (entry.ttl is None) == (src.ttl is None)
        assert entry.ttl is None or -1 <= entry.ttl - src.ttl - LINEAGE_TTL_GRACE_SECONDS <= 3, (i, src.ttl, entry.ttl)

    # a backfilled row behaves like a propagated one: a later rename removes it
    session.execute(f"UPDATE {KS}.users SET name = 'later' WHERE user_id = %s", (LATER,))
    drain(session, USERS_FLOW)
    assert _index(session).get(LATER) == {"later"}


def test_should_deploy_and_backfill_a_fan_out_flow(old_rows, session, cluster_settings):
    flow_file = old_rows / "timeline_flow.py"
    flow_file.write_text(TIMELINE_FLOW_FILE)
    result = run_ctl(cluster_settings, "trigger", "deploy", str(flow_file), "--backfill", "--master", "local[2]",
                     timeout=600)
    print(f"$ ctl trigger deploy {flow_file.name} --backfill --master local[2]\n{result.stderr}{result.stdout}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"backfill {TIMELINE_FLOW}: 16 token ranges (0 done before, 16 now), {N_TWEETS} source rows" in result.stdout
    expected = sum(len(FOLLOWERS[j % 3 + 1]) + 1 for j in range(N_TWEETS))
    report = _verify(cluster_settings, TIMELINE_FLOW)
    assert (report["missing"], report["unexpected"], report["present"]) == (0, 0, expected)
    for j in (0, 1):                               # tweet 0 was written with a TTL, tweet 1 without
        [src] = session.execute(f"SELECT WRITETIME(body) AS wt, TTL(body) AS ttl FROM {KS}.tweets WHERE tweet_id = %s",
                                (j,))
        [dst] = session.execute(f"SELECT WRITETIME(body) AS wt, TTL(body) AS ttl FROM {KS}.timeline "
                                "WHERE user_id = %s AND tweet_id = %s", (FOLLOWERS[j % 3 + 1][0], j))
        assert dst.wt == src.wt and (dst.ttl is None) == (j % 4 != 0)
