"""The results schema: one JSON file per experiment run, summarising its requests, with a per-3-second time series.

The schema is described in benchmarks/README.md; :func:`validate` enforces it and is what :func:`load_runs` applies
to every file, so a report is never made from a file it misreads. :func:`summarise` turns the load generator's
per-request records (``async_triggers.spark_jobs.loadgen.Record``, or anything with the same fields) into a run; the figures that
need the cluster (completed propagations, lag, drain time, resources, verification) are given by the caller.

Percentiles are nearest-rank: the p-th percentile of n sorted values is the value at rank ceil(p/100 * n).
The standard deviation is the sample standard deviation (n - 1).
"""
from __future__ import annotations

import csv
import functools
import gzip
import json
import math
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from async_triggers.benchmarks.errors import ResultsError

SCHEMA = "async-triggers-bench/1"
# lag_fanout: make bench-lag's run (its own directory, benchmarks/results/lag; not one of the report's tables)
EXPERIMENTS = ("saturating", "80pct", "burst", "fault", "bulk_writer", "capacity", "80pct_own", "burst_own",
               "lag_fanout")
# plain: a tweet write, no flow; loadgen: the load generator's capacity (experiment capacity)
APPS = ("synchronous", "external_queue", "integrated", "bulk_writer", "plain", "loadgen")
COMPONENTS = ("app", "db", "queue")
BUCKET_S = 3.0
RESPONSE_KEYS = ("median", "mean", "stddev", "max", "p99", "p999")
LAG_KEYS = ("median", "p99", "max")
SERIES_KEYS = ("offered_msg_s", "handled_msg_s", "errors", "dropped", "response_ms_median", "response_ms_p99",
               "response_ms_max")
RESOURCE_KEYS = ("processes", "cpu_s", "memory_gb", "net_bytes")
REQUEST_KEYS = ("scheduled", "ok", "error", "dropped", "late")
CSV_FIELDS = ("task", "seq", "scheduled", "sent", "acked", "status", "late", "error", "waited")
LOADGEN_KEYS = ("late", "waited", "own_late", "own_late_fraction")   # and in_flight, own_lateness_ms


