"""What each component of a benchmark run used, per process: CPU seconds, resident memory and TCP bytes in + out
of the application (load generator, queue workers, Spark's Python workers), the broker and every Cassandra node,
for the ``resources`` field of the results schema (benchmarks/README.md) and so for Tables 3–4.

    sampler = Sampler({"app": lambda: [driver_pid, *descendants(driver_pid, cmdline_contains("pyspark"))],
                       "db": lambda: node_pids, "queue": lambda: [broker_pid]})
    with sampler:
        ...                                          # the run
    run = results.summarise(..., resources=sampler.result(messages=completed))

Every ``interval_s`` a daemon thread asks each group for its pids (so processes that appear during the run, such as
Spark's Python workers, are picked up), reads their CPU times and resident memory with psutil, and reads every TCP
socket's byte counters with ``ss -tinpH`` (iproute2).

Why per-socket counters: the whole benchmark runs on one machine and all of its traffic goes over loopback between
127.0.0.x addresses, so the interface counters of ``lo`` add the application, the broker and every Cassandra node
together. The kernel keeps ``bytes_sent``/``bytes_received`` per TCP socket and ``ss -p`` names the processes
that hold each socket, which tells the components apart. ``ss -p`` sees other users' processes only as root (the
benchmarks run as root; as another user the sockets of, say, a Cassandra node started by someone else would be
missed without an error, so the numbers would only be too low).

What the numbers mean, and what they can miss:

* ``cpu_s``: per process (pid and start time, so a reused pid is another process), user + system seconds at its
  last sample minus its first. A process started after the first sample counts from zero (its start time is known),
  one that was already running counts from the sample where it was first seen. A process that exits loses the CPU
  it used after its last sample: at most one interval's worth.
* ``memory_gb``: the mean over all samples of the summed resident memory (RSS) of the group's live processes,
  10⁹ bytes to the GB; a sample where the group had no live process counts as 0 (the component used none then).
  RSS counts pages shared between processes (a forked Python worker and its parent) in each of them, so the sum
  can exceed what the machine gave the component.
* ``net_bytes``: per socket (its 4-tuple, seen from one end) and group, bytes sent + received at the last sample
  minus the first. A socket that was in the very first ``ss`` sample counts from its values there, whoever held it;
  one that was not was opened during the window and counts from zero. A socket whose counters go down is a new
  connection reusing the 4-tuple: the old one's bytes are kept and the new one counts from zero. A socket that is
  closed between two samples disappears from ``ss`` with its last interval: a socket loses at most the bytes of
  one interval. A socket held by several processes of a group (inherited over fork) counts once for the group;
  traffic between two processes of the same group counts at both ends (bytes out of one, into the other), as it
  would between two machines.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any, Callable, Iterable, Mapping

from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.harness.tcp_counters import TcpCounters, TcpSocket, ss_command, tcp_sockets
from async_triggers.benchmarks.results import COMPONENTS

PSUTIL_MISSING = "the resource sampler needs psutil: make bench-deps"
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")           # the resolution of a process's start time


def _psutil():
    try:
        import psutil
    except ImportError as e:
        raise BenchError(PSUTIL_MISSING) from e
    return psutil


# -- processes -----------------------------------------------------------------------------------------------------
def descendants(pid: int, match: Callable[[Any], bool] = lambda p: True) -> list[int]:
    """The pids of ``pid``'s live descendants (children, their children, ...) for which ``match(psutil.Process)``
    is true; empty when ``pid`` is gone. Processes come and go while we look (Spark starts and ends Python
    workers as it likes): one that vanishes or cannot be read is left out, not an error."""
    psutil = _psutil()
    try:
        children = psutil.Process(pid).children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):    # ZombieProcess is a NoSuchProcess
        return []
    found = []
    for child in children:
        try:
            if match(child):
                found.append(child.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def cmdline_contains(text: str) -> Callable[[Any], bool]:
    """A ``descendants`` predicate: some argument of the process's command line contains ``text`` (Spark's Python
    workers: ``cmdline_contains("pyspark")``, they run ``python -m pyspark.daemon`` and are forked from it)."""
    return lambda p: any(text in arg for arg in p.cmdline())


# -- the sampler ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class _Cpu:
    base: float
    last: float


class Sampler:
    """Samples the processes of each component every ``interval_s`` seconds in a daemon thread, between
    :meth:`start` and :meth:`stop` (or as a context manager); :meth:`result` is the schema's ``resources``.

    ``groups`` maps a component of the schema (``app``, ``db``, ``queue``) to a function returning the pids that
    belong to it now; it is called at every sample. A component the approach does not have is left out (or its
    function returns no pids) and comes out as null.
    """

    def __init__(self, groups: Mapping[str, Callable[[], Iterable[int]]], interval_s: float = 1.0):
        unknown = [name for name in groups if name not in COMPONENTS]
        if unknown:
            raise BenchError(f"unknown resource group(s) {', '.join(map(repr, unknown))}: the results schema's "
                             f"components are {', '.join(COMPONENTS)}")
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not interval_s > 0:
            raise BenchError(f"'interval_s' must be a number of seconds above 0, found: {interval_s!r}")
        self._psutil = _psutil()
        self._ss = ss_command()
        self.groups = dict(groups)
        self.interval_s = float(interval_s)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._handles: dict[int, Any] = {}
        self._cpu: dict[str, dict[tuple[int, float], _Cpu]] = {g: {} for g in self.groups}
        self._rss_bytes: dict[str, float] = {g: 0.0 for g in self.groups}   # summed over samples
        self._net = TcpCounters()
        self._samples = 0
        self._started_boot: float | None = None     # the first sample, in seconds since boot
        self._first_at: float | None = None
        self._last_at: float | None = None

    # -- running --
    def start(self) -> "Sampler":
        """Take the first sample (the start of the window), then sample in the background."""
        if self._thread is not None or self._samples:
            raise BenchError("this resource sampler has already been started: use a new one for another window")
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="resource-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval_s):
            try:
                self.sample()
            except BaseException:               # kept by sample() for stop(): a daemon thread's is lost otherwise
                return

    def stop(self) -> None:
        """Stop the background sampling and take the last sample (the end of the window)."""
        if self._thread is None:
            raise BenchError("this resource sampler was not started")
        self._stopping.set()
        self._thread.join()
        self._check()
        self.sample()

    def _check(self) -> None:
        if self._error is not None:
            raise BenchError(f"resource sampling failed during the run: {self._error}") from self._error

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self._thread is not None and not self._stopping.is_set():
            self.stop()

    def sample(self) -> None:
        """One sample of every group now (the background thread calls this; so may a harness, e.g. right before
        it stops a component, so that its last CPU seconds and bytes are counted). A failed sample leaves the
        window's sums half updated: the sampler is then broken for good, and says so."""
        with self._lock:
            self._check()
            try:
                self._sample()
            except BaseException as e:
                self._error = e
                raise

    def _sample(self) -> None:
        now = time.monotonic()
        if self._started_boot is None:
            self._started_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        pid_groups: dict[int, set[str]] = {}
        for group, list_pids in self.groups.items():
            try:
                pids = {int(p) for p in list_pids()}
            except Exception as e:
                raise BenchError(f"resource group {group!r}: listing its pids failed: {e}") from e
            for pid in self._read_processes(group, pids):
                pid_groups.setdefault(pid, set()).add(group)
        sockets = tcp_sockets(self._ss)
        if self._samples == 0:
            self._net.first(sockets)
        by_group: dict[str, list[TcpSocket]] = {g: [] for g in self.groups}
        for s in sockets:
            for group in {g for pid in s.pids for g in pid_groups.get(pid, ())}:
                by_group[group].append(s)
        for group, owned in by_group.items():
            self._net.update(group, owned)
        self._samples += 1
        self._first_at = now if self._first_at is None else self._first_at
        self._last_at = now

    def _handle(self, pid: int):
        """A psutil handle per pid, renewed when the pid now belongs to another process (psutil compares the
        start time)."""
        handle = self._handles.get(pid)
        if handle is None or not handle.is_running():
            handle = self._handles[pid] = self._psutil.Process(pid)
        return handle

    def _read_processes(self, group: str, pids: set[int]) -> list[int]:
        """Record CPU and RSS of the group's live processes; returns the pids that were alive."""
        psutil, alive, rss = self._psutil, [], 0
        boot = psutil.boot_time()
        for pid in sorted(pids):
            try:
                p = self._handle(pid)
                with p.oneshot():
                    started = p.create_time()
                    times = p.cpu_times()
                    rss_now = p.memory_info().rss
            except psutil.NoSuchProcess:        # gone between the listing and the reading (or a zombie)
                self._handles.pop(pid, None)
                continue
            except psutil.AccessDenied as e:
                raise BenchError(f"resource group {group!r}: no permission to read process {pid} ({e}); the "
                                 "sampler must run as root or as the processes' user") from e
            cpu = times.user + times.system
            key = (pid, started)
            seen = self._cpu[group].get(key)
            if seen is None:
                # started after the first sample: all of its CPU is the window's. Compared in seconds since boot,
                # as the kernel keeps a start time (whole clock ticks, so one tick of slack: a process started
                # just before the window adds at most a tick of CPU): the epoch start time psutil gives adds the
                # boot time, which /proc/stat has only to the second.
                new = self._samples > 0 and started - boot > self._started_boot - _TICK_S
                self._cpu[group][key] = _Cpu(base=0.0 if new else cpu, last=cpu)
            else:
                seen.last = max(seen.last, cpu)
            rss += rss_now
            alive.append(pid)
        self._rss_bytes[group] += rss
        return alive

    # -- the numbers --
    @property
    def window_s(self) -> float:
        if self._first_at is None:
            return 0.0
        return self._last_at - self._first_at

    def result(self, messages: int) -> dict:
        """The results schema's ``resources``: ``window_s``, ``messages`` (completed in the window, as the caller
        counted them) and per component ``{processes, cpu_s, memory_gb, net_bytes}`` or null."""
        if isinstance(messages, bool) or not isinstance(messages, int) or messages < 0:
            raise BenchError(f"'messages' must be a count of completed messages (an integer >= 0), "
                             f"found: {messages!r}")
        with self._lock:
            self._check()
            window = self.window_s
            if self._samples < 2 or not window > 0:
                raise BenchError("the resource sampler has no window yet: start() and stop() it around the run "
                                 f"({self._samples} sample(s) so far)")
            out: dict[str, Any] = {"window_s": round(window, 3), "messages": messages}
            for comp in COMPONENTS:
                processes = self._cpu.get(comp)
                if not processes:
                    out[comp] = None
                    continue
                cpu_s = sum(max(0.0, c.last - c.base) for c in processes.values())
                out[comp] = {"processes": len(processes), "cpu_s": round(cpu_s, 3),
                             "memory_gb": round(self._rss_bytes[comp] / self._samples / 1e9, 6),
                             "net_bytes": self._net.total(comp)}
            return out


def cpu_seconds(pids: Mapping[str, int]) -> dict[str, float]:
    """User and system CPU seconds each process (by name: its pid) has used so far: what JFR's execution samples
    leave out (GC, the JIT, native code, the kernel's work for its sockets and files) is in them."""
    psutil = _psutil()
    out = {}
    for name, pid in pids.items():
        t = psutil.Process(pid).cpu_times()
        out[name] = t.user + t.system
    return out
