"""`ctl bench`: the report's experiments (benchmarks/async_triggers/benchmarks/experiments/) and their report."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import List

import typer

from .exit_codes import errors_to_exit
from ..errors import ConfigError

app = typer.Typer(help="Reproduce the report's experiments: synchronous vs external queue vs integrated.",
                  no_args_is_help=True)

DEFAULT_OUT = Path("benchmarks/results")


def _phases(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(p) for p in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3 or min(parts) <= 0:
        raise ConfigError(f"--burst must be three positive seconds LOW,HIGH,LOW (e.g. 60,30,60), found: {text!r}")
    return parts


def _config(out: Path, smoke: bool, cluster: str | None, keep: bool, scale: float, db_nodes: int | None, apps: str | None,
            step_s: float | None, steady_s: float | None, burst: str | None, fault_s: float | None,
            repeat: int | None = None, master: str | None = None, scale_nodes: str | None = None,
            search_warmup_s: float | None = None):
    from async_triggers.benchmarks.harness.config import BenchConfig, smoke_config
    cfg = smoke_config(out, cluster) if smoke else BenchConfig(out=out, reuse_cluster=cluster)
    changes = {"keep_cluster": keep, "spark_master": master}
    if repeat is not None:
        if repeat < 1:
            raise ConfigError(f"--repeat must be at least 1, found: {repeat}")
        changes["repeat"] = repeat
    if scale != 1.0:
        if scale <= 0:
            raise ConfigError(f"--scale must be strictly positive, found: {scale}")
        changes.update(users=max(100, int(cfg.users * scale)), min_celebrity=max(10, int(cfg.min_celebrity * scale)))
    if db_nodes is not None:
        changes["db_nodes"] = db_nodes
    if apps:
        changes["apps"] = tuple(a.strip() for a in apps.split(",") if a.strip())
    for name, value in (("step_s", step_s), ("steady_s", steady_s), ("fault_s", fault_s),
                        ("search_warmup_s", search_warmup_s)):
        if value is not None:
            changes[name] = value
    if fault_s is not None:   # kill and restart at a third and two thirds of the run (the default 90 s: 30 s down)
        changes.update(kill_at_s=fault_s / 3, restart_at_s=2 * fault_s / 3)
    if burst:
        changes["burst_s"] = _phases(burst)
    if scale_nodes:
        changes["scale_nodes"] = _sizes(scale_nodes)
    return dataclasses.replace(cfg, **changes)


def _sizes(text: str) -> tuple[int, ...]:
    """--scale-nodes: comma-separated cluster sizes."""
    try:
        sizes = tuple(int(p) for p in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ConfigError(f"--scale-nodes must be comma-separated node counts (e.g. 3,4), found: {text!r}")
    return sizes


_OUT = typer.Option(DEFAULT_OUT, "--out", help="Results directory (one JSON + CSV per run, report.md, PNGs).")
_SMOKE = typer.Option(False, "--smoke", help="A few seconds per phase on a small graph (what `make test` runs).")
_CLUSTER = typer.Option(None, "--cluster", help="Run on this existing ccm cluster instead of creating bench2n / "
                                                "bench3n (its node count is used throughout).")
_KEEP = typer.Option(False, "--keep-cluster", help="Leave the last cluster up at the end.")
_SCALE = typer.Option(1.0, "--scale", help="Graph size relative to the default 100,000 users.")
_NODES = typer.Option(None, "--db-nodes", help="Cassandra nodes for Tables 1-3 (default 2).")
_REPEAT = typer.Option(None, "--repeat", help="Run each experiment this many times (default 3; 1 with --smoke): "
                                              "tables give the median and min-max, targets must hold in each.")
_MIXED = typer.Option(False, "--allow-mixed-commits", help="Report runs made by different commits together "
                                                           "(refused by default).")
_MASTER = typer.Option(None, "--master", help="Spark master of the load generator and the checks (default "
                                               "local[PARTITIONS]; spark://... with `ctl spark up`).")
_REPLACE = typer.Option(False, "--replace", help="Delete the runs, raw requests, figures and report in --out first.")
_APPS = typer.Option(None, "--apps", help="Comma-separated subset of synchronous,external_queue,integrated; plain (a tweet write and no flow) too.")
_STEP = typer.Option(None, "--step-s", help="Seconds per step of the saturation search (default 10; the report: 20).")
_STEADY = typer.Option(None, "--steady-s", help="Seconds of the 80 % runs, at the common and at each approach's own "
                                                  "rate (default 25; the report: 60).")
_BURST = typer.Option(None, "--burst", help="Seconds at 50 %, 200 %, 50 % of the bursts, at the common and at each "
                                            "approach's own rate (default 10,30,10; the report: 60,30,60).")
_SIZES = typer.Option(None, "--scale-nodes", help="Cluster sizes of the scale experiment beside --db-nodes, "
                                                   "comma-separated (default 4; 3,4 draws the middle too: about "
                                                   "30 min more).")
_WARMUP = typer.Option(None, "--search-warmup-s", help="Seconds each saturation search first runs its approach at "
                                                      "the search's first rate, not counted: the nodes' JIT warms "
                                                      "up (default 0: none).")
_FAULT = typer.Option(None, "--fault-s", help="Seconds of the fault run; kill at a third, restart at two thirds "
                                              "(default 90: 30 and 60; the report: 150, 60 and 90).")


_JSON = typer.Option(False, "--json", help="Where the report is, as JSON (the progress goes to stderr).")


@app.command("run")
def run(ctx: typer.Context,
        names: List[str] = typer.Argument(..., help="capacity, bulk, saturating, 80pct, 80pct_own, burst, burst_own, "
                                                    "fault, scale"),
        out: Path = _OUT, smoke: bool = _SMOKE, cluster: str = _CLUSTER, keep: bool = _KEEP, scale: float = _SCALE,
        db_nodes: int = _NODES, apps: str = _APPS, step_s: float = _STEP, steady_s: float = _STEADY,
        burst: str = _BURST, fault_s: float = _FAULT, repeat: int = _REPEAT, replace: bool = _REPLACE,
        allow_mixed_commits: bool = _MIXED, master: str = _MASTER, as_json: bool = _JSON,
        scale_nodes: str = _SIZES, search_warmup_s: float = _WARMUP):
    """Run the named experiments (in the order given), then rewrite the report."""
    from async_triggers.benchmarks.experiments import prepare_out, run_experiments
    with errors_to_exit():
        cfg = _config(out, smoke, cluster, keep, scale, db_nodes, apps, step_s, steady_s, burst, fault_s, repeat,
                      master, scale_nodes, search_warmup_s)
        prepare_out(cfg.out, replace, allow_mixed_commits)
        path = run_experiments(cfg, names, ctx.obj, progress=lambda m: typer.echo(f"-- {m}", err=True),
                               allow_mixed_commits=allow_mixed_commits)
    _report_path(path, cfg.out, as_json)


@app.command("all")
def run_all(ctx: typer.Context, out: Path = _OUT, smoke: bool = _SMOKE, cluster: str = _CLUSTER,
            keep: bool = _KEEP, scale: float = _SCALE, db_nodes: int = _NODES, apps: str = _APPS, step_s: float = _STEP,
            steady_s: float = _STEADY, burst: str = _BURST, fault_s: float = _FAULT, repeat: int = _REPEAT,
            replace: bool = _REPLACE, allow_mixed_commits: bool = _MIXED, master: str = _MASTER,
            as_json: bool = _JSON, scale_nodes: str = _SIZES, search_warmup_s: float = _WARMUP):
    """Every experiment: load generator capacity, bulk writer, saturating, 80 % (at a common rate and at each
    approach's own), burst (likewise), fault, scale; then the report."""
    from async_triggers.benchmarks.experiments import EXPERIMENTS, prepare_out, run_experiments
    with errors_to_exit():
        cfg = _config(out, smoke, cluster, keep, scale, db_nodes, apps, step_s, steady_s, burst, fault_s, repeat,
                      master, scale_nodes, search_warmup_s)
        prepare_out(cfg.out, replace, allow_mixed_commits)
        path = run_experiments(cfg, EXPERIMENTS, ctx.obj, progress=lambda m: typer.echo(f"-- {m}", err=True),
                               allow_mixed_commits=allow_mixed_commits)
    _report_path(path, cfg.out, as_json)


@app.command("plan")
def plan_cmd(names: List[str] = typer.Argument(None, help="Experiments (default: all, as `ctl bench all`)."),
             smoke: bool = _SMOKE, db_nodes: int = _NODES, apps: str = _APPS, step_s: float = _STEP,
             steady_s: float = _STEADY, burst: str = _BURST, fault_s: float = _FAULT, repeat: int = _REPEAT,
             as_json: bool = _JSON, scale_nodes: str = _SIZES, search_warmup_s: float = _WARMUP):
    """How long the run would take with these options (the model in benchmarks/async_triggers/benchmarks/harness/plan.py)."""
    from async_triggers.benchmarks.experiments import EXPERIMENTS
    from async_triggers.benchmarks.harness import plan
    with errors_to_exit():
        unknown = [n for n in names or () if n not in EXPERIMENTS]
        if unknown:
            raise ConfigError(f"unknown experiment(s) {', '.join(unknown)}: choose from {', '.join(EXPERIMENTS)}")
        cfg = _config(DEFAULT_OUT, smoke, None, False, 1.0, db_nodes, apps, step_s, steady_s, burst, fault_s, repeat,
                      scale_nodes=scale_nodes, search_warmup_s=search_warmup_s)
        text = plan.describe(cfg, names or None)
    typer.echo(json.dumps({"experiments": list(names or EXPERIMENTS), "plan": text}) if as_json else text)


@app.command("report")
def report(results: Path = typer.Argument(DEFAULT_OUT, help="Results directory."),
           out: Path = typer.Option(None, "--out", help="Where report.md and the PNGs go (default: RESULTS)."),
           db_nodes: int = _NODES, plots: bool = typer.Option(True, "--plots/--no-plots"),
           allow_mixed_commits: bool = _MIXED, as_json: bool = _JSON):
    """Tables 1-4 beside the report's numbers, the targets, Figures 6-8 as PNGs; from the committed results, also
    the generated targets block of docs/benchmarks.md."""
    from async_triggers.benchmarks import report as report_mod
    with errors_to_exit():
        path = report_mod.build(results, out, db_nodes, plots=plots, allow_mixed_commits=allow_mixed_commits)
    _report_path(path, results, as_json)


def _report_path(path, results: Path, as_json: bool) -> None:
    typer.echo(json.dumps({"report": str(path), "results": str(results)}) if as_json else f"report: {path}")
