"""The report's experiments (seed 000, §6) on a local cluster: the three applications on the Twitter workload.

    ctl bench run saturating|80pct|burst|fault|bulk|scale [--smoke] [--out DIR]
    ctl bench all [--smoke]                 every experiment, then the report
    ctl bench report [DIR]

One :class:`Bench` drives a run end to end: a ccm cluster (``db_nodes`` nodes; the fault and scale experiments use
``fault_nodes``), the schema with the run's replication factor, the follower graph loaded with Spark, and per
application run: empty tweets/timeline, the application's own machinery (the flow deployed for the integrated
approach and dropped for the others; a private RabbitMQ node and worker processes for the external queue), the
open-loop load from ``async_triggers.spark_jobs.loadgen`` (Spark tasks, ``local[partitions]``), and, while it runs, the
completed propagations, a propagation-lag probe and per-process resources. A run ends when every acknowledged
tweet is in every timeline (or ``drain_timeout_s`` passed); its results file follows benchmarks/README.md.

How each approach's completed propagations are counted:

- synchronous: a request is acknowledged after its timelines are written, so completion = acknowledgement;
- external queue: every worker appends ``tweet_id,done_at,rows`` after acknowledging a message (distinct tweets);
- integrated: the plugin's per-node ``completed`` counters in ``async_triggers.flow_status`` (every 2 s), summed
  over the nodes with a node's restart (counter back to 0) carried over; the run is drained when the count
  reached the acknowledged tweets and every node reports nothing pending or active.

Saturating throughput (§6.1): a step search. Each step offers a constant rate for ``step_s``; it is *bounded*
when no request failed or was dropped and every propagation completed within ``max(drain_bound_s, step_s/4)``
of the schedule's end (the backlog did not grow). The rate grows by ``rate_factor`` while steps are bounded,
then one step at the geometric middle of the last bounded and the first unbounded rate; the saturating run is
the bounded step with the highest completed throughput (completed propagations over the schedule plus drain).
Its resources fill Table 3. 80 % (§6.2) offers 0.8 x the lowest saturating rate of the three approaches to all
three, so their response times compare under one load; the burst (§6.3) uses each approach's own saturating rate
(50 %, 200 %, 50 %), the fault run (§6.4) 0.8 x the lowest, on ``fault_nodes`` nodes with node2 killed (-9) at
``kill_at_s`` and restarted at ``restart_at_s``, then Spark verifies every propagation.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from async_triggers.benchmarks import results as results_mod
from async_triggers.benchmarks.apps.external_queue import DEFAULT_QUEUE, ExternalQueueApp, purge, queue_depth
from async_triggers.benchmarks.apps.integrated import IntegratedApp
from async_triggers.benchmarks.apps.synchronous import SynchronousApp
from async_triggers.benchmarks.cassandra_io import (SESSIONS, FanOutFactory, LagProbe, StoreFactory, Target, bulk_write,
                                     connector_write, worker_args)
from async_triggers.benchmarks.errors import BenchError

Progress = Callable[[str], None]
APPS = ("synchronous", "external_queue", "integrated")
# the tweet write alone, with no flow deployed: what Cassandra itself gives the same requests (a baseline, not one
# of the report's approaches: its runs stay out of the report's tables)
PLAIN = "plain"
EXPERIMENTS = ("bulk", "saturating", "80pct", "burst", "fault", "scale")
FLOW = "bench_timeline"
REPO = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    out: Path = REPO / "benchmarks" / "results"
    db_nodes: int = 2                  # Tables 1-3 and Figures 6, 8b
    fault_nodes: int = 3               # §6.4 and the scale point (the report: 4)
    cluster_prefix: str = "bench"      # clusters bench2n, bench3n (one at a time: they share 127.0.0.x)
    reuse_cluster: str | None = None   # run everything on this existing cluster instead (the smoke test)
    keep_cluster: bool = False         # leave the last cluster up at the end
    users: int = 100_000
    min_celebrity: int = 10_000
    seed: int = 42
    replication: int = 2
    write_consistency: str = "ALL"
    read_consistency: str = "ONE"
    partitions: int = 2                # Spark tasks of the load generator (local[partitions])
    concurrency: int = 16              # sender threads per task
    fanout_concurrency: int = 64       # timeline writes in flight per fan-out (synchronous app, queue workers)
    queue_workers: int = 4             # worker processes of the external queue (one message at a time each)
    flow_workers: int = 4              # worker threads per node of the integrated flow
    start_rate: float = 200.0
    rate_factor: float = 1.5
    max_steps: int = 7
    step_s: float = 20.0
    drain_bound_s: float = 5.0
    steady_s: float = 60.0             # §6.2
    burst_s: tuple[float, float, float] = (60.0, 30.0, 60.0)   # §6.3: 50 %, 200 %, 50 %
    drop_after_s: float = 5.0          # the burst: a request this late is shed (the synchronous app's losses)
    fault_s: float = 150.0             # §6.4
    kill_at_s: float = 60.0
    restart_at_s: float = 90.0
    bulk_s: float = 20.0
    drain_timeout_s: float = 600.0
    retry_s: float = 60.0
    probe_interval_s: float = 1.0
    verify_checks: int = 4             # the fault runs: Spark verifications until nothing is missing
    verify_wait_s: float = 20.0
    apps: tuple[str, ...] = APPS
    fixed_rate: float | None = None    # skip the search: every approach's saturating rate (the smoke test)

    def __post_init__(self):
        unknown = [a for a in self.apps if a not in APPS + (PLAIN,)]
        if unknown:
            raise BenchError(f"unknown application(s) {', '.join(unknown)}: choose from {', '.join(APPS + (PLAIN,))}")
        if not 0 < self.kill_at_s < self.restart_at_s < self.fault_s:
            raise BenchError(f"the fault run needs 0 < kill_at_s ({self.kill_at_s}) < restart_at_s "
                             f"({self.restart_at_s}) < fault_s ({self.fault_s})")
        if self.replication > min(self.db_nodes, self.fault_nodes):
            raise BenchError(f"replication factor {self.replication} needs at least that many nodes "
                             f"(db_nodes {self.db_nodes}, fault_nodes {self.fault_nodes})")
        for name in ("step_s", "steady_s", "fault_s", "bulk_s", "start_rate", "drain_timeout_s"):
            if not getattr(self, name) > 0:
                raise BenchError(f"'{name}' must be strictly positive, found: {getattr(self, name)}")
        if not self.rate_factor > 1:
            raise BenchError(f"'rate_factor' must be greater than 1, found: {self.rate_factor}")


def smoke_config(out: Path, cluster: str | None = None) -> BenchConfig:
    """A few seconds per phase on a small graph: proves the machinery and the three applications work."""
    return BenchConfig(out=out, reuse_cluster=cluster, db_nodes=3 if cluster else 2, users=2_000,
                       min_celebrity=500, fixed_rate=40.0, step_s=4.0, steady_s=4.0, burst_s=(3.0, 3.0, 3.0),
                       fault_s=12.0, kill_at_s=3.0, restart_at_s=6.0, bulk_s=3.0, drain_timeout_s=180.0,
                       retry_s=60.0, probe_interval_s=0.5, queue_workers=1, concurrency=4)


# -- completions -----------------------------------------------------------------------------------------------------
class Completions:
    """Samples a cumulative count of completed propagations (and timeline rows) once per ``interval_s``."""

    def __init__(self, read: Callable[[], tuple[int, int]], interval_s: float = 1.0):
        self.read, self.interval_s = read, interval_s
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="completions", daemon=True)
        self.errors = 0

    def sample(self) -> tuple[float, int, int]:
        done, rows = self.read()
        # a counter that knows when its count was true (flow_status rows carry their report time) says so
        s = (getattr(self.read, "as_of", None) or time.time(), done, rows)
        self.samples.append(s)
        return s

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - a failed poll (a node down) only thins the series
                self.errors += 1

    def start(self) -> "Completions":
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def first_reaching(self, count: int) -> float | None:
        return next((t for t, done, _ in self.samples if done >= count), None)


class FlowCounters:
    """The integrated flow's completed tasks and timeline rows over every node, from flow_status, as counts since
    construction; a node whose counter went down restarted: its last value is carried over."""

    def __init__(self, session):
        from async_triggers import status
        self.session, self.status = session, status
        self.base: dict[str, tuple[int, int]] = {}
        self.carried: dict[str, tuple[int, int]] = {}
        self.last: dict[str, tuple[int, int]] = {}
        self.as_of: float | None = None     # the newest report's time, when the counts were true
        for s in status.read(session, [FLOW]):
            self.base[s.node] = (s.completed, s.fanout_rows + s.completed)
            self.last[s.node] = self.base[s.node]

    def __call__(self) -> tuple[int, int]:
        statuses = self.status.read(self.session, [FLOW])
        self.as_of = max((_epoch(s.updated) for s in statuses if s.updated), default=None)
        for s in statuses:
            now = (s.completed, s.fanout_rows + s.completed)
            prev = self.last.get(s.node, (0, 0))
            if now[0] < prev[0]:    # restarted: its counters began again at 0
                c = self.carried.get(s.node, (0, 0))
                self.carried[s.node] = (c[0] + prev[0], c[1] + prev[1])
            self.last[s.node] = now
        done = rows = 0
        for node, (c, r) in self.last.items():
            b, k = self.base.get(node, (0, 0)), self.carried.get(node, (0, 0))
            done += c + k[0] - b[0]
            rows += r + k[1] - b[1]
        return done, rows

    def idle(self, since: float) -> bool:
        """Every node reported after ``since`` (epoch s) with nothing pending or active."""
        statuses = self.status.read(self.session, [FLOW])
        fresh = [s for s in statuses if s.updated and _epoch(s.updated) > since]
        return bool(statuses) and len(fresh) == len(statuses) and sum(s.pending + s.active for s in fresh) == 0


def _epoch(when: dt.datetime) -> float:
    """Cassandra's timestamps come back naive, in UTC."""
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