# -- statistics ----------------------------------------------------------------------------------------------------
def nearest_rank(ordered: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0 < p <= 100) of values sorted ascending: the value at rank ceil(p/100 * n)."""
    if not ordered:
        raise ValueError("no values")
    return ordered[max(0, math.ceil(round(p / 100 * len(ordered), 9)) - 1)]  # round: 99.9/100*1000 > 999


def _r(value: float, digits: int = 3) -> float:
    return round(float(value), digits)


def response_stats(values_ms: Iterable[float]) -> dict | None:
    """median, mean, stddev, max, p99, p99.9 of response times in ms; None without values."""
    ordered = sorted(values_ms)
    if not ordered:
        return None
    return {"median": _r(statistics.median(ordered)), "mean": _r(statistics.fmean(ordered)),
            "stddev": _r(statistics.stdev(ordered)) if len(ordered) > 1 else 0.0, "max": _r(ordered[-1]),
            "p99": _r(nearest_rank(ordered, 99)), "p999": _r(nearest_rank(ordered, 99.9))}


def lag_stats(values_ms: Iterable[float]) -> dict | None:
    """median, p99, max of propagation lags in ms (ack -> last timeline row); None without values."""
    ordered = sorted(values_ms)
    if not ordered:
        return None
    return {"median": _r(statistics.median(ordered)), "p99": _r(nearest_rank(ordered, 99)), "max": _r(ordered[-1])}


def timeseries(records: Sequence, start: float, duration_s: float, bucket_s: float = BUCKET_S) -> dict:
    """Per ``bucket_s`` bucket from ``start`` (epoch s): offered and handled requests per second, errors and
    dropped requests (counts), and the response times of the requests *scheduled* in the bucket.

    ``offered`` and ``dropped`` go by scheduled time, ``handled`` (acknowledged ok) and ``errors`` by the time the
    answer came, so a stall shows as a gap in ``handled`` while its cost shows in the response times of the
    requests that were due during it. The buckets cover the schedule and every answer that came after it.
    """
    if not bucket_s > 0:
        raise ResultsError(f"'bucket_s' must be strictly positive, found: {bucket_s}")
    last = max([start + duration_s] + [r.acked for r in records if r.acked is not None])
    n = max(1, math.ceil(round((last - start) / bucket_s, 9)))
    index = lambda t: min(n - 1, max(0, int((t - start) // bucket_s)))
    offered, handled, errors, dropped = [0] * n, [0] * n, [0] * n, [0] * n
    latencies: list[list[float]] = [[] for _ in range(n)]
    for r in records:
        b = index(r.scheduled)
        offered[b] += 1
        if r.status == "dropped":
            dropped[b] += 1
        elif r.status == "error":
            errors[index(r.acked)] += 1
        else:
            handled[index(r.acked)] += 1
            latencies[b].append((r.acked - r.scheduled) * 1000)
    stats = [sorted(v) for v in latencies]
    return {
        "bucket_s": bucket_s,
        "t_s": [_r(i * bucket_s) for i in range(n)],
        "offered_msg_s": [_r(c / bucket_s, 2) for c in offered],
        "handled_msg_s": [_r(c / bucket_s, 2) for c in handled],
        "errors": errors,
        "dropped": dropped,
        "response_ms_median": [_r(statistics.median(v)) if v else None for v in stats],
        "response_ms_p99": [_r(nearest_rank(v, 99)) if v else None for v in stats],
        "response_ms_max": [_r(v[-1]) if v else None for v in stats],
        "propagated_msg_s": None,
    }


# -- a run ---------------------------------------------------------------------------------------------------------
def summarise(records: Sequence, *, experiment: str, app: str, db_nodes: int, duration_s: float,
              config: Mapping[str, Any] | None = None, run_id: str | None = None,
              throughput_msg_s: float | None = None, propagation_lags_ms: Iterable[float] | None = None,
              propagated_msg_s: Sequence[float] | None = None, drain_s: float | None = None,
              fanout_rows_s: float | None = None, verification: Mapping[str, int] | None = None,
              resources: Mapping[str, Any] | None = None, events: Sequence[Mapping[str, Any]] = (),
              bucket_s: float = BUCKET_S, machine: Mapping[str, Any] | None = None,
              commit: str | None = None, in_flight: int | None = None) -> dict:
    """A run in the results schema from the load generator's records and what the harness measured besides.
    ``loadgen`` says how well the generator kept its schedule; a run where it fell behind is ``valid: false``
    with the reason (it measured the generator, not the approach)."""
    from async_triggers.spark_jobs.sending import BEHIND_AFTER_S, MAX_OWN_LATE_FRACTION, schedule_report
    if not records:
        raise ResultsError(f"run {experiment}/{app}: no requests were recorded")
    kept = schedule_report(records, in_flight)
    valid = kept.pop("kept")
    reason = None if valid else (
        f"the load generator fell behind its schedule: {kept['own_behind']} of {len(records)} requests "
        f"({kept['own_behind'] / len(records):.1%}, more than {MAX_OWN_LATE_FRACTION:.0%}) went out more than "
        f"{BEHIND_AFTER_S * 1000:g} ms late without waiting for the system under test")
    start = min(r.scheduled for r in records)
    ok = [r for r in records if r.status == "ok"]
    series = timeseries(records, start, duration_s, bucket_s)
    if propagated_msg_s is not None:
        series["propagated_msg_s"] = [_r(v, 2) for v in propagated_msg_s]
    run = {
        "schema": SCHEMA,
        "run_id": run_id or f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(start))}-{experiment}-{app}-{db_nodes}n",
        "experiment": experiment,
        "app": app,
        "db_nodes": db_nodes,
        "started_at": _r(start, 6),
        "duration_s": _r(duration_s),
        "config": dict(config or {}),
        "requests": {"scheduled": len(records), "ok": len(ok),
                     "error": sum(r.status == "error" for r in records),
                     "dropped": sum(r.status == "dropped" for r in records),
                     "late": sum(bool(r.late) for r in records)},
        "offered_msg_s": _r(len(records) / duration_s, 2),
        "acked_msg_s": _r(len(ok) / duration_s, 2),
        "throughput_msg_s": None if throughput_msg_s is None else _r(throughput_msg_s, 2),
        "response_ms": response_stats((r.acked - r.scheduled) * 1000 for r in ok),
        "propagation_lag_ms": None if propagation_lags_ms is None else lag_stats(propagation_lags_ms),
        "drain_s": None if drain_s is None else _r(drain_s),
        "fanout_rows_s": None if fanout_rows_s is None else _r(fanout_rows_s, 2),
        "verification": None if verification is None else dict(verification),
        "resources": None if resources is None else json.loads(json.dumps(resources)),
        "projected": False,
        "timeseries": series,
        "events": [dict(e) for e in events],
        "machine": dict(machine) if machine is not None else machine_description(),
        "commit": commit if commit is not None else git_commit(),
        "loadgen": kept,
        "valid": valid,
        "invalid_reason": reason,
    }
    validate(run)
    return run


def _fail(source: str, message: str) -> None:
    raise ResultsError(f"{source}: {message}")


def _number(source: str, where: str, value: Any, nullable: bool = False, minimum: float | None = 0) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(source, f"'{where}' must be a number, found: {value!r}")
    if minimum is not None and value < minimum:
        _fail(source, f"'{where}' must be at least {minimum}, found: {value!r}")


def _keys(source: str, where: str, value: Any, keys: Sequence[str], nullable: bool = True) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, dict):
        _fail(source, f"'{where}' must be an object, found: {value!r}")
    for k in keys:
        if k not in value:
            _fail(source, f"'{where}' lacks '{k}'")
        _number(source, f"{where}.{k}", value[k])


def validate(run: Any, source: str = "run") -> None:
    """Raise :class:`ResultsError` naming the file and the field when ``run`` does not follow the schema."""
    if not isinstance(run, dict):
        _fail(source, f"a run must be a JSON object, found: {type(run).__name__}")
    if run.get("schema") != SCHEMA:
        _fail(source, f"'schema' must be {SCHEMA!r}, found: {run.get('schema')!r}")
    for key in ("run_id", "experiment", "app", "db_nodes", "started_at", "duration_s", "requests", "timeseries"):
        if key not in run:
            _fail(source, f"'{key}' is missing")
    if run["experiment"] not in EXPERIMENTS:
        _fail(source, f"'experiment' must be one of {', '.join(EXPERIMENTS)}, found: {run['experiment']!r}")
    if run["app"] not in APPS:
        _fail(source, f"'app' must be one of {', '.join(APPS)}, found: {run['app']!r}")
    if not isinstance(run["db_nodes"], int) or isinstance(run["db_nodes"], bool) or run["db_nodes"] < 1:
        _fail(source, f"'db_nodes' must be a positive integer, found: {run['db_nodes']!r}")
    _number(source, "started_at", run["started_at"])
    _number(source, "duration_s", run["duration_s"], minimum=None)
    if run["duration_s"] <= 0:
        _fail(source, f"'duration_s' must be strictly positive, found: {run['duration_s']!r}")
    _keys(source, "requests", run["requests"], REQUEST_KEYS, nullable=False)
    for key in ("offered_msg_s", "acked_msg_s", "throughput_msg_s", "drain_s", "fanout_rows_s"):
        _number(source, key, run.get(key), nullable=True)
    _keys(source, "response_ms", run.get("response_ms"), RESPONSE_KEYS)
    _keys(source, "propagation_lag_ms", run.get("propagation_lag_ms"), LAG_KEYS)
    _keys(source, "verification", run.get("verification"), ("expected", "present", "missing", "unexpected"))
    resources = run.get("resources")
    if resources is not None:
        if not isinstance(resources, dict):
            _fail(source, f"'resources' must be an object, found: {resources!r}")
        _number(source, "resources.window_s", resources.get("window_s"), minimum=None)
        if resources["window_s"] <= 0:
            _fail(source, f"'resources.window_s' must be strictly positive, found: {resources['window_s']!r}")
        _number(source, "resources.messages", resources.get("messages"))
        for comp in COMPONENTS:
            if comp not in resources:
                _fail(source, f"'resources' lacks '{comp}' (null when the approach has no such component)")
            _keys(source, f"resources.{comp}", resources[comp], RESOURCE_KEYS)
    series = run["timeseries"]
    if not isinstance(series, dict):
        _fail(source, f"'timeseries' must be an object, found: {series!r}")
    _number(source, "timeseries.bucket_s", series.get("bucket_s"))
    t = series.get("t_s")
    if not isinstance(t, list) or not t:
        _fail(source, "'timeseries.t_s' must be a non-empty list")
    for key in SERIES_KEYS + ("propagated_msg_s",):
        values = series.get(key)
        if key == "propagated_msg_s" and values is None:
            continue
        if not isinstance(values, list) or len(values) != len(t):
            _fail(source, f"'timeseries.{key}' must be a list as long as 'timeseries.t_s' ({len(t)})")
        nullable = key.startswith("response_ms")
        for i, v in enumerate(values):
            _number(source, f"timeseries.{key}[{i}]", v, nullable=nullable)
    if not isinstance(run.get("valid", True), bool):
        _fail(source, f"'valid' must be true or false, found: {run.get('valid')!r}")
    if run.get("valid") is False and not isinstance(run.get("invalid_reason"), str):
        _fail(source, "'invalid_reason' must say why a run is not valid")
    loadgen = run.get("loadgen")
    _keys(source, "loadgen", loadgen, LOADGEN_KEYS)
    if loadgen is not None:
        _number(source, "loadgen.in_flight", loadgen.get("in_flight"), nullable=True)
        _keys(source, "loadgen.own_lateness_ms", loadgen.get("own_lateness_ms"), LAG_KEYS, nullable=False)
    if not isinstance(run.get("projected", False), bool):
        _fail(source, f"'projected' must be true or false, found: {run.get('projected')!r}")
    events = run.get("events", [])
    if not isinstance(events, list):
        _fail(source, f"'events' must be a list, found: {events!r}")
    for i, e in enumerate(events):
        if not isinstance(e, dict) or "t_s" not in e or not isinstance(e.get("what"), str):
            _fail(source, f"'events[{i}]' must be an object with 't_s' and 'what', found: {e!r}")
        _number(source, f"events[{i}].t_s", e["t_s"], minimum=None)


# -- files ---------------------------------------------------------------------------------------------------------
def write_run(directory: Path, run: dict, records: Sequence | None = None) -> Path:
    """Write ``<run_id>.json`` (and the raw requests, gzip-compressed, as ``<run_id>.requests.csv.gz``) into
    ``directory``."""
    validate(run, run.get("run_id", "run") if isinstance(run, dict) else "run")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{run['run_id']}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(run, indent=1) + "\n")
    tmp.replace(path)
    if records is not None:
        with gzip.open(directory / f"{run['run_id']}.requests.csv.gz", "wt", newline="") as out:
            w = csv.writer(out)
            w.writerow(CSV_FIELDS)
            for r in records:
                w.writerow(["" if getattr(r, f) is None else getattr(r, f) for f in CSV_FIELDS])
    return path


def read_requests(path: Path) -> list[dict]:
    """The raw requests of a run (``.requests.csv.gz``, or an older uncompressed ``.requests.csv``) as rows of
    strings by field name."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, EOFError, csv.Error) as e:
        raise ResultsError(f"{path}: not readable as the raw requests of a run: {e}") from e


