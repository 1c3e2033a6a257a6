"""A flow's Python values, checked before anything reads them: first their shapes (a list where a list belongs, a
Queue where a queue does, strings for tables), then the rules on its options (those the plugin's parser refuses too:
tests/golden/contract; integers within a Java int). Every problem of every flow is reported at once, each naming the
flow and the field (``flow 'orders': 'queue' must be a Queue(capacity=..., workers=...), found: 10000``), so a flow
file never ends in a traceback. The rules that need the schema or the other flows (tables, columns, keys, cycles)
are validate.py's, after these.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any, Iterable, Mapping

from .errors import ValidationError
from .flows import (EVENTS, OVERFLOW_POLICIES, READ_CONSISTENCY_LEVELS, WRITE_CONSISTENCY_LEVELS, Aggregate, Backup, FanOut, Flow, Overflow, Queue, Retry, Write, MAX_TTL_SECONDS, Recent, Ref)

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
JAVA_CLASS_RE = re.compile(r"^([A-Za-z_$][A-Za-z0-9_$]*\.)*[A-Za-z_$][A-Za-z0-9_$]*$")
SAFETY_NET_MIN_MS = 10_000
JAVA_INT_MAX = 2**31 - 1
MAX_WORKERS = 1_024   # worker threads of one flow on one node: more is a typo, not a design


class FlowProblems(ValidationError):
    """Every problem found in the flows checked, one line each (one problem reads as a ValidationError does)."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        self.flow = problems[0][0]
        lines = [f"flow '{flow}': {message}" for flow, message in problems]
        Exception.__init__(self, lines[0] if len(lines) == 1 else
                           f"{len(lines)} problems:\n" + "\n".join(f"  {line}" for line in lines))


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _name_of(flow: Any, i: int) -> str:
    name = getattr(flow, "name", None)
    return name if isinstance(name, str) and name else f"FLOWS[{i}]"


# --- shapes ---------------------------------------------------------------------------------------------------------

def _table(out: list[str], field: str, value: Any) -> None:
    if not isinstance(value, str) or len(value.split(".")) != 2 or not all(value.split(".")):
        out.append(f"'{field}' must be a string 'keyspace.table', found: {value!r}")


def _mapping(out: list[str], field: str, value: Any) -> None:
    """A mapping of column names (its references are validate.py's, which names the column each fills)."""
    if not isinstance(value, Mapping) or not all(isinstance(column, str) for column in value):
        out.append(f"'{field}' must be a mapping of column name to source.<column> or row.<column>, found: {value!r}")


def _recent(out: list[str], at: str, step: FanOut) -> None:
    recent = step.recent
    if recent is None:
        return
    if not isinstance(recent, Recent):
        out.append(f"'{at}.recent' must be Recent(source.<time key column>, timedelta(...)) or None, found: {recent!r}")
        return
    if not (isinstance(recent.by, Ref) and recent.by.scope == "source"):
        out.append(f"'{at}.recent.by' must be source.<column> (a timeuuid or timestamp key column of the source), "
                   f"found: {recent.by!r}")
    w = recent.within
    if isinstance(w, bool) or not isinstance(w, (int, dt.timedelta)):
        out.append(f"'{at}.recent.within' must be a timedelta or a number of seconds, found: {w!r}")
    elif not 1 <= recent.seconds <= MAX_TTL_SECONDS:
        out.append(f"'{at}.recent.within' must be between 1 second and 20 years (Cassandra's longest TTL), found: "
                   f"{recent.seconds} s")


def _step_shape(out: list[str], at: str, step: Any) -> None:
    if isinstance(step, Write):
        _table(out, f"{at}.target", step.target)
        _mapping(out, f"{at}.columns", step.columns)
    elif isinstance(step, FanOut):
        _table(out, f"{at}.table", step.table)
        _mapping(out, f"{at}.match", step.match)
        if not isinstance(step.follow, bool):
            out.append(f"'follow' of the fan-out over '{step.table}' must be True or False, found: {step.follow!r}")
        _recent(out, at, step)
        for j, write in enumerate(step.writes):
            _step_shape(out, f"{at}.writes[{j}]", write)
    elif isinstance(step, Aggregate):
        _table(out, f"{at}.target", step.target)
        for kind in ("group_by", "sum", "min", "max"):
            _mapping(out, f"{at}.{kind}", getattr(step, kind))
        if step.count is not None and not (isinstance(step.count, str) and step.count):
            out.append(f"'{at}.count' must be a column name or None, found: {step.count!r}")
    else:
        out.append(f"'{at}' must be a Write, a FanOut or an Aggregate, found: {step!r}")


OPTIONS = (("queue", Queue, "Queue(capacity=..., workers=...)"),
           ("retry", Retry, "Retry(max_attempts=..., initial_backoff_ms=..., max_backoff_ms=..., max_age_ms=...)"),
           ("overflow", Overflow, "Overflow(policy=..., block_timeout_ms=..., max_workers=...)"),
           ("backup", Backup, "Backup(enabled=..., safety_net_ms=...)"))


def _shape_problems(flow: Flow) -> list[str]:
    out: list[str] = []
    if not isinstance(flow.name, str):
        out.append(f"a flow name must be a string, found: {flow.name!r}")
    _table(out, "source", flow.source)
    if isinstance(flow.steps, (list, tuple)):
        for i, step in enumerate(flow.steps):
            _step_shape(out, f"steps[{i}]", step)
    else:
        out.append(f"'steps' must be a list of Write, FanOut and Aggregate steps, found: {flow.steps!r}")
    if not isinstance(flow.events, (list, tuple)):
        out.append(f"'events' must be a list of {', '.join(map(repr, EVENTS))}, found: {flow.events!r}")
    for field, kind, form in OPTIONS:
        if not isinstance(getattr(flow, field), kind):
            out.append(f"'{field}' must be a {form}, found: {getattr(flow, field)!r}")
    if flow.handler is not None and not isinstance(flow.handler, str):
        out.append(f"'handler' must be a Java class name or None, found: {flow.handler!r}")
    return out


