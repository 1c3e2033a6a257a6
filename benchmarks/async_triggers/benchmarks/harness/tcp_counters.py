"""Bytes in + out per TCP socket from ``ss -tinpH`` (iproute2), summed per group of processes over a window: how the
resource sampler tells the components' network traffic apart on one machine's loopback."""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from typing import Any, Iterable, Sequence

from async_triggers.benchmarks.errors import BenchError

SS_MISSING = "the resource sampler needs 'ss' from iproute2 for per-socket TCP counters: apt-get install iproute2"
_PID = re.compile(r",pid=(\d+),")
_COUNTER = re.compile(r"\b(bytes_sent|bytes_acked|bytes_received):(\d+)\b")


@dataclasses.dataclass(frozen=True)
class TcpSocket:
    """One end of a TCP connection as ``ss -tinpH`` shows it."""
    state: str
    local: str
    peer: str
    pids: tuple[int, ...]       # the processes holding it (several after a fork); empty for an orphan
    bytes_sent: int
    bytes_received: int

    @property
    def key(self) -> tuple[str, str]:
        return self.local, self.peer


def parse_ss(text: str) -> list[TcpSocket]:
    """The sockets in the output of ``ss -tinpH``: a line per socket (state, queues, local and peer address,
    ``users:(("name",pid=123,fd=4),...)``) followed by an indented line of TCP info with its counters.

    ss prints a counter only when it is not zero. ``bytes_sent`` (Linux 4.19 and later) counts what was
    transmitted, retransmissions included (loopback has none); an older kernel has only ``bytes_acked``, which is
    used when no socket of the output has ``bytes_sent`` (it also counts the SYN and FIN: a byte or two, as
    ``bytes_received`` counts a received FIN). An orphaned socket (closed by its process, still in FIN-WAIT)
    has no users and an empty info line.
    """
    rows: list[list[Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            if not rows:
                raise BenchError(f"ss output: TCP info without a socket line before it: {line.strip()[:120]!r}")
            rows[-1][1] += " " + line.strip()
            continue
        fields = line.split()
        if len(fields) < 5:
            raise BenchError(f"ss output: expected 'state recv-q send-q local peer [users]', found: {line!r}")
        rows.append([fields, ""])
    has_sent = "bytes_sent:" in text
    sockets = []
    for fields, info in rows:
        counters = {name: int(value) for name, value in _COUNTER.findall(info)}
        sent = counters.get("bytes_sent", 0) if has_sent else counters.get("bytes_acked", 0)
        users = " ".join(fields[5:])
        sockets.append(TcpSocket(state=fields[0], local=fields[3], peer=fields[4],
                                 pids=tuple(sorted({int(p) for p in _PID.findall(users)})),
                                 bytes_sent=sent, bytes_received=counters.get("bytes_received", 0)))
    return sockets


def ss_command() -> list[str]:
    """``ss -tinpH``: TCP sockets in every state but listening and time-wait, with info (-i) and owning processes
    (-p), without the header (-H)."""
    path = shutil.which("ss")
    if path is None:
        raise BenchError(SS_MISSING)
    return [path, "-tinpH"]


def tcp_sockets(command: Sequence[str] | None = None) -> list[TcpSocket]:
    """Every TCP socket of the machine (of this network namespace) with its byte counters, now."""
    command = list(command or ss_command())
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise BenchError(f"{' '.join(command)} could not run: {e}") from e
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr.strip()[:500]}")
    return parse_ss(done.stdout)


@dataclasses.dataclass
class _Counter:
    base_sent: int
    base_received: int
    sent: int
    received: int
    closed: int = 0            # bytes of earlier connections with the same 4-tuple

    @property
    def total(self) -> int:
        return self.closed + self.sent - self.base_sent + self.received - self.base_received


class TcpCounters:
    """Bytes sent + received per group over a window, from successive ``ss`` samples (the rules are in
    harness/resources.py's docstring): :meth:`first` takes the sample the window starts with, :meth:`update` a
    group's sockets of each sample, the first one included."""

    def __init__(self) -> None:
        self._initial: dict[tuple[str, str], tuple[int, int]] | None = None
        self._counters: dict[str, dict[tuple[str, str], _Counter]] = {}

    def first(self, sockets: Iterable[TcpSocket]) -> None:
        if self._initial is not None:
            raise BenchError("TcpCounters.first: the window has already started")
        self._initial = {s.key: (s.bytes_sent, s.bytes_received) for s in sockets}

    def update(self, group: str, sockets: Iterable[TcpSocket]) -> None:
        if self._initial is None:
            raise BenchError("TcpCounters.update before TcpCounters.first: the window has not started")
        counters = self._counters.setdefault(group, {})
        for s in sockets:
            c = counters.get(s.key)
            if c is None:
                base = self._initial.get(s.key, (0, 0))
                if s.bytes_sent < base[0] or s.bytes_received < base[1]:   # not the socket of the first sample
                    base = (0, 0)
                counters[s.key] = _Counter(base[0], base[1], s.bytes_sent, s.bytes_received)
            elif s.bytes_sent < c.sent or s.bytes_received < c.received:   # a new connection, same 4-tuple
                c.closed, c.base_sent, c.base_received = c.total, 0, 0
                c.sent, c.received = s.bytes_sent, s.bytes_received
            else:
                c.sent, c.received = s.bytes_sent, s.bytes_received

    def total(self, group: str) -> int:
        return sum(c.total for c in self._counters.get(group, {}).values())
