"""The test bed every experiment runs on: a ccm cluster (``db_nodes`` nodes; the fault and scale experiments use
``fault_nodes``), the Twitter schema with the run's replication factor, the follower graph loaded with Spark, the
flow deployed for the integrated approach and dropped for the others, a private RabbitMQ node for the external
queue, and the local Spark (``local[partitions]``) that runs the load generator and the verification.
"""
from __future__ import annotations

from typing import Callable

from async_triggers import config as pconfig
from async_triggers.benchmarks.apps.cassandra import KEYSPACE, SESSIONS, Target
from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.harness.config import FLOW, BenchConfig
from async_triggers.benchmarks.harness.twitter_example import report_flow, report_tables

Progress = Callable[[str], None]


class Testbed:
    """One cluster at a time (they share 127.0.0.x), with what the experiments learnt about it and the
    saturating rates measured in this process."""

    def __init__(self, config: BenchConfig, settings=None, progress: Progress = print):
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
        self.saturating_rates: dict[str, list[float]] = {}   # by app: one per repetition of the search
        self.repetition = 1
        self.search_start: dict[tuple[str, int], float] = {}   # (app, nodes): where a repeated search starts
        self.warmed: set[str] = set()   # the approaches that warmed the current cluster's JIT up (search_warmup_s)
        # (app, nodes, repetition, phases, drop_after_s): the run of that schedule, for run_app(same_schedule=...)
        self.runs_by_schedule: dict[tuple, dict] = {}

    # -- setup ---------------------------------------------------------------------------------------------------
    def target(self) -> Target:
        return Target(self.contact_points, connection=self.connection(), write_consistency=self.cfg.write_consistency,
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
        self.warmed = set()
        self.contact_points = tuple(info.contact_points)
        self._load_schema_and_graph()

    def session(self):
        from async_triggers import cql
        return cql.connect(self.connection())

    def connection(self):
        """The settings' connection (auth, TLS) pointed at this cluster's nodes."""
        from async_triggers import connection as connection_mod
        return connection_mod.with_hosts(self.settings.connection, self.contact_points)

    def _load_schema_and_graph(self) -> None:
        from async_triggers.spark_jobs import load_twitter
        with self.session() as session:
            report_tables(session, self.cfg.replication)
        self.progress(f"loading a power-law follower graph of {self.cfg.users} users with Spark")
        spark = self.spark_session()
        gen = dict(n_users=self.cfg.users, seed=self.cfg.seed, min_celebrity=self.cfg.min_celebrity)
        counts = load_twitter.counts_df(spark, **gen).cache()
        edges = load_twitter.edges_df(spark, **gen, counts=counts)
        from async_triggers.spark_jobs.session import write_table
        write_table(load_twitter.users_df(spark, self.cfg.users, self.cfg.min_celebrity), KEYSPACE, "users")
        write_table(edges, KEYSPACE, "followers")
        self.n_users = load_twitter.effective_users(self.cfg.users, self.cfg.min_celebrity)
        top = load_twitter.top_users(counts, 3)
        counts.unpersist()
        # the lag probe's author and its one follower: two users beyond the graph, so no tweet of the load hits them
        self.probe_author, self.probe_follower = self.n_users + 1, self.n_users + 2
        with self.session() as session:
            session.execute(f"INSERT INTO {KEYSPACE}.followers (user_id, follower_id) VALUES (%s, %s)",
                            (self.probe_author, self.probe_follower))
        self.top_user = top[0]
        self.progress(f"graph: {self.n_users} users, most followed " + ", ".join(f"{u} ({n})" for u, n in top))

    def probe_authors(self, sizes) -> dict[int, tuple[int, list[int]]]:
        """Per fan-out size, an author beyond the graph (so no tweet of the load is theirs) followed by the first
        ``size`` users of the graph: size -> (author, followers). Written once per cluster."""
        if max(sizes) > self.n_users:
            raise BenchError(f"a probe author of {max(sizes)} followers needs that many users; the graph has "
                             f"{self.n_users}")
        from cassandra.concurrent import execute_concurrent_with_args
        out = {size: (self.n_users + 3 + i, list(range(1, size + 1))) for i, size in enumerate(sorted(sizes))}
        with self.session() as session:
            insert = session.prepare(f"INSERT INTO {KEYSPACE}.followers (user_id, follower_id) VALUES (?, ?)")
            execute_concurrent_with_args(session, insert, [(a, f) for a, fs in out.values() for f in fs],
                                         concurrency=64, raise_on_first_error=True)
        return out

    def spark_session(self):
        if self.spark is None:
            from async_triggers.spark_jobs.session import build_session
            self.spark = build_session(master=self.cfg.spark_master or f"local[{self.cfg.partitions}]",
                                       connection=self.connection(),
                                       app_name="bench", load_sender=True)
        return self.spark

    def flow(self):
        from async_triggers.flows import Queue, Retry
        return report_flow(FLOW, queue=Queue(capacity=100_000, workers=self.cfg.flow_workers),
                           read_consistency=self.cfg.read_consistency, write_consistency=self.cfg.write_consistency,
                           retry=Retry(max_attempts=60, max_backoff_ms=5_000, max_age_ms=1_800_000))

    def prepare(self, app: str):
        """Empty tweets and timeline; the flow deployed only for the integrated approach. Returns its spec."""
        from async_triggers import deploy
        with self.session() as session:
            deployed = deploy.read_deployed(session)
            if app == "integrated":
                # deployed again when its specification changed (another queue on a reused cluster)
                if FLOW not in deployed or deployed[FLOW].doc != deploy.plan(session, [self.flow()])[0]:
                    deploy.deploy(session, [self.flow()], progress=self.progress)
            elif FLOW in deployed:
                deploy.drop(session, FLOW, progress=self.progress)
            for table in ("tweets", "timeline"):
                session.execute(f"TRUNCATE {KEYSPACE}.{table}")
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

    def run_config(self) -> dict:
        c = self.cfg
        return {"users": self.n_users, "seed": c.seed, "replication": c.replication,
                "write_consistency": c.write_consistency, "read_consistency": c.read_consistency,
                "partitions": c.partitions, "concurrency": c.concurrency, "fanout_concurrency": c.fanout_concurrency,
                "queue_workers": c.queue_workers, "flow_workers": c.flow_workers, "cluster": self.cluster_name,
                "in_flight": c.in_flight, "jvm_sender": c.jvm_sender, "repetition": self.repetition,
                "repeat": c.repeat}

    def remove_cluster(self) -> None:
        """The last cluster down, unless it was an existing one or it is to be kept."""
        if self.cluster_name and not self.cfg.reuse_cluster and not self.cfg.keep_cluster:
            from async_triggers import cluster as cluster_mod
            cluster_mod.down(self.settings, name=self.cluster_name, progress=self.progress)