# --- option rules (on values of the right shapes) -------------------------------------------------------------------

def _integer(out: list[str], option: str, value: Any, low: int, high: int = JAVA_INT_MAX) -> None:
    """The plugin's wording below the range; the Java int (or the workers' bound) above it."""
    if not _int(value) and low == 0:
        out.append(f"'{option}' must be a non-negative integer, found: {value!r}")
    elif not _int(value):
        out.append(f"'{option}' must be strictly positive, found: {value!r}")
    elif value < low:
        out.append(f"'{option}' must be {'strictly positive' if low else 'a non-negative integer'}, found: {value!r}")
    elif value > high:
        out.append(f"'{option}' must be at most {high}, found: {value!r}")


def _option_problems(flow: Flow) -> list[str]:
    out: list[str] = []
    if not isinstance(flow.name, str) or not NAME_RE.match(flow.name):
        out.append(f"a flow name must be a letter followed by up to 47 letters, digits or underscores, "
                   f"found: {flow.name!r}")
    if not flow.events or any(e not in EVENTS for e in flow.events):
        out.append(f"'events' must be a non-empty subset of {list(EVENTS)}, found: {list(flow.events)}")
    for option, levels in (("read_consistency", READ_CONSISTENCY_LEVELS),
                           ("write_consistency", WRITE_CONSISTENCY_LEVELS)):
        if getattr(flow, option) not in levels:
            out.append(f"'{option}' must be one of {', '.join(levels)}, found: {getattr(flow, option)!r}")
    _integer(out, "queue.capacity", flow.queue.capacity, 1)
    _integer(out, "queue.workers", flow.queue.workers, 1, MAX_WORKERS)
    _integer(out, "page_size", flow.page_size, 1)
    _integer(out, "start_delay_ms", flow.start_delay_ms, 0)
    r = flow.retry
    for option, value, low in (("retry.max_attempts", r.max_attempts, 1), ("retry.initial_backoff_ms",
                                                                           r.initial_backoff_ms, 0),
                               ("retry.max_age_ms", r.max_age_ms, 1)):
        if not _int(value):
            out.append(f"'{option}' must be an integer, found: {value!r}")
        else:
            _integer(out, option, value, low)
    if _int(r.initial_backoff_ms) and (not _int(r.max_backoff_ms) or not r.initial_backoff_ms <= r.max_backoff_ms
                                       <= JAVA_INT_MAX):
        out.append(f"'retry.max_backoff_ms' must be at least 'retry.initial_backoff_ms' ({r.initial_backoff_ms}), "
                   f"found: {r.max_backoff_ms!r}")
    o = flow.overflow
    if o.policy not in OVERFLOW_POLICIES:
        out.append(f"'overflow.policy' must be one of {', '.join(OVERFLOW_POLICIES)}, found: {o.policy!r}")
    _integer(out, "overflow.block_timeout_ms", o.block_timeout_ms, 0)
    if o.max_workers is not None and _int(flow.queue.workers):
        if not _int(o.max_workers) or o.max_workers < flow.queue.workers:
            out.append(f"'overflow.max_workers' must be at least 'queue.workers' ({flow.queue.workers}), "
                       f"found: {o.max_workers!r}")
        elif o.max_workers > MAX_WORKERS:
            out.append(f"'overflow.max_workers' must be at most {MAX_WORKERS}, found: {o.max_workers!r}")
    b = flow.backup
    if not isinstance(b.enabled, bool):
        out.append(f"'backup.enabled' must be True or False, found: {b.enabled!r}")
    # at least 10 s: younger entries are mostly tasks still queued on a live node; at most a Java int (the plugin)
    if not _int(b.safety_net_ms) or not SAFETY_NET_MIN_MS <= b.safety_net_ms <= JAVA_INT_MAX:
        out.append(f"'backup.safety_net_ms' must be an integer from {SAFETY_NET_MIN_MS} to {JAVA_INT_MAX}, "
                   f"found: {b.safety_net_ms!r}")
    if flow.handler is not None and flow.steps:
        out.append("a flow has either steps or a handler class, not both")
    if flow.handler is None and not flow.steps:
        out.append("a flow needs at least one step (Write, FanOut or Aggregate) or a handler class")
    if flow.handler is not None and not JAVA_CLASS_RE.match(flow.handler):
        out.append(f"'handler' must be a fully qualified Java class name, found: {flow.handler!r}")
    for step in flow.steps:
        if isinstance(step, FanOut) and not step.writes:
            out.append(f"the fan-out over '{step.table}' writes nothing: add .write(target, column=...)")
    return out


def check(flows: Iterable[Any], options: bool = True) -> None:
    """Raises FlowProblems naming every problem of every flow, or returns. ``options=False``: the shapes only (what a
    flow file must get right for ``ctl`` to read it; the option rules come with the deploy's validation)."""
    problems: list[tuple[str, str]] = []
    for i, flow in enumerate(flows):
        name = _name_of(flow, i)
        if not isinstance(flow, Flow):
            problems.append((name, f"must be an async_triggers.flows.Flow, found: {flow!r}"))
            continue
        shapes = _shape_problems(flow)
        problems.extend((name, p) for p in shapes or (_option_problems(flow) if options else []))
    if problems:
        raise FlowProblems(problems)
