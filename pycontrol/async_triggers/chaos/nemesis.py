"""The faults of a chaos run and its seeded schedule.

Kinds (each heals itself: every node it takes down is started again):

- ``kill9``: kill -9 a node, start it again 20-40 s later (after gossip convicted it);
- ``stop``: a graceful stop (drain), start 20-40 s later;
- ``quick_restart``: kill -9 and start at once, before the others convict it;
- ``down60``: kill -9, start 60 s later;
- ``two_in_a_row``: kill -9 one node, start it, then kill -9 another right after;
- ``restart_all``: kill -9 every node, then start them all;
- ``isolate``: one node cut off from the others (both ways) for 20-40 s;
- ``split``: a minority of the nodes cut off from the majority (with three nodes: one node);
- ``bridge``: the nodes in two halves that cannot talk, one node (the bridge) talking to both;
- ``asymmetric``: one node's messages to the others dropped, theirs to it delivered;
- ``pause``: SIGSTOP a node's JVM for 20-40 s (longer than the failure detector takes to convict it), SIGCONT;
- ``roll``: a rolling restart, one node at a time (drain, start, wait until the others see it up), each node
  switching the form it stores tasks in (``-Dasync_triggers.task_format=java``, the Java serialization of
  earlier versions, or the versioned format): writers of both forms side by side, as during a plugin upgrade;
- ``grow_shrink``: a membership change each way: a new node bootstrapped into the ring, then one of the nodes the
  run started with decommissioned (its ranges, its backup entries and its queued tasks streamed or handed over
  while it leaves); the cluster keeps its size, one node's name changes;
- ``replace``: kill -9 a node, then, 10-20 s later, a new node takes its place on a new address
  (``replace_address_first_boot``): the dead node's queue is gone for good, its rows' tasks are the replicas' to run.

Membership faults change the cluster's nodes for the rest of the campaign: each run draws from the nodes there are.

Partitions cut the nodes' storage port only (cluster/async_triggers/cluster/network.py): clients still reach every node.

A schedule is a list of ``Fault`` with the second of the load at which each starts; the same seed gives the same
schedule, so a failing run can be replayed exactly (``ctl chaos run --replay``).
"""
from __future__ import annotations

import dataclasses
import random
import threading
import time
from typing import Callable, Sequence

KINDS = ("kill9", "stop", "quick_restart", "down60", "two_in_a_row", "restart_all",
         "isolate", "split", "bridge", "asymmetric", "pause", "roll", "grow_shrink", "replace")
PARTITIONS = ("isolate", "split", "bridge", "asymmetric")
MEMBERSHIP = ("grow_shrink", "replace")
JOIN_S = 90.0    # about what a node takes to bootstrap or stream its ranges away here, under load


@dataclasses.dataclass(frozen=True)
class Fault:
    at: float             # seconds after the start of the load
    kind: str
    nodes: tuple[str, ...]
    down_s: float = 0.0   # how long a node stays down, paused or cut off (0: restarted at once)
    # a partition's directed (sender, receiver) links cut
    links: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        down = f" {'cut' if self.kind in PARTITIONS else 'paused' if self.kind == 'pause' else 'down'} " \
               f"{self.down_s:.0f}s" if self.down_s else ""
        if self.kind == "grow_shrink":
            return f"{self.kind} +1 node, -{self.nodes[0]} @{self.at:.0f}s"
        return f"{self.kind} {'+'.join(self.nodes)} @{self.at:.0f}s{down}"

    @property
    def busy_s(self) -> float:
        """How long the fault lasts, at least (the next one starts after it)."""
        if self.kind in PARTITIONS or self.kind == "pause":
            return self.down_s
        if self.kind == "roll":
            return 30.0 * len(self.nodes)
        if self.kind == "grow_shrink":
            return self.down_s + 2 * JOIN_S
        if self.kind == "replace":
            return self.down_s + JOIN_S
        return self.down_s * len(self.nodes)


def _links(a: Sequence[str], b: Sequence[str], both_ways: bool = True) -> tuple[tuple[str, str], ...]:
    pairs = [(x, y) for x in a for y in b if x != y]
    return tuple(pairs + ([(y, x) for x, y in pairs] if both_ways else []))


