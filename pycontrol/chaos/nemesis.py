"""The faults of a chaos run and its seeded schedule.

Kinds (each heals itself: every node it takes down is started again):

- ``kill9``: kill -9 a node, start it again 20-40 s later (after gossip convicted it);
- ``stop``: a graceful stop (drain), start 20-40 s later;
- ``quick_restart``: kill -9 and start at once, before the others convict it;
- ``down60``: kill -9, start 60 s later;
- ``two_in_a_row``: kill -9 one node, start it, then kill -9 another right after;
- ``restart_all``: kill -9 every node, then start them all.

A schedule is a list of ``Fault`` with the second of the load at which each starts; the same seed gives the same
schedule, so a failing run can be replayed exactly (``ctl chaos run --replay``).
"""
from __future__ import annotations

import dataclasses
import random
import threading
import time
from typing import Callable, Sequence

KINDS = ("kill9", "stop", "quick_restart", "down60", "two_in_a_row", "restart_all")


@dataclasses.dataclass(frozen=True)
class Fault:
    at: float             # seconds after the start of the load
    kind: str
    nodes: tuple[str, ...]
    down_s: float = 0.0   # how long a node stays down (0: restarted at once)

    def describe(self) -> str:
        down = f" down {self.down_s:.0f}s" if self.down_s else ""
        return f"{self.kind} {'+'.join(self.nodes)} @{self.at:.0f}s{down}"


def schedule(seed: int, nodes: Sequence[str], load_s: float, kinds: Sequence[str] = KINDS,
             faults: int | None = None) -> list[Fault]:
    """One or two faults at random moments of the load (``faults`` fixes how many), none overlapping."""
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind '{kind}' (known: {', '.join(KINDS)})")
    rng = random.Random(seed)
    count = faults if faults is not None else rng.choice((1, 1, 2))
    out: list[Fault] = []
    at = rng.uniform(0.1, 0.4) * load_s
    for _ in range(count):
        kind = rng.choice(list(kinds))
        node = rng.choice(list(nodes))
        if kind == "kill9" or kind == "stop":
            fault = Fault(at, kind, (node,), rng.uniform(20, 40))
        elif kind == "quick_restart":
            fault = Fault(at, kind, (node,), 0.0)
        elif kind == "down60":
            fault = Fault(at, kind, (node,), 60.0)
        elif kind == "two_in_a_row":
            other = rng.choice([n for n in nodes if n != node] or [node])
            fault = Fault(at, kind, (node, other), rng.uniform(15, 25))
        else:
            fault = Fault(at, kind, tuple(nodes), 0.0)
        out.append(fault)
        at += fault.down_s * len(fault.nodes) + rng.uniform(10, 20)
    return out


@dataclasses.dataclass
class Event:
    at: float
    what: str


class Nemesis:
    """Runs a schedule against a cluster on its own thread, recording what it did and when."""

    def __init__(self, faults: Sequence[Fault], kill: Callable[[str], None], stop: Callable[[str], None],
                 start: Callable[[str], None], progress: Callable[[str], None] = lambda _: None):
        self.faults = list(faults)
        self._kill, self._stop, self._start = kill, stop, start
        self.progress = progress
        self.events: list[Event] = []
        self.error: BaseException | None = None
        self._t0 = 0.0
        self._thread: threading.Thread | None = None

    def _log(self, what: str) -> None:
        at = time.monotonic() - self._t0
        self.events.append(Event(round(at, 1), what))
        self.progress(f"[nemesis] {at:5.1f}s {what}")

    def start(self, t0: float) -> None:
        self._t0 = t0
        self._thread = threading.Thread(target=self._run, name="chaos-nemesis", daemon=True)
        self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            raise self.error

    def _sleep_until(self, at: float) -> None:
        wait = self._t0 + at - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def _down(self, node: str, graceful: bool) -> None:
        (self._stop if graceful else self._kill)(node)
        self._log(("stop " if graceful else "kill -9 ") + node)

    def _up(self, node: str) -> None:
        self._start(node)
        self._log("started " + node)

    def _run(self) -> None:
        try:
            for fault in self.faults:
                self._sleep_until(fault.at)
                if fault.kind == "restart_all":
                    for node in fault.nodes:
                        self._down(node, graceful=False)
                    for node in fault.nodes:
                        self._up(node)
                elif fault.kind == "two_in_a_row":
                    for node in fault.nodes:
                        self._down(node, graceful=False)
                        time.sleep(fault.down_s)
                        self._up(node)
                else:
                    self._down(fault.nodes[0], graceful=fault.kind == "stop")
                    time.sleep(fault.down_s)
                    self._up(fault.nodes[0])
        except BaseException as e:  # noqa: BLE001 - reported by join() on the campaign's thread
            self.error = e
