"""A fuzz campaign: the cluster (made for it unless one is named that exists), then one run per seed: a seeded
history, drained and verified; one line per seed; a failing seed keeps its evidence under ``<out>/seed-<seed>/`` and
is shrunk; a summary counts the runs, the failures, every write shape and every column type and flow shape used.

Seeds come in groups of ``design_every`` (seed // design_every): each group draws a design of its own (``schema``:
its tables, column types and flows), created in a keyspace of its own and deployed before the group's first run;
the flows of the group before are dropped, and its keyspace with them.

The cluster it makes syncs its commit log before acknowledging (``commitlog_sync: batch``), as the chaos campaign's
does (docs/design.md, "Durability"): a stopped replica must not forget what it acknowledged.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from async_triggers import cluster as cluster_mod, connection as connection_mod, connection_clients, deploy
from ..config import Settings
from ..cql_script import run_text
from ..errors import ConfigError
from ..flow_file import load_flow_file
from . import generator, oracle, runner, schema, shrinker

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class FuzzConfig:
    out: Path
    seeds: int = 30                 # runs: seeds seed, seed + 1, ...
    seed: int = 1
    replay: int | None = None       # run only this seed
    ops: int = 40                   # operations per history
    faults: bool = True             # about a third of the histories stop a replica
    shrink: bool = True
    shrink_runs: int = 16           # candidate runs a failing seed's shrink may make
    cluster: str = "fuzz"
    nodes: int = 3
    replication_factor: int = 2
    keyspace: str = schema.KEYSPACE   # the designs' keyspaces are <keyspace>_d<design>
    master: str = "local[2]"
    drain_timeout_s: float = 300.0
    design_every: int = 10          # seeds per design

    def __post_init__(self):
        if self.seeds < 1 and self.replay is None:
            raise ConfigError(f"--seeds must be at least 1, found: {self.seeds}")
        if self.ops < 1:
            raise ConfigError(f"--ops must be at least 1, found: {self.ops}")
        if self.shrink_runs < 0:
            raise ConfigError(f"--shrink-runs must be zero or more, found: {self.shrink_runs}")
        if not self.keyspace.isidentifier() or self.keyspace.lower() != self.keyspace:
            raise ConfigError(f"--keyspace must be a lower-case CQL identifier, found: {self.keyspace!r}")
        if self.design_every < 1:
            raise ConfigError(f"--design-every must be at least 1, found: {self.design_every}")

    def seed_list(self) -> list[int]:
        return [self.replay] if self.replay is not None else [self.seed + i for i in range(self.seeds)]

    def design(self, seed: int) -> schema.Design:
        return schema.draw(seed // self.design_every)

    def design_keyspace(self, design: schema.Design) -> str:
        return f"{self.keyspace}_d{design.seed}"

    def history(self, seed: int) -> generator.History:
        return generator.generate(seed, self.design(seed), self.ops, self.nodes, fault_rate=1 / 3 if self.faults else 0.0)


@dataclasses.dataclass
class Summary:
    runs: int
    failed_seeds: list[int]
    shapes: Counter
    ops: int
    refused_ops: int
    designs: list[str] = dataclasses.field(default_factory=list)

    def line(self) -> str:
        failed = ", ".join(map(str, self.failed_seeds)) or "none"
        return (f"summary: {self.runs} seed(s), {len(self.failed_seeds)} failed (seeds: {failed}); "
                f"{self.ops} ops ({self.refused_ops} refused); {len(self.designs)} design(s), each with a flow "
                f"deployed and backfilled in the middle of its first run; shapes: {generator.summary_of(self.shapes)}; "
                f"types: {', '.join(sorted(schema.types_of(self.designs_drawn)))}; "
                f"flows: {', '.join(sorted(schema.flow_shapes_of(self.designs_drawn)))}")

    @property
    def designs_drawn(self) -> list[schema.Design]:
        return [schema.draw(int(d)) for d in self.designs]

    def as_dict(self) -> dict:
        return {"runs": self.runs, "failed_seeds": self.failed_seeds, "ops": self.ops,
                "refused_ops": self.refused_ops, "shapes": {s: self.shapes.get(s, 0) for s in generator.SHAPES},
                "designs": [d.describe() for d in self.designs_drawn],
                "types": sorted(schema.types_of(self.designs_drawn)),
                "flow_shapes": sorted(schema.flow_shapes_of(self.designs_drawn))}


class _RunIds:
    """Run ids: the campaign's start in milliseconds, then one more per run (every run's keys are its own, on a
    reused keyspace too)."""

    def __init__(self):
        self.next = int(time.time() * 1000) * 1000

    def __call__(self) -> int:
        self.next += 1
        return self.next


def _setup(settings: Settings, config: FuzzConfig, progress: Progress):
    existing = cluster_mod.load_cluster(settings, config.cluster)
    info = cluster_mod.up(settings, nodes=config.nodes, name=config.cluster,
                          progress=progress, commitlog_sync=None if existing is not None else "batch")
    conn = settings.with_hosts(info.contact_points).connection
    from cassandra.policies import ConstantReconnectionPolicy
    driver = connection_clients.make_cluster(connection_mod.with_password(conn),
                                         reconnection_policy=ConstantReconnectionPolicy(1.0, max_attempts=None))
    session = driver.connect()
    session.default_timeout = 30
    from async_triggers.spark_jobs.session import build_session
    spark = build_session(master=config.master, connection=conn, app_name="fuzz-check", conf=oracle.session_conf())
    nodes = tuple((n.name, n.address) for n in info.nodes)
    return info, runner.Cluster(settings, config.cluster, session, spark, config.keyspace, nodes,
                                drain_timeout_s=config.drain_timeout_s)


def _use_design(c: runner.Cluster, config: FuzzConfig, design: schema.Design, progress: Progress) -> str:
    """The design's tables in a keyspace of its own and its flows deployed, the design before it gone; but one flow,
    deployed and backfilled in the middle of the design's first run (``_late_flow``), whose name it returns."""
    if c.design is not None:
        for name in c.design.flow_names(c.keyspace):
            try:
                deploy.drop(c.session, name)
            except Exception as e:  # noqa: BLE001 - a flow never deployed (its design's first run failed early)
                progress(f"dropping {name}: {e}")
        c.session.execute(f"DROP KEYSPACE IF EXISTS {c.keyspace}", timeout=120)
    keyspace = config.design_keyspace(design)
    run_text(c.session, design.schema_cql(keyspace, config.replication_factor))
    flow_file = config.out / f"{keyspace}_flows.py"
    flow_file.write_text(design.flow_file(keyspace))
    late = f"{keyspace}_s0_both"
    progress(f"{design.describe()}: deploying the flows {', '.join(design.flow_names(keyspace))} ({late} later)")
    deploy.deploy(c.session, [f for f in load_flow_file(flow_file) if f.name != late], progress=lambda m: None)
    c.keyspace, c.design = keyspace, design
    return late