def _partition(kind: str, rng: random.Random, nodes: Sequence[str], node: str, down_s: float) -> Fault:
    others = [n for n in nodes if n != node]
    if kind == "isolate":
        return Fault(0, kind, (node,), down_s, _links([node], others))
    if kind == "asymmetric":
        return Fault(0, kind, (node,), down_s, _links([node], others, both_ways=False))
    if kind == "split":
        minority = sorted(rng.sample(list(nodes), max(1, (len(nodes) - 1) // 2)))
        return Fault(0, kind, tuple(minority), down_s, _links(minority, [n for n in nodes if n not in minority]))
    # bridge: the node talks to both halves of the others, which cannot talk to each other
    half = max(1, len(others) // 2)
    left, right = others[:half], others[half:]
    return Fault(0, kind, (node,), down_s, _links(left, right))


def schedule(seed: int, nodes: Sequence[str], load_s: float, kinds: Sequence[str] = KINDS,
             faults: int | None = None) -> list[Fault]:
    """One or two faults at random moments of the load (``faults`` fixes how many), none overlapping. A fault after
    a membership fault names none of the nodes it took away (nor the one it brought: its name is known when it joins)."""
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind '{kind}' (known: {', '.join(KINDS)})")
    rng = random.Random(seed)
    count = faults if faults is not None else rng.choice((1, 1, 2))
    out: list[Fault] = []
    nodes = list(nodes)   # a membership fault takes one away for the faults after it
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
        elif kind in PARTITIONS:
            fault = dataclasses.replace(_partition(kind, rng, nodes, node, rng.uniform(20, 40)), at=at)
        elif kind == "pause":
            fault = Fault(at, kind, (node,), rng.uniform(20, 40))
        elif kind == "grow_shrink":   # the node decommissioned once the new one joined, and how long in between
            fault = Fault(at, kind, (node,), rng.uniform(5, 15))
        elif kind == "replace":       # how long the node is dead before its replacement starts
            fault = Fault(at, kind, (node,), rng.uniform(10, 20))
        else:   # restart_all, roll: every node
            fault = Fault(at, kind, tuple(nodes), 0.0)
        out.append(fault)
        if kind in MEMBERSHIP:
            nodes.remove(node)
        at += fault.busy_s + rng.uniform(10, 20)
    return out


@dataclasses.dataclass
class Event:
    at: float
    what: str


@dataclasses.dataclass(frozen=True)
class Hands:
    """What a nemesis does to a cluster: each takes node names (``cut``: directed (sender, receiver) links)."""
    kill: Callable[[str], None]
    stop: Callable[[str], None]
    start: Callable[[str], None]
    pause: Callable[[str], None] = lambda node: None
    resume: Callable[[str], None] = lambda node: None
    cut: Callable[[Sequence[tuple[str, str]]], None] = lambda links: None
    heal: Callable[[], None] = lambda: None
    switch: Callable[[str], str] = lambda node: ""   # a roll: the node's next start's form; returns its name
    add: Callable[[], str] = lambda: ""               # bootstraps a new node; returns its name
    decommission: Callable[[str], None] = lambda node: None
    replace: Callable[[str], str] = lambda node: ""   # a dead node's replacement; returns the new node's name


class Nemesis:
    """Runs a schedule against a cluster on its own thread, recording what it did and when. Whatever happens, it
    leaves no partition and no paused node behind."""

    def __init__(self, faults: Sequence[Fault], hands: Hands, progress: Callable[[str], None] = lambda _: None):
        self.faults = list(faults)
        self.hands = hands
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
        (self.hands.stop if graceful else self.hands.kill)(node)
        self._log(("stop " if graceful else "kill -9 ") + node)

    def _up(self, node: str) -> None:
        self.hands.start(node)
        self._log("started " + node)

    def _play(self, fault: Fault) -> None:
        hands = self.hands
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
        elif fault.kind in PARTITIONS:
            hands.cut(fault.links)
            self._log(f"{fault.kind}: cut " + ", ".join(f"{a}->{b}" for a, b in fault.links))
            try:
                time.sleep(fault.down_s)
            finally:
                hands.heal()
                self._log("healed")
        elif fault.kind == "pause":
            hands.pause(fault.nodes[0])
            self._log("SIGSTOP " + fault.nodes[0])
            try:
                time.sleep(fault.down_s)
            finally:
                hands.resume(fault.nodes[0])
                self._log("SIGCONT " + fault.nodes[0])
        elif fault.kind == "roll":
            for node in fault.nodes:
                form = hands.switch(node)
                self._down(node, graceful=True)
                self._up(node)
                self._log(f"{node} now stores tasks in the {form} form")
        elif fault.kind == "grow_shrink":
            self._log(f"added {hands.add()} (bootstrapped)")
            time.sleep(fault.down_s)
            hands.decommission(fault.nodes[0])
            self._log(f"decommissioned {fault.nodes[0]}")
        elif fault.kind == "replace":
            self._down(fault.nodes[0], graceful=False)
            time.sleep(fault.down_s)
            self._log(f"replaced {fault.nodes[0]} by {hands.replace(fault.nodes[0])}")
        else:
            self._down(fault.nodes[0], graceful=fault.kind == "stop")
            time.sleep(fault.down_s)
            self._up(fault.nodes[0])

    def _run(self) -> None:
        try:
            for fault in self.faults:
                self._sleep_until(fault.at)
                self._play(fault)
        except BaseException as e:  # noqa: BLE001 - reported by join() on the campaign's thread
            self.error = e
            try:   # never leave a cut network or a frozen JVM behind a failed step
                self.hands.heal()
                for fault in self.faults:
                    if fault.kind == "pause":
                        self.hands.resume(fault.nodes[0])
            except BaseException:  # noqa: BLE001 - the first error is the one reported
                pass
