"""The work a flow does per row it writes, from each node's CPU time. Throughput by cluster size cannot tell this on
one machine: there a bigger cluster's nodes share the same cores, so it is slower whether or not a row costs more.
CPU seconds per row can: if a row costs the cluster as much at 4 nodes as at 2, the work spreads and a cluster of
real machines grows with its nodes.

A node's share of a window is its CPU seconds (user + system) in the window less what it spends idle over as long
(its rate measured just before: gossip, the plugin's polls, the driver's heartbeats). Pure Python: the experiment
(``benchmarks/async_triggers/benchmarks/experiments/work_per_row.py``) prints these, a unit test checks them.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class NodeWork:
    node: str
    cpu_s: float          # CPU seconds the node's process used in the window
    idle_rate: float      # CPU seconds per second it used idle, just before
    window_s: float

    @property
    def work_s(self) -> float:
        """The window's CPU seconds beyond idling (never below 0: an idle rate measured high is not negative work)."""
        return max(0.0, self.cpu_s - self.idle_rate * self.window_s)


def thread_group(name: str) -> str:
    """A JVM thread's group from its OS name (15 characters at most): the name without its trailing number
    (MutationStage-3, Native-Transpor, async-trigger-f, GC Thread#1 -> GC Thread)."""
    return name.rstrip("0123456789-:#/ ") or name


def by_group(before: Mapping[tuple[int, str], float], after: Mapping[tuple[int, str], float]) -> dict[str, float]:
    """CPU seconds per thread group between two readings of (thread id, name) -> CPU seconds, a thread's under the
    name it has at the end; a thread that started in between counts from zero, one that ended is lost (its last
    interval). A thread is matched by its id alone: Cassandra's shared pool renames its workers after the stage they
    serve, and a renamed worker matched by name would count its whole life."""
    earlier = {tid: cpu for (tid, _), cpu in before.items()}
    out: dict[str, float] = {}
    for (tid, name), cpu in after.items():
        group = thread_group(name)
        out[group] = out.get(group, 0.0) + max(0.0, cpu - earlier.get(tid, 0.0))
    return out


@dataclasses.dataclass(frozen=True)
class Repetition:
    nodes: int
    rows: int                       # rows the flow wrote in the window (checked against the table)
    window_s: float                 # first write to drained, flushed and compacted
    drain_s: float                  # first write to drained
    per_node: tuple[NodeWork, ...]
    threads: Mapping[str, float] = dataclasses.field(default_factory=dict)   # CPU-s by thread group, every node

    def __post_init__(self):
        if self.rows <= 0:
            raise ValueError(f"a repetition must write rows, found: {self.rows}")
        if len(self.per_node) != self.nodes:
            raise ValueError(f"{self.nodes} nodes but {len(self.per_node)} measured")

    @property
    def per_1k_rows(self) -> float:
        """The cluster's CPU seconds per 1,000 rows written: the work a row costs, wherever it was done."""
        return 1000 * sum(n.work_s for n in self.per_node) / self.rows

    def node_per_1k_rows(self) -> dict[str, float]:
        return {n.node: 1000 * n.work_s / self.rows for n in self.per_node}

    def top_threads(self, n: int = 8) -> list[tuple[str, float]]:
        """The ``n`` thread groups that used the most CPU in the window (idle included), per 1,000 rows."""
        ranked = sorted(self.threads.items(), key=lambda kv: -kv[1])[:n]
        return [(group, 1000 * cpu / self.rows) for group, cpu in ranked]

    def as_dict(self) -> dict:
        return {"nodes": self.nodes, "rows": self.rows,
                "threads_cpu_s": {g: round(c, 3) for g, c in sorted(self.threads.items(), key=lambda kv: -kv[1])}, "window_s": round(self.window_s, 3),
                "drain_s": round(self.drain_s, 3), "cpu_s_per_1k_rows": round(self.per_1k_rows, 4),
                "per_node": [{**dataclasses.asdict(n), "work_s": round(n.work_s, 3),
                              "cpu_s_per_1k_rows": round(1000 * n.work_s / self.rows, 4)} for n in self.per_node]}


def growth(by_size: Mapping[int, Sequence[Repetition]], small: int, large: int) -> list[float]:
    """The large cluster's work per row over the small one's, repetition by repetition (the i-th of each, as they
    ran one size after the other); a target holds only if it holds for every one."""
    a, b = by_size[small], by_size[large]
    if len(a) != len(b) or not a:
        raise ValueError(f"sizes {small} and {large} need as many repetitions each, found {len(a)} and {len(b)}")
    return [y.per_1k_rows / x.per_1k_rows for x, y in zip(a, b)]


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least squares ``y = a + b x`` through ``points`` (at least two distinct x): (a, b)."""
    xs = [p[0] for p in points]
    if len(set(xs)) < 2:
        raise ValueError(f"a line needs points at two sizes at least, found sizes {sorted(set(xs))}")
    mx, my = statistics.fmean(xs), statistics.fmean(p[1] for p in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


@dataclasses.dataclass(frozen=True)
class Projection:
    nodes: int
    per_1k_rows: float        # the line's CPU seconds per 1,000 rows at that size
    rows_per_s_per_core: float  # the cluster's rows/s with one core per node, were the nodes' CPUs the limit

    def text(self) -> str:
        return (f"{self.nodes} nodes: {self.per_1k_rows:.3f} CPU-s per 1,000 rows, so about "
                f"{self.rows_per_s_per_core:,.0f} rows/s for the cluster with one core per node (c cores: c times that)")


def project(by_size: Mapping[int, Sequence[Repetition]], nodes: int) -> Projection:
    """The work per row at ``nodes`` from the line through every repetition of every measured size, and what rate
    that allows if each node's CPU is the limit: ``nodes`` x 1,000 / (CPU-s per 1,000 rows) rows/s per core."""
    a, b = fit_line([(n, r.per_1k_rows) for n, reps in by_size.items() for r in reps])
    per_1k = a + b * nodes
    if per_1k <= 0:
        raise ValueError(f"the line through the measurements reaches {per_1k:.3f} CPU-s per 1,000 rows at {nodes} "
                         "nodes: too few or too noisy sizes to project")
    return Projection(nodes, per_1k, nodes * 1000 / per_1k)