class DoneFiles:
    """The external queue's completions: the workers' ``tweet_id,done_at,rows`` files (distinct tweets)."""

    def __init__(self, paths: Sequence[Path]):
        self.paths = list(paths)

    def entries(self) -> dict[str, tuple[float, int]]:
        seen: dict[str, tuple[float, int]] = {}
        for path in self.paths:
            if not path.exists():
                continue
            for line in path.read_text().splitlines():
                parts = line.split(",")
                if len(parts) == 3 and parts[0] not in seen:
                    seen[parts[0]] = (float(parts[1]), int(parts[2]))
        return seen

    def __call__(self) -> tuple[int, int]:
        e = self.entries()
        return len(e), sum(rows for _, rows in e.values())


# -- the bench -------------------------------------------------------------------------------------------------------
class Bench:
    def __init__(self, config: BenchConfig, settings=None, progress: Progress = print):
        from async_triggers import config as pconfig
        self.cfg = config
        self.settings = settings or pconfig.load()
        self.progress = progress
        self.nodes = 0
        self.cluster_name: str | None = None
        self.contact_points: tuple[str, ...] = ()
        self.spark = None
        self.broker = None
        self.n_users = 0
        self.probe_author = self.probe_follower = 0
        self.top_user: tuple[int, int] = (0, 0)
        self.unwritten: dict[str, list] = {}   # the records of runs not written yet (saturation steps)
        self.saturating_rates: dict[str, float] = {}

    # -- setup ---------------------------------------------------------------------------------------------------
    def target(self) -> Target:
        return Target(self.contact_points, write_consistency=self.cfg.write_consistency,
                      read_consistency=self.cfg.read_consistency, retry_s=self.cfg.retry_s,
                      concurrency=self.cfg.fanout_concurrency)

    def use_cluster(self, nodes: int) -> None:
        """A cluster of ``nodes`` nodes with the schema and the follower graph (reused when it is the current)."""
        from async_triggers import cluster as cluster_mod
        if self.cfg.reuse_cluster:
            name = self.cfg.reuse_cluster
            info = cluster_mod.cluster_info(self.settings, name)
            nodes = len(info.nodes)
        else:
            name = f"{self.cfg.cluster_prefix}{nodes}n"
        if name == self.cluster_name:
            return
        if self.cluster_name and not self.cfg.reuse_cluster:
            self.progress(f"removing cluster {self.cluster_name} (the next one uses the same addresses)")
            SESSIONS.close_all()
            if self.spark is not None:   # the connector caches its sessions to the old cluster's nodes
                self.spark.stop()
                self.spark = None
            cluster_mod.down(self.settings, name=self.cluster_name, progress=self.progress)
        info = cluster_mod.up(self.settings, nodes=None if self.cfg.reuse_cluster else nodes, name=name,
                              progress=self.progress)
        self.cluster_name, self.nodes = name, len(info.nodes)
        self.contact_points = tuple(info.contact_points)
        self._schema_and_graph()

    def _session(self):
        from async_triggers import cql
        return cql.connect(dataclasses.replace(self.settings, contact_points=self.contact_points))

    def _schema_and_graph(self) -> None:
        from async_triggers.spark_jobs import load_twitter
        from async_triggers.cql_script import run_file
        with self._session() as session:
            session.execute("CREATE KEYSPACE IF NOT EXISTS twitter WITH replication = "
                            f"{{'class': 'SimpleStrategy', 'replication_factor': {self.cfg.replication}}}")
            session.execute("ALTER KEYSPACE twitter WITH replication = "
                            f"{{'class': 'SimpleStrategy', 'replication_factor': {self.cfg.replication}}}")
            run_file(session, REPO / "examples" / "twitter.cql")
            for table in ("tweets", "timeline", "followers", "users"):
                session.execute(f"TRUNCATE twitter.{table}")
        self.progress(f"loading a power-law follower graph of {self.cfg.users} users with Spark")
        spark = self.spark_session()
        gen = dict(n_users=self.cfg.users, seed=self.cfg.seed, min_celebrity=self.cfg.min_celebrity)
        counts = load_twitter.counts_df(spark, **gen).cache()
        edges = load_twitter.edges_df(spark, **gen, counts=counts)
        from async_triggers.spark_jobs.session import write_table
        write_table(load_twitter.users_df(spark, self.cfg.users, self.cfg.min_celebrity), "twitter", "users")
        write_table(edges, "twitter", "followers")
        self.n_users = load_twitter.effective_users(self.cfg.users, self.cfg.min_celebrity)
        top = load_twitter.top_users(counts, 3)
        counts.unpersist()
        # the lag probe's author and its one follower: two users beyond the graph, so no tweet of the load hits them
        self.probe_author, self.probe_follower = self.n_users + 1, self.n_users + 2
        with self._session() as session:
            session.execute("INSERT INTO twitter.followers (user_id, follower_id) VALUES (%s, %s)",
                            (self.probe_author, self.probe_follower))
        self.top_user = top[0]
        self.progress(f"graph: {self.n_users} users, most followed " + ", ".join(f"{u} ({n})" for u, n in top))

    def spark_session(self):
        if self.spark is None:
            from async_triggers.spark_jobs.session import build_session
            self.spark = build_session(master=f"local[{self.cfg.partitions}]", contact_points=self.contact_points,
                                       app_name="bench")
        return self.spark

    def flow(self):
        from async_triggers.flows import FanOut, Flow, Queue, Retry, Write, row, source
        columns = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)
        return Flow(name=FLOW, source="twitter.tweets", events=("insert",),
                    steps=[Write("twitter.timeline", user_id=source.author_id, **columns),
                           FanOut("twitter.followers", match={"user_id": source.author_id})
                           .write("twitter.timeline", user_id=row.follower_id, **columns)],
                    queue=Queue(capacity=100_000, workers=self.cfg.flow_workers), page_size=1000,
                    read_consistency=self.cfg.read_consistency, write_consistency=self.cfg.write_consistency,
                    retry=Retry(max_attempts=60, max_backoff_ms=5_000, max_age_ms=1_800_000))

    def _prepare(self, app: str):
        """Empty tweets and timeline; the flow deployed only for the integrated approach. Returns its spec."""
        from async_triggers import deploy
        with self._session() as session:
            deployed = deploy.read_deployed(session)
            if app == "integrated":
                if FLOW not in deployed:
                    deploy.deploy(session, [self.flow()], progress=self.progress)
            elif FLOW in deployed:
                deploy.drop(session, FLOW, progress=self.progress)
            for table in ("tweets", "timeline"):
                session.execute(f"TRUNCATE twitter.{table}")
            return deploy.plan(session, [self.flow()])[0]

    def ensure_broker(self):
        if self.broker is None:
            from async_triggers.benchmarks.broker import Broker, default_config, installed
            if not installed():
                raise BenchError("the external-queue approach needs RabbitMQ: make broker")
            self.broker = Broker(default_config(), progress=self.progress).start()
        return self.broker

    def close(self) -> None:
        SESSIONS.close_all()
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
        if self.spark is not None:
            self.spark.stop()
            self.spark = None

    # -- one run -------------------------------------------------------------------------------------------------
    def run(self, experiment: str, app: str, phases: Sequence, *, drop_after_s: float | None = None,
            during: Callable[[float], list[dict]] | None = None, verify: bool = False,
            config: dict | None = None, write: bool = True) -> dict:
        """One application under one rate profile, until every propagation completed; the results file."""
        from async_triggers.spark_jobs import loadgen
        from async_triggers.benchmarks import resources as res_mod
        spec = self._prepare(app)
        target = self.target()
        store = StoreFactory(target)
        workers: list[subprocess.Popen] = []
        done_files: list[Path] = []
        counters = None
        if app == "synchronous":
            factory = SynchronousApp(store, FanOutFactory(target), self.n_users)
        elif app in ("integrated", PLAIN):
            factory = IntegratedApp(store, self.n_users)
        else:
            broker = self.ensure_broker()
            purge(broker.config.url, DEFAULT_QUEUE)
            factory = ExternalQueueApp(broker.config.url, store, self.n_users)
            workers, done_files = self._start_workers(broker.config.url, target)
        with self._session() as session:
            if app == "integrated":
                counters = FlowCounters(session)
                completions = Completions(counters)
            elif app == "external_queue":
                completions = Completions(DoneFiles(done_files))
            else:
                completions = None
            probe_sender = factory(loadgen.Slot(task=-1, slot=0, partitions=1, seed=self.cfg.seed))
            probe = (NoProbe() if app == PLAIN else
                     LagProbe(target, probe_sender.submit, self.probe_author, self.probe_follower,
                              self.cfg.probe_interval_s))
            groups = self._resource_groups(workers)
            sampler = res_mod.Sampler(groups, interval_s=1.0)
            self.progress(f"{experiment} / {app}: " + ", ".join(f"{p.rate:g} msg/s for {p.duration_s:g} s"
                                                                 for p in phases)
                          + f" on {self.nodes} nodes")
            events: list[dict] = []
            timer = None
            launched = time.time()
            if during is not None:
                timer = threading.Thread(target=lambda: events.extend(during(launched)), daemon=True)
            sampler.start()
            if completions is not None:
                completions.start()
            probe.start()
            if timer is not None:
                timer.start()
            try:
                records = loadgen.run(self.spark_session(), phases, self.cfg.partitions, self.cfg.seed, factory,
                                      concurrency=self.cfg.concurrency, drop_after_s=drop_after_s)
            finally:
                probe.stop()
                if timer is not None:
                    timer.join()
            end_of_load = time.time()
            ok = sum(r.status == "ok" for r in records)
            expected = ok + probe.sent
            start = min(r.scheduled for r in records)
            duration = sum(p.duration_s for p in phases)
            schedule_end = start + duration
            try:
                completed_at, drained = self._wait_drained(app, records, completions, counters, expected,
                                                           end_of_load)
            finally:
                sampler.stop()
                if completions is not None:
                    completions.stop()
                close = getattr(probe_sender, "close", None)
                if callable(close):
                    close()
                self._stop_workers(workers)
        resources = sampler.result(messages=ok)
        drain_s = None if completed_at is None else max(0.0, completed_at - schedule_end)
        horizon = (completed_at or time.time()) - start
        if app in ("synchronous", PLAIN):
            done_count = ok
            rows = None
        else:
            last = completions.samples[-1]
            # the probes' tweets are propagations too, but not the load's: the rate is the load's
            done_count, rows = max(0, min(last[1], expected) - probe.sent), last[2]
        throughput = done_count / max(duration, horizon)
        series = self._propagated(app, records, completions, done_files, start, duration)
        verification, checks = self._verify_settled(spec, app) if verify else (None, [])
        fanout_rows_s = None if rows is None else rows / max(duration, horizon)
        run = results_mod.summarise(
            records, experiment=experiment, app=app, db_nodes=self.nodes, duration_s=duration,
            config={**self._config(), "phases": [dataclasses.asdict(p) for p in phases],
                    "drop_after_s": drop_after_s, "probes": probe.sent, "probe_errors": probe.errors[:3],
                    "drained": drained, "verification_checks": checks, **(config or {})},
            throughput_msg_s=throughput, propagation_lags_ms=probe.lags_ms or None,
            propagated_msg_s=series, drain_s=drain_s, fanout_rows_s=fanout_rows_s, verification=verification,
            resources=resources, events=[{"t_s": round(e["at"] - start, 2), "what": e["what"]} for e in events])
        if write:
            results_mod.write_run(self.cfg.out, run, records)
        else:
            self.unwritten[run["run_id"]] = records
        self.progress(self.describe(run))
        return run

    @staticmethod
    def describe(run: dict) -> str:
        req, resp = run["requests"], run["response_ms"] or {}
        lag = run["propagation_lag_ms"] or {}
        v = run["verification"]
        return (f"  {run['run_id']}: offered {run['offered_msg_s']:g} msg/s, ok {req['ok']}, errors {req['error']}, "
                f"dropped {req['dropped']}, completed {run['throughput_msg_s']:g} msg/s, "
                f"response median {resp.get('median', float('nan')):.2f} ms p99 {resp.get('p99', float('nan')):.2f} ms, "
                f"lag median {lag.get('median', float('nan')):.0f} ms, drain "
                f"{'-' if run['drain_s'] is None else format(run['drain_s'], '.1f')} s"
                + ("" if v is None else f", verified: missing {v['missing']}, unexpected {v['unexpected']}"))

    def _config(self) -> dict:
        c = self.cfg
        return {"users": self.n_users, "seed": c.seed, "replication": c.replication,
                "write_consistency": c.write_consistency, "read_consistency": c.read_consistency,
                "partitions": c.partitions, "concurrency": c.concurrency, "fanout_concurrency": c.fanout_concurrency,
                "queue_workers": c.queue_workers, "flow_workers": c.flow_workers, "cluster": self.cluster_name}

    def _wait_drained(self, app, records, completions, counters, expected, end_of_load):
        """When every propagation of the run completed (epoch s), or None after drain_timeout_s; and whether."""
        if app in ("synchronous", PLAIN):
            acks = [r.acked for r in records if r.acked is not None]
            return (max(acks) if acks else end_of_load), True
        deadline = time.time() + self.cfg.drain_timeout_s
        url = self.broker.config.url if app == "external_queue" else None
        while time.time() < deadline:
            t, done, _ = completions.sample()
            if done >= expected:
                if app == "external_queue" and queue_depth(url, DEFAULT_QUEUE) == 0:
                    return t, True
                if app == "integrated" and counters.idle(since=end_of_load):
                    return completions.first_reaching(expected) or t, True
            time.sleep(1.0)
        self.progress(f"  not drained within {self.cfg.drain_timeout_s:.0f} s: "
                      f"{completions.samples[-1][1]} of {expected} propagations completed")
        return None, False

    def _propagated(self, app, records, completions, done_files, start, duration) -> list[float]:
        """Completed propagations per 3-s bucket, as long as the run's time series."""
        bucket = results_mod.BUCKET_S
        acks = [r.acked for r in records if r.status == "ok"]
        if app in ("synchronous", PLAIN):
            times = acks
        elif app == "external_queue":
            times = [t for t, _ in DoneFiles(done_files).entries().values()]
        else:
            times = []
            prev = 0
            for t, done, _ in completions.samples:   # spread each sample's increase over its interval
                times.extend([t] * max(0, done - prev))
                prev = max(prev, done)
        end = max([start + duration, *[r.acked for r in records if r.acked is not None]])
        n = max(1, math.ceil((end - start) / bucket))
        counts = [0] * n
        for t in times:
            i = int((t - start) // bucket)
            if 0 <= i < n:
                counts[i] += 1
        return [c / bucket for c in counts]

    def _verify_settled(self, spec: dict, app: str) -> tuple[dict, list[dict]]:
        """Spark's verification after a run with a fault. A restarted node's own recovery and the other replicas'
        takeover are queued when gossip sees it back, which can be just after the queues looked drained; so a
        verification that finds rows missing is repeated every ``verify_wait_s`` up to ``verify_checks`` times
        (each check is recorded): the result says whether, and how soon after the drain, every propagation was
        there; a loss stays a loss."""
        checks, started = [], time.time()
        for attempt in range(self.cfg.verify_checks):
            if attempt:
                time.sleep(self.cfg.verify_wait_s)
            result = self._verify(spec)
            checks.append({"after_s": round(time.time() - started, 1), "missing": result["missing"],
                           "unexpected": result["unexpected"]})
            if result["missing"] == 0:
                break
            self.progress(f"  {app}: {result['missing']} propagations missing {checks[-1]['after_s']} s after the "
                          "drain; checking again")
        return result, checks

    def _verify(self, spec: dict) -> dict:
        from async_triggers.spark_jobs import verify
        self.progress("  verifying every propagation with Spark")
        got = verify.verify_with_session(self.spark_session(), spec)
        t = next(r for r in got if r.table == "twitter.timeline")
        return {"expected": t.expected, "present": t.present, "missing": t.missing, "unexpected": t.unexpected}

    # -- processes -------------------------------------------------------------------------------------------------
    def _start_workers(self, url: str, target: Target) -> tuple[list[subprocess.Popen], list[Path]]:
        work = Path(tempfile.gettempdir()) / "async-triggers-bench"   # scratch: workers' logs, done files
        work.mkdir(parents=True, exist_ok=True)
        procs, files = [], []
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "spark-jobs"),
                                                            os.environ.get("PYTHONPATH", "")])}
        for i in range(self.cfg.queue_workers):
            done = work / f"done-{i}.csv"
            done.unlink(missing_ok=True)
            files.append(done)
            log = open(work / f"worker-{i}.log", "w")
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "async_triggers.benchmarks.apps.external_queue", "worker", "--url", url,
                 *worker_args(target), "--record", str(done)], stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=str(REPO)))
        return procs, files

    def _stop_workers(self, procs: Iterable[subprocess.Popen]) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()

    def _resource_groups(self, workers: Sequence[subprocess.Popen]) -> dict:
        from async_triggers.benchmarks import resources as res_mod
        from async_triggers import cluster as cluster_mod
        me = os.getpid()

        def spark_worker(p) -> bool:
            # the Python workers Spark's pyspark.daemon forks to run the tasks (not the daemon, not the JVM)
            daemon = res_mod.cmdline_contains("pyspark.daemon")
            return daemon(p) and p.parent() is not None and daemon(p.parent())

        def app_pids():
            spark = res_mod.descendants(me, spark_worker)
            return [*spark, *(w.pid for w in workers if w.poll() is None)]

        def db_pids():
            return [n.pid for n in cluster_mod.node_status(self.settings, self.cluster_name) if n.pid and n.up]

        groups = {"app": app_pids, "db": db_pids}
        if workers:
            groups["queue"] = lambda: list(self.broker.pids().values())
        return groups

    # -- experiments -----------------------------------------------------------------------------------------------
    def bulk(self) -> dict:
        """The hardware's limit: timeline rows/s of a plain client (Spark tasks) writing at the run's CL, no flow."""
        self.use_cluster(self.cfg.db_nodes)
        self._prepare("bulk_writer")
        self.progress(f"bulk writer: {self.cfg.partitions} Spark tasks for {self.cfg.bulk_s:g} s")
        started = time.time()
        python = bulk_write(self.spark_session(), self.target(), self.cfg.bulk_s, self.cfg.partitions)
        self.progress(f"  Python driver: {python['rows']} timeline rows in {python['seconds']:.1f} s = "
                      f"{python['rows_s']:.0f} rows/s")
        # the same number of rows again through the connector (JVM, asynchronous): the faster one is the limit
        jvm = connector_write(self.spark_session(), self.target(), max(python["rows"], 1000), self.cfg.partitions,
                              self.cfg.fanout_concurrency)
        self.progress(f"  Spark Cassandra Connector: {jvm['rows']} timeline rows in {jvm['seconds']:.1f} s = "
                      f"{jvm['rows_s']:.0f} rows/s")
        best = max((python, jvm), key=lambda g: g["rows_s"])
        from async_triggers.spark_jobs.loadgen import Record
        record = Record(0, 0, started, started, started + best["seconds"], "ok", False, None)
        run = results_mod.summarise([record], experiment="bulk_writer", app="bulk_writer", db_nodes=self.nodes,
                                    duration_s=best["seconds"],
                                    config={**self._config(), "python_driver": python, "connector": jvm,
                                            "rows": best["rows"], "seconds": best["seconds"]},
                                    fanout_rows_s=best["rows_s"])
        results_mod.write_run(self.cfg.out, run)
        if "integrated" in self.cfg.apps:
            self.flow_fanout(best["rows"])
        return run

    def flow_fanout(self, rows: int) -> dict:
        """The integrated flow's fan-out rate with its queues never empty: the most-followed user's tweets, as
        many as make about ``rows`` timeline rows, written at once; timeline rows/s from the first write to the
        last task's completion (flow_status), the same count the bulk writer's rate is made of."""
        from async_triggers.benchmarks.apps.tweets import Tweet
        from cassandra.util import uuid_from_time
        from async_triggers.spark_jobs.loadgen import Record
        self._prepare("integrated")
        author, followers = self.top_user
        count = max(1, round(rows / (followers + 1)))
        store = StoreFactory(self.target())()
        with self._session() as session:
            counters = FlowCounters(session)
            completions = Completions(counters).start()
            self.progress(f"integrated fan-out: {count} tweets by user {author} ({followers} followers) at once")
            records = []
            for i in range(count):
                at = time.time()
                store.write_tweet_async(Tweet(uuid_from_time(at), author, f"fan-out {i}", int(at * 1000))).result()
                records.append(Record(0, i, at, at, time.time(), "ok", False, None))
            completions_at, drained = self._wait_drained("integrated", records, completions, counters, count,
                                                         time.time())
            completions.stop()
        start = records[0].scheduled
        elapsed = (completions_at or time.time()) - start
        written = completions.samples[-1][2]
        run = results_mod.summarise(records, experiment="bulk_writer", app="integrated", db_nodes=self.nodes,
                                    duration_s=max(elapsed, 1e-3),
                                    config={**self._config(), "author": author, "followers": followers,
                                            "tweets": count, "rows": written, "seconds": round(elapsed, 3),
                                            "drained": drained},
                                    fanout_rows_s=written / elapsed, drain_s=None if completions_at is None
                                    else completions_at - records[-1].acked)
        results_mod.write_run(self.cfg.out, run, records)
        self.progress(f"  integrated fan-out: {written} timeline rows in {elapsed:.1f} s = "
                      f"{written / elapsed:.0f} rows/s")
        return run

    def saturating(self, nodes: int | None = None, experiment: str = "saturating") -> dict[str, dict]:
        from async_triggers.spark_jobs.loadgen import Phase
        self.use_cluster(nodes or self.cfg.db_nodes)
        best_runs = {}
        for app in self.cfg.apps:
            steps = []
            if self.cfg.fixed_rate:
                rates = iter([self.cfg.fixed_rate])
            else:
                rates = None
            rate, best, failed, bisected = self.cfg.start_rate, None, None, False
            for i in range(self.cfg.max_steps + 1):
                if rates is not None:
                    rate = next(rates, None)
                    if rate is None:
                        break
                run = self.run(experiment, app, [Phase(self.cfg.step_s, rate)], write=False,
                               config={"step": i})
                bounded = self.bounded(run)
                steps.append({"rate": rate, "throughput_msg_s": run["throughput_msg_s"], "drain_s": run["drain_s"],
                              "errors": run["requests"]["error"], "dropped": run["requests"]["dropped"],
                              "bounded": bounded, "run_id": run["run_id"]})
                if bounded and (best is None or run["throughput_msg_s"] > best["throughput_msg_s"]):
                    best = run
                if not bounded:
                    failed = rate if failed is None else min(failed, rate)
                if rates is not None:
                    continue
                if best is None:          # even the first rate was too much: go down
                    rate /= self.cfg.rate_factor
                elif failed is None:      # still bounded: go up
                    rate *= self.cfg.rate_factor
                elif bisected:
                    break
                else:                     # once, between the best bounded and the lowest unbounded rate
                    rate, bisected = math.sqrt(best["config"]["phases"][0]["rate"] * failed), True
            if best is None:
                best = run
                self.progress(f"  {app}: no step was bounded; the lowest rate's run stands for it")
            best["config"]["search"] = steps
            results_mod.write_run(self.cfg.out, best, self.unwritten.get(best["run_id"]))
            self.unwritten.clear()
            if self.nodes == self.cfg.db_nodes:
                self.saturating_rates[app] = best["throughput_msg_s"]
            best_runs[app] = best
            self.progress(f"  {app}: saturating throughput {best['throughput_msg_s']:.0f} msg/s "
                          f"({len(steps)} steps)")
        return best_runs

    def bounded(self, run: dict) -> bool:
        req = run["requests"]
        bound = max(self.cfg.drain_bound_s, self.cfg.step_s / 4)
        return req["error"] == 0 and req["dropped"] == 0 and run["drain_s"] is not None and run["drain_s"] <= bound

    def _saturating_rates(self) -> dict[str, float]:
        """The approaches' saturating throughput at db_nodes: measured in this process, else from the results. The
        plain write has none of its own here: it gets the rates of the approaches it is compared with."""
        rates = {a: r for a, r in self.saturating_rates.items() if a != PLAIN}
        approaches = [a for a in self.cfg.apps if a != PLAIN]
        missing = [a for a in approaches if a not in rates]
        if missing:
            try:
                runs = results_mod.load_runs(self.cfg.out)
            except BenchError:
                runs = []
            for app in missing:
                found = [r for r in runs if r["experiment"] == "saturating" and r["app"] == app
                         and r["db_nodes"] == self.cfg.db_nodes and r["throughput_msg_s"]]
                if found:
                    rates[app] = found[-1]["throughput_msg_s"]
        missing = [a for a in approaches if a not in rates]
        if missing or not rates:
            raise BenchError(f"no saturating throughput of {', '.join(missing or approaches)} at {self.cfg.db_nodes} "
                             f"nodes in {self.cfg.out}: run `ctl bench run saturating` first")
        if PLAIN in self.cfg.apps:
            rates[PLAIN] = min(rates.values())
        return rates

    def eighty(self) -> list[dict]:
        from async_triggers.spark_jobs.loadgen import Phase
        rate = 0.8 * min(self._saturating_rates().values())
        self.use_cluster(self.cfg.db_nodes)
        return [self.run("80pct", app, [Phase(self.cfg.steady_s, rate)], config={"base_rate": rate / 0.8})
                for app in self.cfg.apps]

    def burst(self) -> list[dict]:
        from async_triggers.spark_jobs.loadgen import Phase
        rates = self._saturating_rates()
        self.use_cluster(self.cfg.db_nodes)
        low, high, again = self.cfg.burst_s
        return [self.run("burst", app, [Phase(low, 0.5 * rates[app]), Phase(high, 2.0 * rates[app]),
                                        Phase(again, 0.5 * rates[app])],
                         drop_after_s=self.cfg.drop_after_s, config={"base_rate": rates[app]})
                for app in self.cfg.apps]

    def fault(self) -> list[dict]:
        from async_triggers import cluster as cluster_mod
        from async_triggers.spark_jobs.loadgen import Phase
        rate = 0.8 * min(self._saturating_rates().values())
        self.use_cluster(self.cfg.fault_nodes)
        victim = "node2"
        cfg = self.cfg

        def kill_and_restart(launched: float) -> list[dict]:
            # the load generator starts its schedule a few seconds after launch (Spark, then a barrier)
            offset = launched + loadgen_start_s()
            time.sleep(max(0.0, offset + cfg.kill_at_s - time.time()))
            cluster_mod.kill_node(self.settings, victim, name=self.cluster_name, progress=self.progress)
            killed = time.time()
            time.sleep(max(0.0, offset + cfg.restart_at_s - time.time()))
            restarted = time.time()
            cluster_mod.start_node(self.settings, victim, name=self.cluster_name, progress=self.progress)
            return [{"at": killed, "what": f"kill -9 {victim}"}, {"at": restarted, "what": f"restart {victim}"},
                    {"at": time.time(), "what": f"{victim} answers CQL"}]

        return [self.run("fault", app, [Phase(cfg.fault_s, rate)], during=kill_and_restart, verify=True,
                         config={"base_rate": rate / 0.8, "victim": victim}) for app in cfg.apps]

    def scale(self) -> dict[str, dict]:
        """Saturating throughput and resources on fault_nodes nodes (the second point of Figure 8)."""
        return self.saturating(nodes=self.cfg.fault_nodes)


