"""Helpers for integration tests: run the real `ctl`, wait for queues, snapshot what a deploy could change."""
from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

from async_triggers import status

ROOT = Path(__file__).resolve().parent.parent


def run_ctl(settings, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    from async_triggers.connection import child_env
    env = dict(child_env(settings.connection), ASYNC_TRIGGERS_CLUSTER=settings.cluster_name)
    return subprocess.run([sys.executable, "-m", "async_triggers", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def drain(session, *flows: str, since: dt.datetime | None = None, timeout: float = 300):
    """Wait until the flows' queues are empty on every node, in reports made after ``since`` (default: now)."""
    return status.wait_drained(session, list(flows), since or dt.datetime.utcnow(), timeout=timeout)


def create_schema(settings, cql: str) -> None:
    from async_triggers.cql import connect
    from async_triggers.cql_script import run_text
    with connect(settings) as s:
        run_text(s, cql)


def create_empty(settings, cql: str, keyspace: str, tables) -> None:
    """The schema, then its tables emptied: a kept cluster (ASYNC_TRIGGERS_KEEP_CLUSTER) holds an earlier session's
    rows, sources and targets alike (TRUNCATE is no write, so it leaves derived rows: docs/design.md, "Write shapes").
    Only the tables that were there before are truncated (each TRUNCATE flushes and snapshots on every node): a new
    cluster's are empty."""
    from async_triggers.cql import connect
    with connect(settings) as s:
        existing = s.cluster.metadata.keyspaces.get(keyspace)
        there = set(existing.tables) if existing is not None else set()
    create_schema(settings, cql)
    kept = [t for t in tables if t in there]
    if kept:
        create_schema(settings, "\n".join(f"TRUNCATE {keyspace}.{t};" for t in kept))


def deploy_flow_text(settings, folder: Path, text: str) -> None:
    """Write a flow file into ``folder`` and deploy it with the real `ctl`."""
    flow_file = folder / "flow.py"
    flow_file.write_text(text)
    result = run_ctl(settings, "trigger", "deploy", str(flow_file))
    assert result.returncode == 0, result.stderr


def cluster_snapshot(session) -> dict:
    """What a failed deploy must leave as it was: keyspaces, tables, triggers, deployed flows."""
    rows = lambda q: sorted(tuple(r) for r in session.execute(q))
    snap = {
        "keyspaces": rows("SELECT keyspace_name FROM system_schema.keyspaces"),
        "tables": rows("SELECT keyspace_name, table_name FROM system_schema.tables"),
        "triggers": rows("SELECT keyspace_name, table_name, trigger_name FROM system_schema.triggers"),
    }
    if any(k == ("async_triggers",) for k in snap["keyspaces"]):
        snap["flows"] = rows('SELECT name, version, spec FROM async_triggers.flows')
    return snap


def write_followers(settings, keyspace: str, pairs) -> None:
    """(user_id, follower_id) pairs into ``keyspace``.followers, every write acknowledged."""
    from cassandra.concurrent import execute_concurrent_with_args
    from async_triggers.cql import connect
    with connect(settings) as session:
        insert = session.prepare(f"INSERT INTO {keyspace}.followers (user_id, follower_id) VALUES (?, ?)")
        execute_concurrent_with_args(session, insert, list(pairs), concurrency=64, raise_on_first_error=True)


def verify_ctl(settings, *args: str) -> subprocess.CompletedProcess:
    """`ctl verify ARGS --master local[2] --json`, run by the CLI's code in the session's verifier child, whose
    Spark session is already started (tests/verifier.py; test_twitter_flow runs it as its own process)."""
    from verifier import shared
    return shared(settings).run(*args, "--master", "local[2]", "--json")


def verify_json(settings, *args: str) -> tuple[int, list[dict]]:
    """`ctl verify`'s exit code and its JSON: one line per flow, each a list with one object per target table."""
    import json
    done = verify_ctl(settings, *args)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, [t for line in done.stdout.strip().splitlines() for t in json.loads(line)]



TWITTER_FLOWS = ("twitter_timeline", "twitter_tweet_counts")


def deploy_twitter(settings, followers=()) -> subprocess.CompletedProcess:
    """The Twitter example from scratch (examples/twitter/demo.py's ``empty``), deployed with the real `ctl`, then
    ``followers`` ((user_id, follower_id) pairs) written and followed into the copy. Follows loaded before the
    deploy would start the following flow paused until `ctl trigger backfill` (docs/design.md)."""
    from cassandra.concurrent import execute_concurrent_with_args
    from async_triggers.cql import connect
    from async_triggers.examples.twitter.demo import empty
    with connect(settings) as s:
        empty(s)
    result = run_ctl(settings, "trigger", "deploy", str(ROOT / "examples" / "twitter" / "flows.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    with connect(settings) as s:
        insert = s.prepare("INSERT INTO twitter.followers (user_id, follower_id) VALUES (?, ?)")
        execute_concurrent_with_args(s, insert, list(followers), concurrency=32, raise_on_first_error=True)
        drain(s, "twitter_timeline_follows", timeout=600)
    return result
