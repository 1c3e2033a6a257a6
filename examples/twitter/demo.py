"""The main job: a 2-node cluster, the Twitter flow deployed, a power-law follower graph loaded with Spark,
1,000 tweets written (acknowledged before their fan-out), the queues drained, and Spark verifying every
timeline row."""
from __future__ import annotations

import dataclasses
import datetime as dt
import random
import time
from pathlib import Path
from typing import Callable

from async_triggers import cluster as cluster_mod, config, deploy, status
from async_triggers.cql import connect
from async_triggers.cql_script import run_file
from async_triggers.errors import AsyncTriggersError, VerifyError
from async_triggers.flows import load_flow_file

from .workload import write_tweets

Progress = Callable[[str], None]
FLOW = "twitter_timeline"
SCHEMA = Path(__file__).resolve().parent / "schema.cql"
FLOWS = Path(__file__).resolve().parent / "flows.py"


@dataclasses.dataclass(frozen=True)
class DemoReport:
    users: int
    celebrity: tuple[int, int]
    tweets: int
    median_ack_ms: float
    p99_ack_ms: float
    drain_seconds: float
    expected: int
    present: int
    missing: int
    unexpected: int
    wrong_value: int = 0

    @property
    def ok(self) -> bool:
        return self.missing == self.unexpected == self.wrong_value == 0

    def lines(self) -> list[str]:
        return [
            f"users                 {self.users} (most followed: user {self.celebrity[0]} with "
            f"{self.celebrity[1]} followers)",
            f"tweets written        {self.tweets}",
            f"median write latency  {self.median_ack_ms:.2f} ms (p99 {self.p99_ack_ms:.2f} ms)",
            f"fan-out drained in    {self.drain_seconds:.1f} s after the last acknowledgement",
            f"timeline rows         expected {self.expected}, present {self.present}",
            f"missing = {self.missing}, unexpected = {self.unexpected}, wrong value = {self.wrong_value}",
        ]


def run(settings: config.Settings, nodes: int = 2, users: int = 20_000, tweets: int = 1_000,
        min_celebrity: int = 10_000, seed: int = 42, master: str = "local[2]",
        progress: Progress = lambda _: None) -> DemoReport:
    from async_triggers.spark_jobs import load_twitter, verify

    info = cluster_mod.up(settings, nodes=nodes, name=settings.cluster_name, progress=progress)
    settings = settings.with_hosts(info.contact_points)
    with connect(settings) as session:
        progress("creating the Twitter schema (examples/twitter/schema.cql)")
        run_file(session, SCHEMA)
        for table in ("tweets", "timeline", "followers", "users"):
            session.execute(f"TRUNCATE twitter.{table}")
        progress("deploying the flow (examples/twitter/flows.py)")
        deploy.deploy(session, load_flow_file(FLOWS), progress=progress)

    progress(f"loading a power-law follower graph of {users} users with Spark")
    code = load_twitter.main(["--users", str(users), "--min-celebrity", str(min_celebrity), "--seed", str(seed),
                              "--contact-points", ",".join(settings.contact_points), "--master", master])
    if code != 0:
        raise AsyncTriggersError(f"loading the follower graph failed (exit {code})")
    graph = dict(n_users=max(users, min_celebrity + 1), seed=seed, min_celebrity=min_celebrity)
    celebrity = load_twitter.celebrities(1, **graph)[0]

    rng = random.Random(seed)
    # The celebrity's tweets are the heavy fan-outs; the other authors are drawn uniformly, as in the report.
    authors = [celebrity[0] if i % 100 == 0 else rng.randint(1, graph["n_users"]) for i in range(tweets)]
    with connect(settings) as session:
        progress(f"writing {tweets} tweets one at a time (the celebrity writes every 100th)")
        stats = write_tweets(session, authors, rng)
        acked = time.monotonic()
        since = dt.datetime.utcnow()
        progress("waiting for the queues to drain on every node")
        status.wait_drained(session, [FLOW], since, timeout=1800, poll=1.0)
        drained = time.monotonic() - acked

        spec = deploy.read_deployed(session)[FLOW]

    progress("verifying every propagation with Spark")
    results = verify.run_verify(spec, master=master, connection=settings.connection)
    timeline = [r for r in results if r.table == "twitter.timeline"]
    if not timeline:
        raise VerifyError("the verification returned no result for twitter.timeline")
    t = timeline[0]
    return DemoReport(users=graph["n_users"], celebrity=celebrity, tweets=stats.count,
                      median_ack_ms=stats.median_ms, p99_ack_ms=stats.percentile_ms(99), drain_seconds=drained,
                      expected=t.expected, present=t.present, missing=t.missing, unexpected=t.unexpected,
                      wrong_value=t.wrong_value)