class NoProbe:
    """The plain write has no propagation to probe."""
    sent = 0
    lags_ms: list = []
    errors: list = []

    def start(self) -> "NoProbe":
        return self

    def stop(self) -> None:
        pass


def loadgen_start_s() -> float:
    """How long after the Spark job is launched its schedule starts (Python workers, senders, barrier, delay)."""
    from async_triggers.spark_jobs.loadgen import DEFAULT_START_DELAY_S
    return 3.0 + DEFAULT_START_DELAY_S


def run_experiments(config: BenchConfig, names: Sequence[str], settings=None, progress: Progress = print) -> Path:
    """Run the named experiments in order (``all``: every one), then write the report; returns report.md."""
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise BenchError(f"unknown experiment(s) {', '.join(unknown)}: choose from {', '.join(EXPERIMENTS)}")
    bench = Bench(config, settings, progress)
    try:
        for name in names:
            {"bulk": bench.bulk, "saturating": bench.saturating, "80pct": bench.eighty, "burst": bench.burst,
             "fault": bench.fault, "scale": bench.scale}[name]()
    finally:
        bench.close()
        if bench.cluster_name and not config.reuse_cluster and not config.keep_cluster:
            from async_triggers import cluster as cluster_mod
            cluster_mod.down(bench.settings, name=bench.cluster_name, progress=progress)
    from async_triggers.benchmarks import model, report
    runs = results_mod.load_runs(config.out)
    for projected in model.report_scale(runs):
        results_mod.write_run(config.out, projected)
    return report.build(config.out)
