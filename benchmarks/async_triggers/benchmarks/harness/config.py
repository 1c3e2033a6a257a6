"""What a benchmark run is set to: one frozen :class:`BenchConfig`, validated when it is made, and the smoke
version of it; the applications it can run."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from async_triggers import config as pconfig
from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.results import COMMITTED_RESULTS

APPS = ("synchronous", "external_queue", "integrated")
# the tweet write alone, with no flow deployed: what Cassandra itself gives the same requests (a baseline, not one
# of the report's approaches: its runs stay out of the report's tables)
PLAIN = "plain"
FLOW = "bench_timeline"   # the integrated approach's flow
DEFAULT_OUT = pconfig.REPO_ROOT / COMMITTED_RESULTS


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    out: Path = DEFAULT_OUT
    db_nodes: int = 2                  # Tables 1-3 and Figures 6, 8b
    fault_nodes: int = 3               # §6.4 (the report: 4)
    # §6.5, Figure 8: the sizes beside db_nodes; 4 only by default, so that make bench fits 2.5 h here (3 and 4 took
    # about 10 min per size and repetition: --scale-nodes 3,4 draws the middle too)
    scale_nodes: tuple[int, ...] = (4,)
    cluster_prefix: str = "bench"      # clusters bench2n, bench3n (one at a time: they share 127.0.0.x)
    reuse_cluster: str | None = None   # run everything on this existing cluster instead (the smoke test)
    keep_cluster: bool = False         # leave the last cluster up at the end
    users: int = 100_000
    min_celebrity: int = 10_000
    seed: int = 42
    replication: int = 2
    write_consistency: str = "ALL"
    read_consistency: str = "ONE"
    partitions: int = 2                # Spark tasks of the load generator (local[partitions] unless spark_master)
    spark_master: str | None = None    # e.g. spark://127.0.0.1:7177 (`ctl spark up`); default local[partitions]
    # requests outstanding per task of the blocking applications (synchronous, external queue): their sender threads
    concurrency: int = 16
    in_flight: int = 256               # requests outstanding per task (asynchronous applications: integrated, plain)
    # every approach's requests, the plain write and the capacity through the driver sent by the JVM sender (the Java
    # driver the connector ships, and RabbitMQ's Java client: spark_jobs/jvm_sender.py), so that response times
    # compare one client's; False: the Python senders (the lag probes always are)
    jvm_sender: bool = True
    fanout_concurrency: int = 64       # timeline writes in flight per fan-out (synchronous app, queue workers)
    queue_workers: int = 4             # worker processes of the external queue (one message at a time each)
    # worker threads per node of the integrated flow: as many tasks at once on the 2 nodes as the synchronous app
    # keeps requests (16 per task, 2 tasks). A task of the timeline flow waits on about six round trips before its
    # rows (docs/design.md, "Lineage"): with 4 workers the flow's search ended at 181 msg/s here, with 16 at 675,
    # with 32 at 551 (the two cores' limit; one search each on 2 nodes, the drain rule alone)
    flow_workers: int = 16
    # the saturation search (harness/rate_search.py): x rate_factor while bounded, then bisected until the highest
    # bounded and the lowest unbounded rate are within search_ratio (two bisections of a 1.5x bracket: 1.107x); a
    # miss is tried twice; at most max_steps trials, repeats included. The scale experiment's searches stop at
    # scale_search_ratio (one bisection: 1.22x): Figure 8 shows a trend over sizes, Tables 1-3 the fine rates
    start_rate: float = 200.0
    # the plain write's first search starts higher: from 200 msg/s its ten trials climbed to 7,689 msg/s without a
    # miss (a lower bound, not its limit: 15,000-18,000 msg/s through the JVM sender on 2 nodes); the search goes
    # down as well as up, so a slower cluster is found from here too
    plain_start_rate: float = 4000.0
    rate_factor: float = 1.5
    search_ratio: float = 1.11
    scale_search_ratio: float = 1.23
    max_steps: int = 10
    # before an approach's first search on a cluster, this long at start_rate, not counted (0: none): the nodes' JIT
    # is still compiling the approach's paths minutes into a fresh cluster (its C2 threads took 40-44 % of the
    # nodes' thread CPU after a minute at 400 msg/s here, experiments/cpu_by_approach.py), and the approach whose
    # paths are more its own pays more of that in the search's first steps
    search_warmup_s: float = 0.0
    # the phases are shorter than the report's (20 s steps, 60 s runs, 60/30/60 s burst, 150 s fault) so that a full
    # run with 3 repetitions and 2 sizes, and the runs at each approach's own limits, fits a working session
    # (`ctl bench plan`: about 2.3 h); the burst's 30 s at 200 % and the node's 30 s down are the report's
    step_s: float = 10.0
    drain_bound_s: float = 5.0
    steady_s: float = 25.0             # §6.2, and the 80 % run at each approach's own rate
    burst_s: tuple[float, float, float] = (10.0, 30.0, 10.0)   # §6.3: 50 %, 200 %, 50 % (common and own rates)
    drop_after_s: float = 5.0          # the burst: a request this late is shed (the synchronous app's losses)
    burst_highest: bool = True         # a second burst at 200 % of the HIGHEST saturating rate (Figure 6b)
    plain_baseline: bool = True        # the saturation search also finds the plain write's rate (Table 1)
    fault_s: float = 90.0              # §6.4
    kill_at_s: float = 30.0
    restart_at_s: float = 60.0
    bulk_s: float = 20.0
    capacity_start_rate: float = 2000.0   # the load generator's capacity: steps from this rate (x rate_factor)
    capacity_max_rate: float = 60000.0
    capacity_step_s: float = 3.0
    capacity_blocking: bool = True        # also the blocking generator's capacity, for comparison
    drain_timeout_s: float = 600.0
    retry_s: float = 60.0
    probe_interval_s: float = 1.0
    verify_checks: int = 4             # the fault runs: Spark verifications until nothing is missing
    verify_wait_s: float = 20.0
    apps: tuple[str, ...] = APPS
    fixed_rate: float | None = None    # skip the search: every approach's saturating rate (the smoke test)
    repeat: int = 3                    # each experiment this many times: tables give the median and min-max

    def __post_init__(self):
        unknown = [a for a in self.apps if a not in APPS + (PLAIN,)]
        if unknown:
            raise BenchError(f"unknown application(s) {', '.join(unknown)}: choose from {', '.join(APPS + (PLAIN,))}")
        if not 0 < self.kill_at_s < self.restart_at_s < self.fault_s:
            raise BenchError(f"the fault run needs 0 < kill_at_s ({self.kill_at_s}) < restart_at_s "
                             f"({self.restart_at_s}) < fault_s ({self.fault_s})")
        if not self.scale_nodes or any(not isinstance(n, int) or n < 1 for n in self.scale_nodes):
            raise BenchError(f"'scale_nodes' must be cluster sizes (positive whole numbers), found: {self.scale_nodes!r}")
        # the scale experiment's coarser searches at db_nodes would replace Tables 1-2's runs in the report; on a
        # reused cluster every size is that cluster's anyway (the smoke run on the test suite's cluster)
        repeated = len(set(self.scale_nodes)) != len(self.scale_nodes)
        if repeated or (self.db_nodes in self.scale_nodes and not self.reuse_cluster):
            raise BenchError(f"'scale_nodes' are the sizes beside db_nodes ({self.db_nodes}), each once, found: "
                             f"{self.scale_nodes!r}")
        if self.replication > min(self.db_nodes, self.fault_nodes, *self.scale_nodes):
            raise BenchError(f"replication factor {self.replication} needs at least that many nodes "
                             f"(db_nodes {self.db_nodes}, fault_nodes {self.fault_nodes}, scale_nodes "
                             f"{self.scale_nodes})")
        for name in ("step_s", "steady_s", "fault_s", "bulk_s", "start_rate", "plain_start_rate", "drain_timeout_s",
                     "in_flight",
                     "capacity_start_rate", "capacity_step_s"):
            if not getattr(self, name) > 0:
                raise BenchError(f"'{name}' must be strictly positive, found: {getattr(self, name)}")
        if self.search_warmup_s < 0:
            raise BenchError(f"'search_warmup_s' must be 0 (none) or positive, found: {self.search_warmup_s}")
        if not isinstance(self.repeat, int) or self.repeat < 1:
            raise BenchError(f"'repeat' must be a positive whole number, found: {self.repeat!r}")
        if self.capacity_max_rate < self.capacity_start_rate:
            raise BenchError(f"'capacity_max_rate' ({self.capacity_max_rate}) must be at least "
                             f"'capacity_start_rate' ({self.capacity_start_rate})")
        if not self.rate_factor > 1:
            raise BenchError(f"'rate_factor' must be greater than 1, found: {self.rate_factor}")
        for name in ("search_ratio", "scale_search_ratio"):
            if not 1 < getattr(self, name) <= self.rate_factor:
                raise BenchError(f"'{name}' must be greater than 1 and at most 'rate_factor' ({self.rate_factor}), "
                                 f"found: {getattr(self, name)}")
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise BenchError(f"'max_steps' must be a positive whole number (trials of one search), found: "
                             f"{self.max_steps!r}")


def smoke_config(out: Path, cluster: str | None = None) -> BenchConfig:
    """A few seconds per phase on a small graph: proves the machinery and the three applications work, in every
    experiment of ``ctl bench all`` (the runs at each approach's own rate with the same phases as the others)."""
    return BenchConfig(out=out, reuse_cluster=cluster, db_nodes=3 if cluster else 2, users=2_000,
                       min_celebrity=500, fixed_rate=40.0, step_s=4.0, steady_s=4.0, burst_s=(3.0, 3.0, 3.0),
                       fault_s=12.0, kill_at_s=3.0, restart_at_s=6.0, bulk_s=3.0, drain_timeout_s=180.0,
                       retry_s=60.0, probe_interval_s=0.5, queue_workers=1, concurrency=4,
                       capacity_start_rate=200.0, capacity_max_rate=300.0, capacity_step_s=2.0, repeat=1,
                       scale_nodes=(3,), burst_highest=False, capacity_blocking=False)