class _LateFlow:
    """Deploys flow ``name`` of the design's flow file, then backfills it (the rows written before its capture index
    existed), while the run's clients are between the halves of its history."""

    def __init__(self, c: runner.Cluster, config: FuzzConfig, name: str, progress: Progress):
        self.c, self.config, self.name, self.progress = c, config, name, progress
        self.done = False

    def deploy(self) -> None:
        from async_triggers import plugin
        deadline = time.monotonic() + 120
        while plugin.check(self.c.session).problems and time.monotonic() < deadline:
            time.sleep(2)   # a replica restarted just before answers once its plugin has started
        flow_file = self.config.out / f"{self.c.keyspace}_flows.py"
        deploy.deploy(self.c.session, [f for f in load_flow_file(flow_file) if f.name == self.name],
                      progress=lambda m: None)
        self.done = True

    def __call__(self) -> None:
        from async_triggers.spark_jobs import backfill, specs
        self.progress(f"deploying {self.name} in the middle of the run, then backfilling it")
        self.deploy()
        time.sleep(3)   # every node applies the new flow (it polls every 2 s) before the backfill reads the source
        backfill.backfill_with_session(self.c.spark, self.c.session, specs.load_spec(self.c.spark, self.name),
                                       ranges=4, progress=lambda m: None)


def _keep(folder: Path, name: str, data) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data, indent=2, default=str) + "\n")


def _ops_text(c: runner.Cluster, history: generator.History, run: int) -> list[str]:
    return [op.text(c.keyspace, run, 0) for op in history.ops]


def _evidence(c: runner.Cluster, info, folder: Path, history: generator.History, result: runner.RunResult) -> None:
    """The failing run as it was: its operations (timestamps as offsets from the run's base), their outcomes, the
    checks, every row of the run in every table (at ALL), and the nodes' logs."""
    _keep(folder, "history.json", {"seed": history.seed, "run": result.run, "base": result.base,
                                   "fault": dataclasses.asdict(history.fault) if history.fault else None,
                                   "ops": _ops_text(c, history, result.run), "outcomes": result.outcomes})
    _keep(folder, "result.json", result.as_dict())
    try:
        _keep(folder, "rows.json", runner.run_rows(c, result.run))
    except Exception as e:  # noqa: BLE001 - evidence is a bonus: the verdict stands without it
        _keep(folder, "rows.json", {"error": repr(e)})
    for node in info.nodes:
        log = Path(node.path) / "logs" / "system.log" if node.path else None
        if log is not None and log.is_file():
            shutil.copy(log, folder / f"{node.name}-system.log")