def load_runs(directory: Path) -> list[dict]:
    """Every run (``*.json``) in ``directory``, validated, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ResultsError(f"no results directory at {directory}")
    runs = []
    for path in sorted(directory.glob("*.json")):
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ResultsError(f"{path}: not readable as JSON: {e}") from e
        validate(run, str(path))
        run["_path"] = str(path)
        runs.append(run)
    if not runs:
        raise ResultsError(f"no results (*.json) in {directory}")
    return sorted(runs, key=lambda r: (r["started_at"], r["run_id"]))


def machine_description() -> dict:
    """What the numbers were measured on: CPU model and count, memory, OS, Python."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = None
    try:
        import psutil
        memory_gb = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:
        pass
    return {"cpu": model or platform.processor(), "cores": os.cpu_count(), "memory_gb": memory_gb,
            "os": platform.platform(), "python": platform.python_version()}


COMMITTED_RESULTS = "benchmarks/results"   # in the repository: the committed run


def saturating_rate(run: dict) -> float | None:
    """A saturating run's rate: the offered rate its search confirmed bounded (``config.saturating_rate``: the
    highest rate that counted bounded, the search's lower bound), else, for a run from before searches recorded
    it, its completed throughput. The rate the other experiments' shares are of, and Table 1's throughput."""
    confirmed = (run.get("config") or {}).get("saturating_rate")
    return confirmed if confirmed is not None else run.get("throughput_msg_s")


@functools.lru_cache(maxsize=None)
def git_commit(repo: Path | None = None) -> str | None:
    """The commit of the checkout the benchmark ran from, with ``-dirty`` when it had local changes: read once per
    process (the code a process runs is what it loaded, even if the checkout changes under a long run). Changes
    under ``benchmarks/results`` do not count: they are the results, which ``ctl bench all --replace`` replaces
    before its first run reads this."""
    repo = repo or Path(__file__).resolve().parents[3]   # benchmarks/async_triggers/benchmarks/results.py
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--",
                                ".", f":(exclude){COMMITTED_RESULTS}"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None
