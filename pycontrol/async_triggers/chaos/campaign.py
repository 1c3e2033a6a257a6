"""A chaos campaign: the cluster and flows set up once, a fault-free reference run, then faulty runs.

The cluster it makes syncs its commit log before acknowledging a write (``commitlog_sync: batch``): with Cassandra's
default periodic sync a node killed -9 forgets its last ~100 ms of acknowledged writes, so killing every node can
keep a later write of a flow (a task's completion) and lose an earlier one (the delete of a derived row) on every
replica, which no design built on acknowledged writes survives (docs/design.md, "Durability").

Each run: the clients write the campaign's inputs (own tweet ids) while the nemesis plays the run's seeded
schedule; then every node is started again, the flows drain (no task queued, running or left in a backup map
on any node) and Spark checks the run (async_triggers.spark_jobs.chaos_check). A run passes with nothing missing, nothing
unexpected and tables equal to the reference run's (without one, ``--no-reference``: on its own source only). A
failing run keeps its evidence in ``<out>/run-<n>/``: the check's samples and the nodes' logs.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from async_triggers import cluster as cluster_mod, deploy, status
from ..config import Settings
from ..cql_script import run_text
from ..errors import ClusterError
from ..flow_file import load_flow_file
from . import evidence, nemesis, workload

Progress = Callable[[str], None]
START_TIMEOUT_S = 600.0   # a node that replays a long commit log after kill -9 takes minutes on this machine
RECHECK_AFTER_S = 30      # a failed run's second check: long after every hint and retry of the run


@dataclasses.dataclass(frozen=True)
class CampaignConfig:
    out: Path
    runs: int = 3                       # faulty runs, after the reference run
    seed: int = 1                       # draws each run's fault seed
    replay: int | None = None           # run only this fault seed (after the reference)
    from_run: int = 1                   # the first faulty run to play (the draw stays the seed's: resumes a campaign)
    kinds: tuple[str, ...] = nemesis.KINDS
    master: str = "local[2]"            # the Spark master of each run's check
    faults_per_run: int | None = None   # None: one or two, drawn
    cluster: str = "chaos"
    nodes: int = 3
    replication_factor: int = 2
    workload_seed: int = 7
    users: int = 12_000
    celebrity_followers: int = 10_500
    celebrity_tweets: int = 2
    tweets: int = 1_200
    follows: int = 60                   # users of the run's own who follow an author; half unfollow again
    load_s: float = 40.0
    client_threads: int = 32
    drain_timeout_s: float = 600.0
    reference: bool = True              # False: no reference run, no comparison with it ('differs' stays 0)


@dataclasses.dataclass
class RunResult:
    index: int
    fault_seed: int | None
    faults: list[str]
    events: list[dict]
    writes: int
    retried: int
    gave_up: int
    drained_s: float | None
    missing: int
    unexpected: int
    differs: int
    seconds: float
    error: str | None = None
    # a failed run is checked once more after the cluster settled again: (missing, unexpected, wrong value, differs)
    recheck: tuple[int, int, int, int] | None = None
    wrong_value: int = 0     # rows present with a value their source does not imply (verify's third kind)

    @property
    def ok(self) -> bool:
        return (self.error is None and self.gave_up == 0
                and self.missing == self.unexpected == self.wrong_value == self.differs == 0)

    def line(self) -> str:
        what = "reference (no fault)" if self.fault_seed is None else f"seed {self.fault_seed} " + "; ".join(self.faults)
        drained = f"drained in {self.drained_s:.0f}s" if self.drained_s is not None else "not drained"
        verdict = "ok" if self.ok else f"FAILED{': ' + self.error if self.error else ''}"
        if self.recheck is not None:
            verdict += " (checked again {}s later: missing {} unexpected {} wrong value {} differs {})".format(
                RECHECK_AFTER_S, *self.recheck)
        return (f"run {self.index:>2} {what} | writes {self.writes} (retried {self.retried}, gave up {self.gave_up}) | "
                f"{drained} | missing {self.missing} unexpected {self.unexpected} wrong value {self.wrong_value} "
                f"differs {self.differs} | {self.seconds:.0f}s | {verdict}")


def _session(conn):
    """A driver session (async_triggers.connection: auth, TLS) that reconnects every second (the default backs off
    for minutes after a restart of all nodes) and retries nothing itself: the clients do."""
    from cassandra.policies import ConstantReconnectionPolicy

    from async_triggers import connection as connection_mod, connection_clients

    c = connection_clients.make_cluster(connection_mod.with_password(conn),
                                    reconnection_policy=ConstantReconnectionPolicy(1.0, max_attempts=None))
    session = c.connect()
    session.default_timeout = 30
    return session


def _setup(settings: Settings, config: CampaignConfig, progress: Progress):
    existing = cluster_mod.load_cluster(settings, config.cluster)
    sync = None if existing is None else cluster_mod.commitlog_sync_of(existing)
    if sync is not None and "restart_all" in config.kinds and sync not in ("batch", "group"):
        raise ClusterError(
            f"cluster {config.cluster} runs with commitlog_sync {sync}: restart_all "
            "kills every node, and each then forgets its last ~100 ms of acknowledged writes, the flows' bookkeeping "
            "among them (docs/design.md, 'Durability'); give the campaign a cluster made with "
            "`ctl cluster up --commitlog-sync batch`, a new cluster name, or --kinds without restart_all")
    info = cluster_mod.up(settings, nodes=config.nodes, name=config.cluster, progress=progress,
                          commitlog_sync=None if existing is not None else "batch")
    session = _session(settings.with_hosts(info.contact_points).connection)
    run_text(session, workload.schema_cql(config.replication_factor))
    if session.execute(f"SELECT user_id FROM {workload.KEYSPACE}.followers LIMIT 1").one() is None:
        # before the deploy: a following fan-out deployed over them starts paused until the run's Spark copies
        # them (_copy_held), instead of one task per follow
        graph = workload.follower_graph(config.users, config.celebrity_followers, config.workload_seed)
        from cassandra.concurrent import execute_concurrent_with_args
        insert = session.prepare(f"INSERT INTO {workload.KEYSPACE}.followers (user_id, follower_id) VALUES (?, ?)")
        results = execute_concurrent_with_args(session, insert, graph.edges, concurrency=64, raise_on_first_error=True)
        progress(f"follower graph: {config.users} users, {len(results)} edges, the celebrity has "
                 f"{config.celebrity_followers} followers")
    else:   # a cluster an earlier campaign made: its graph, as the runs left it (each removes its own follows)
        progress(f"follower graph: the one already in {workload.KEYSPACE}.followers")
    flow_file = config.out / "chaos_flows.py"
    flow_file.write_text(workload.FLOW_FILE)
    deploy.deploy(session, load_flow_file(flow_file), progress=lambda m: None)
    return info, session


def _copy_held(session, spark, progress: Progress) -> None:
    """A following flow the deploy held (its fan-out table had rows): its copy filled with Spark, then resumed, as
    `ctl trigger backfill` does (the chaos tables hold no tweet before the first run)."""
    from async_triggers.spark_jobs import follows as spark_follows
    from async_triggers.spark_jobs.backfill import LINEAGE_WRITE_CONSISTENCY

    paused = status.paused_flows(session)
    for name, spec in deploy.read_deployed(session).items():
        if name in paused and name in workload.FLOWS and spark_follows.following_target(spec) is not None:
            spark_follows.fill_copy(spark, spec, LINEAGE_WRITE_CONSISTENCY, progress)
            spark_follows.resume_held(session, name, progress)


def _nodes(info) -> list[str]:
    return [n.name for n in info.nodes]


def _current(settings: Settings, config: CampaignConfig):
    """The cluster as it is now: a membership fault changes its nodes (nemesis.py)."""
    return cluster_mod.cluster_info(settings, config.cluster)


JAVA_FORM = "-Dasync_triggers.task_format=java"


def _start(settings: Settings, config: CampaignConfig, node: str, forms: dict[str, str]) -> None:
    """Start a node in the stored task form a roll last gave it (``forms``: node -> "java" | "versioned")."""
    cluster_mod.start_node(settings, node, name=config.cluster, progress=lambda m: None, timeout=START_TIMEOUT_S,
                           jvm_args=[JAVA_FORM] if forms.get(node) == "java" else [])


def _hands(settings: Settings, config: CampaignConfig, forms: dict[str, str]) -> nemesis.Hands:
    quiet = lambda m: None  # noqa: E731

    def cut(links) -> None:
        ends = {n: cluster_mod.storage_endpoint(settings, n, name=config.cluster)
                for n in _nodes(_current(settings, config))}
        cluster_mod.network.cut(config.cluster, [(a, ends[a][0], ends[b][1], ends[b][2]) for a, b in links])

    def switch(node: str) -> str:
        forms[node] = "versioned" if forms.get(node) == "java" else "java"
        return forms[node]

    return nemesis.Hands(
        kill=lambda n: cluster_mod.kill_node(settings, n, name=config.cluster, progress=quiet),
        stop=lambda n: cluster_mod.stop_node(settings, n, name=config.cluster, progress=quiet),
        start=lambda n: _start(settings, config, n, forms),
        pause=lambda n: cluster_mod.pause_node(settings, n, name=config.cluster),
        resume=lambda n: cluster_mod.resume_node(settings, n, name=config.cluster),
        cut=cut, heal=cluster_mod.network.heal, switch=switch,
        add=lambda: cluster_mod.add_node(settings, name=config.cluster, progress=quiet, timeout=START_TIMEOUT_S).name,
        decommission=lambda n: cluster_mod.decommission(settings, n, name=config.cluster, progress=quiet,
                                                        timeout=START_TIMEOUT_S),
        replace=lambda n: cluster_mod.replace_node(settings, n, name=config.cluster, progress=quiet,
                                                   timeout=START_TIMEOUT_S).name)


def _unfreeze(settings: Settings, config: CampaignConfig) -> None:
    """No partition rule left, every paused JVM resumed (nodes that are down stay down)."""
    cluster_mod.network.heal()
    for node in _nodes(_current(settings, config)):
        cluster_mod.resume_node(settings, node, name=config.cluster)


def _heal(settings: Settings, config: CampaignConfig, forms: dict[str, str]) -> None:
    """No partition, no paused JVM, every node running."""
    cluster_mod.network.heal()
    for node in _nodes(_current(settings, config)):
        cluster_mod.resume_node(settings, node, name=config.cluster)
        _start(settings, config, node, forms)


def _keep_evidence(settings: Settings, config: CampaignConfig, folder: Path, check: dict | None,
                   rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if check is not None:
        (folder / "check.json").write_text(json.dumps(check, indent=2, default=str))
    if rows:
        (folder / "rows.json").write_text(json.dumps(rows, indent=2, default=str))
    for node in _current(settings, config).nodes:
        log = node.path / "logs" / "system.log" if node.path else None
        if log is not None and log.is_file():
            shutil.copy(log, folder / f"{node.name}-system.log")


def run_campaign(settings: Settings, config: CampaignConfig, progress: Progress, report: Progress) -> list[RunResult]:
    """The reference run, then the faulty runs; ``report`` gets one line per run and the summary."""
    from async_triggers.spark_jobs.chaos_check import check
    from async_triggers.spark_jobs.session import build_session

    if config.out.exists():   # a campaign's folder holds that campaign only
        for old in [config.out / "runs.jsonl", config.out / "summary.json", config.out / "reference",
                    *config.out.glob("run-*")]:
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
    config.out.mkdir(parents=True, exist_ok=True)
    created = cluster_mod.load_cluster(settings, config.cluster) is None
    if set(config.kinds) & set(nemesis.PARTITIONS):
        cluster_mod.network.require()   # refused before anything starts
    cluster_mod.network.heal()   # rules an interrupted campaign may have left
    info, session = _setup(settings, config, progress)
    _unfreeze(settings, config)
    spark = build_session(master=config.master, connection=settings.with_hosts(info.contact_points).connection,
                          app_name="chaos-check")
    _copy_held(session, spark, progress)
    ops = workload.operations(config.workload_seed, config.tweets, config.load_s, config.users, config.celebrity_tweets,
                              config.follows)
    campaign_base = int(time.time()) * 1_000_000_000   # a campaign's ids are its own, on a reused cluster too
    reference = config.out / "reference" if config.reference else None
    rng = random.Random(config.seed)
    seeds: list[int | None] = [None]
    seeds += [config.replay] if config.replay is not None else [rng.randrange(2 ** 31) for _ in range(config.runs)]
    report(f"campaign: seed {config.seed}, {len(seeds) - 1} faulty run(s) "
           + (f"(playing runs {config.from_run} to {len(seeds) - 1}) " if config.from_run > 1 else "")
           + ("after the reference" if config.reference else "without a reference run") + f"; inputs: "
           f"{len(ops)} writes of {config.tweets} tweets and {config.follows} follows in {config.load_s:.0f}s (workload seed {config.workload_seed})")
    results = []
    forms: dict[str, str] = {}   # the stored task form a roll gave each node (nemesis.py)
    for index, fault_seed in enumerate(seeds):
        if index == 0 and not config.reference:
            continue   # run ids stay those of a campaign with its reference
        if 0 < index < config.from_run:
            continue   # played by an earlier part of the campaign: same seed, same run, same fault seed
        result = _run(settings, config, session, spark, check, ops, index, fault_seed,
                      campaign_base + index * workload.ID_STRIDE, reference, progress, forms)
        report(result.line())
        results.append(result)
        with (config.out / "runs.jsonl").open("a") as f:
            f.write(json.dumps(dataclasses.asdict(result), default=str) + "\n")
        if index == 0 and not result.ok:
            break   # without a good reference the other runs cannot be compared
    faults = Counter(f.split()[0] for r in results for f in r.faults)
    summary = {"runs": sum(1 for r in results if r.fault_seed is not None), "faults": sum(faults.values()), "by_kind": dict(faults),
               "missing": sum(r.missing for r in results), "unexpected": sum(r.unexpected for r in results),
               "wrong_value": sum(r.wrong_value for r in results),
               "differs": sum(r.differs for r in results), "gave_up": sum(r.gave_up for r in results),
               "failed_runs": [r.index for r in results if not r.ok]}
    (config.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    report(f"summary: {summary['runs']} faulty run(s), {summary['faults']} fault(s) injected "
           f"({', '.join(f'{k} {v}' for k, v in sorted(faults.items())) or 'none'}), missing {summary['missing']}, "
           f"unexpected {summary['unexpected']}, wrong value {summary['wrong_value']}, differs {summary['differs']}, writes given up {summary['gave_up']}, "
           f"failed runs: {summary['failed_runs'] or 'none'}")
    session.cluster.shutdown()
    spark.stop()
    if created:   # a cluster made for the campaign goes with it; one it was given stays
        cluster_mod.down(settings, name=config.cluster, progress=progress)
    return results


def _run(settings, config, session, spark, check, ops, index, fault_seed, id_base, reference, progress,
         forms: dict[str, str]) -> RunResult:
    started = time.monotonic()
    nodes = _nodes(_current(settings, config))
    faults = [] if fault_seed is None else nemesis.schedule(fault_seed, nodes, config.load_s, config.kinds,
                                                             config.faults_per_run)
    progress(f"run {index}: " + ("reference, no fault" if not faults else "; ".join(f.describe() for f in faults)))
    nem = nemesis.Nemesis(faults, _hands(settings, config, forms), progress=progress)
    result = RunResult(index, fault_seed, [f.describe() for f in faults], [], 0, 0, 0, None, 0, 0, 0, 0.0)
    check_result = None

    def drain() -> None:
        status.wait_drained(session, list(workload.DRAINED), dt.datetime.utcnow(), timeout=config.drain_timeout_s,
                            progress=lambda m: None)

    def check_run(write_reference: bool) -> dict:
        return check(spark, workload.FLOWS, [(f"{workload.KEYSPACE}.{t}", c) for t, c in workload.TABLES],
                     "tweet_id", id_base, id_base + workload.ID_STRIDE, reference, write_reference=write_reference,
                     relative={f"{workload.KEYSPACE}.{t}": cs for t, cs in workload.RUN_IDS.items()})

    try:
        t0 = time.monotonic()
        nem.start(t0)
        stats = workload.write_all(session, ops, id_base, threads=config.client_threads)
        nem.join()
        result.events = [dataclasses.asdict(e) for e in nem.events]
        result.writes, result.retried, result.gave_up = stats.writes, stats.retried, stats.gave_up
        _heal(settings, config, forms)
        healed = time.monotonic()
        drain()
        result.drained_s = time.monotonic() - healed
        check_result = check_run(write_reference=index == 0)
        result.missing, result.unexpected = check_result["missing"], check_result["unexpected"]
        result.wrong_value = check_result["wrong_value"]
        result.differs = check_result["differs"]
    except ClusterError as e:
        result.error = str(e).splitlines()[0]
        try:   # the nodes the nemesis left down are started again before the next run
            _heal(settings, config, forms)
        except ClusterError as again:
            result.error += f"; and healing failed: {str(again).splitlines()[0]}"
    except BaseException:
        # interrupted (Ctrl-C, SIGTERM, an unexpected error) in the middle of a fault: no partition and no frozen
        # JVM may outlive the campaign
        _unfreeze(settings, config)
        raise
    rows: list[dict] = []
    if not result.ok and check_result is not None and index > 0:
        # what the wrong rows are made of, read now; then, once everything had time to arrive, the check again
        try:
            rows = evidence.explain(session, check_result)
            time.sleep(RECHECK_AFTER_S)
            drain()
            again = check_run(write_reference=False)
            result.recheck = (again["missing"], again["unexpected"], again["wrong_value"], again["differs"])
            rows += [{**r, "when": "second check"} for r in evidence.explain(session, again)]
        except Exception as e:  # noqa: BLE001 - the evidence is a bonus: the run's verdict stands without it
            rows.append({"error": f"evidence not gathered: {e!r}"})
    try:   # the next run starts from the same graph as the reference did
        _unfollow(session, workload.kept_follows(ops, id_base))
        drain()
    except Exception as e:  # noqa: BLE001 - the run's verdict stands; the next run's check would show the rest
        result.error = (result.error + "; " if result.error else "") + f"its follows not removed: {e}"
    result.seconds = time.monotonic() - started
    if not result.ok:
        _keep_evidence(settings, config, config.out / f"run-{index}", check_result, rows)
    return result


def _unfollow(session, pairs, attempts: int = 20) -> None:
    """Deletes the (user_id, follower_id) follows, each retried while the cluster is still settling."""
    from cassandra import ConsistencyLevel

    delete = session.prepare(f"DELETE FROM {workload.KEYSPACE}.followers WHERE user_id = ? AND follower_id = ?")
    delete.consistency_level = ConsistencyLevel.QUORUM
    for pair in pairs:
        for attempt in range(attempts):
            try:
                session.execute(delete, pair, timeout=10)
                break
            except Exception:  # noqa: BLE001 - timeouts, Unavailable: retried
                if attempt == attempts - 1:
                    raise
                time.sleep(1.0)