def _shrink(c: runner.Cluster, config: FuzzConfig, history: generator.History, result: runner.RunResult,
            run_ids: _RunIds, progress: Progress) -> shrinker.Shrunk:
    flows = result.failed_flows or c.design.flow_names(c.keyspace)

    def fails(candidate: generator.History) -> bool:
        runner.truncate(c)
        attempt = runner.run_history(c, candidate, run_ids(), flows)
        progress(f"  shrink: {len(candidate.ops)} ops{' with ' + attempt.fault if attempt.fault else ''} -> "
                 + (attempt.error or "fails" if not attempt.ok else "passes"))
        return not attempt.ok and attempt.error is None

    return shrinker.shrink(history, fails, result.suspects(c.design), shrinker.Budget(config.shrink_runs))


def run_campaign(settings: Settings, config: FuzzConfig, progress: Progress, report: Progress) -> Summary:
    """Every seed of ``config``; ``report`` gets one line per seed (and a failing seed's shrunk operations) and the
    summary, ``progress`` the rest."""
    if config.out.exists():   # a campaign's folder holds that campaign only
        for old in [config.out / "runs.jsonl", config.out / "summary.json", *config.out.glob("seed-*")]:
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
    config.out.mkdir(parents=True, exist_ok=True)
    created = cluster_mod.load_cluster(settings, config.cluster) is None
    try:
        info, c = _setup(settings, config, progress)
    except BaseException:
        if created:
            cluster_mod.down(settings, name=config.cluster, progress=progress)
        raise
    run_ids = _RunIds()
    shapes: Counter = Counter()
    failed, ops, refused, runs, designs = [], 0, 0, 0, []
    replay_flags = f"--ops {config.ops} --design-every {config.design_every}" + ("" if config.faults else " --no-faults")
    try:
        report(f"fuzz: {len(config.seed_list())} seed(s) of {config.ops} ops, a design every {config.design_every}")
        for seed in config.seed_list():
            design = config.design(seed)
            midway = None
            if c.design is None or c.design.seed != design.seed:
                late = _use_design(c, config, design, progress)
                midway = _LateFlow(c, config, late, progress)
                designs.append(str(design.seed))
                report(design.describe())
            history = config.history(seed)
            shapes += history.shapes()
            runner.truncate(c)
            try:
                result = runner.run_history(c, history, run_ids(), design.flow_names(c.keyspace), progress,
                                            midway=midway)
            finally:
                if midway is not None and not midway.done:   # the run failed before: deploy it for the next runs
                    midway.deploy()
            runs += 1
            ops += result.ops
            refused += result.failed_ops
            report(result.line())
            with (config.out / "runs.jsonl").open("a") as f:
                f.write(json.dumps(result.as_dict(), default=str) + "\n")
            if result.ok:
                continue
            failed.append(seed)
            folder = config.out / f"seed-{seed}"
            _evidence(c, info, folder, history, result)
            if config.shrink and result.error is None and config.shrink_runs:
                shrunk = _shrink(c, config, history, result, run_ids, progress)
                _keep(folder, "shrunk.json", {"seed": seed, "runs": shrunk.runs, "exhausted": shrunk.exhausted,
                                              "fault": dataclasses.asdict(shrunk.history.fault)
                                              if shrunk.history.fault else None,
                                              "ops": _ops_text(c, shrunk.history, 0)})
                shown = shrunk.history
                report(f"  seed {seed} shrunk to {len(shown.ops)} of {len(history.ops)} ops in {shrunk.runs} runs"
                       + (" (budget spent)" if shrunk.exhausted else "")
                       + (f", {shown.fault.describe()}" if shown.fault else "") + ":")
            else:
                shown = history
                report(f"  seed {seed}'s {len(shown.ops)} ops:")
            for line in _ops_text(c, shown, 0):
                report(f"    {line}")
            report(f"  evidence: {folder} (replay: ctl fuzz run --replay {seed} {replay_flags})")
    finally:
        summary = Summary(runs, failed, shapes, ops, refused, designs)
        _keep(config.out, "summary.json", summary.as_dict())
        c.session.cluster.shutdown()
        c.spark.stop()
        if created:   # a cluster made for the campaign goes with it; one it was given stays
            cluster_mod.down(settings, name=config.cluster, progress=progress)
    report(summary.line())
    return summary
