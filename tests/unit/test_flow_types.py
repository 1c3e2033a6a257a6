"""A flow file never ends in a traceback: every wrong shape or option of every flow is named, all at once."""
from __future__ import annotations

import itertools

import pytest

from async_triggers import schema, validate
from async_triggers.errors import AsyncTriggersError, ConfigError, ValidationError
from async_triggers.flow_types import JAVA_INT_MAX, MAX_WORKERS, FlowProblems
from async_triggers.flow_file import load_flow_file
from async_triggers.flows import Aggregate, FanOut, Flow, Queue, Write, row, source

SCHEMA = schema.of(schema.TableSchema("k", "s", ("id",), (), {"id": "bigint", "x": "text", "g": "text"}),
                   schema.TableSchema("k", "t", ("id",), (), {"id": "bigint", "x": "text"}),
                   schema.TableSchema("k", "f", ("id",), ("y",), {"id": "bigint", "y": "text"}))
HEADER = "from async_triggers.flows import *\n"
GOOD = "name='bad', source='k.s', steps=[Write('k.t', id=source.id, x=source.x)]"
FIELDS = ("name", "source", "steps", "events", "read_consistency", "write_consistency", "queue", "page_size",
          "start_delay_ms", "retry", "overflow", "backup", "handler")
WRONG = ("None", "'x'", "3.5", "[]", "{}", "10000", "True", "('k', 's')", "Queue()", "Write('k.t', x=source.x)",
         "2**31", "-1", "object()")


def _compile(flows):
    return validate.compile_all(flows, SCHEMA)


# the values among WRONG that are right for their field: these deploy
ACCEPTED = {("name", "'x'"), ("queue", "Queue()"), ("page_size", "10000"), ("start_delay_ms", "10000"),
            ("handler", "None")}


@pytest.mark.parametrize("field, value", list(itertools.product(FIELDS, WRONG)))
def test_should_name_the_flow_and_field_of_any_wrong_value_in_a_flow_file(tmp_path, field, value):
    options = dict(item.split("=", 1) for item in GOOD.split(", ", 2))
    options[field] = value
    f = tmp_path / "bad.py"
    f.write_text(HEADER + "FLOWS = [Flow(" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")]\n")
    if (field, value) in ACCEPTED:
        assert [spec["name"] for spec in _compile(load_flow_file(f))] == [eval(options["name"])]
        return
    with pytest.raises((ConfigError, ValidationError)) as e:   # ours, never a traceback of another type
        _compile(load_flow_file(f))
    text = str(e.value)
    flow = "FLOWS[0]" if field == "name" and value != "'x'" and not isinstance(eval(value), str) else "bad"
    assert f"flow '{flow}'" in text, text
    assert (f"'{field}" in text or (field == "name" and "a flow name" in text)
            or (field == "steps" and "at least one step" in text)
            or (field == "handler" and "either steps or a handler" in text)), text


def test_should_report_every_problem_of_every_flow_at_once():
    flows = [Flow(name="one", source="k.s", steps=Write("k.t", x=source.x), queue=10_000),
             Flow(name="two", source=("k", "s"), steps=[Write("k.t", x=source.x)], retry={"max_attempts": 3}),
             Flow(name="three", source="k.s", steps=[Write("k.t", x=source.x)],
                  queue=Queue(capacity=2**31, workers=MAX_WORKERS + 1), page_size=0)]
    with pytest.raises(FlowProblems) as e:
        _compile(flows)
    assert str(e.value).splitlines() == [
        "7 problems:",
        f"  flow 'one': 'steps' must be a list of Write, FanOut and Aggregate steps, found: {Write('k.t', x=source.x)!r}",
        "  flow 'one': 'queue' must be a Queue(capacity=..., workers=...), found: 10000",
        "  flow 'two': 'source' must be a string 'keyspace.table', found: ('k', 's')",
        "  flow 'two': 'retry' must be a Retry(max_attempts=..., initial_backoff_ms=..., max_backoff_ms=..., "
        "max_age_ms=...), found: {'max_attempts': 3}",
        f"  flow 'three': 'queue.capacity' must be at most {JAVA_INT_MAX}, found: {2**31}",
        f"  flow 'three': 'queue.workers' must be at most {MAX_WORKERS}, found: {MAX_WORKERS + 1}",
        "  flow 'three': 'page_size' must be strictly positive, found: 0",
    ]


def test_should_name_the_step_and_its_field_of_a_wrong_step():
    flows = [Flow(name="steps", source="k.s", steps=[
        Write(5, x=source.x),
        FanOut("k.f", match=[("id", source.id)]).write("k.t", x=row.y),
        Aggregate("k.t", group_by=None),
        "Write('k.t')"])]
    with pytest.raises(FlowProblems) as e:
        _compile(flows)
    assert [p for _, p in e.value.problems] == [
        "'steps[0].target' must be a string 'keyspace.table', found: 5",
        "'steps[1].match' must be a mapping of column name to source.<column> or row.<column>, "
        "found: [('id', Ref(scope='source', column='id'))]",
        "'steps[2].group_by' must be a mapping of column name to source.<column> or row.<column>, found: None",
        "'steps[3]' must be a Write, a FanOut or an Aggregate, found: \"Write('k.t')\"",
    ]


def test_should_read_one_problem_as_a_validation_error_reads():
    with pytest.raises(ValidationError) as e:
        _compile([Flow(name="one", source="k.s", steps=[Write("k.t", x=source.x)], page_size=0)])
    assert str(e.value) == "flow 'one': 'page_size' must be strictly positive, found: 0"


def test_should_refuse_at_load_what_ctl_could_not_read_and_leave_the_option_rules_to_the_deploy(tmp_path):
    f = tmp_path / "flows.py"
    f.write_text(HEADER + "FLOWS = [Flow(name='a', source='k.s', steps=Write('k.t', x=source.x), page_size=0)]\n")
    with pytest.raises(ConfigError) as e:
        load_flow_file(f)
    assert str(e.value) == (f"{f}: flow 'a': 'steps' must be a list of Write, FanOut and Aggregate steps, found: "
                            f"{Write('k.t', x=source.x)!r}")
    f.write_text(HEADER + "FLOWS = [Flow(name='a', source='k.s', steps=[Write('k.t', x=source.x)], page_size=0)]\n")
    [flow] = load_flow_file(f)   # its page size is the deploy's to refuse
    assert flow.page_size == 0


def _documented() -> dict[str, dict[str, str]]:
    """docs/flows.md's option tables: per class, option -> its default cell."""
    from pathlib import Path
    import re
    text = (Path(__file__).resolve().parents[2] / "docs" / "flows.md").read_text()
    out: dict[str, dict[str, str]] = {}
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        name = re.match(r"`(\w+)`", section)
        if name:
            rows = re.findall(r"^\| `(\w+)` \| (.+?) \|", section, flags=re.MULTILINE)
            out[name.group(1)] = dict(rows)
    return out


def test_should_document_every_option_with_the_default_the_code_has():
    import dataclasses
    from async_triggers import flows
    documented = _documented()
    for cls in (flows.Flow, flows.Queue, flows.Retry, flows.Overflow, flows.Backup):
        rows = documented[cls.__name__]
        assert sorted(rows) == sorted(f.name for f in dataclasses.fields(cls)), cls.__name__
        for field in dataclasses.fields(cls):
            cell = rows[field.name]
            if field.default is dataclasses.MISSING:
                assert cell == "required", (cls.__name__, field.name, cell)
                continue
            shown = eval(cell.split("`")[1], vars(flows))
            default = field.default
            if isinstance(default, (list, tuple)):
                shown, default = list(shown), list(default)
            assert shown == default, (cls.__name__, field.name, cell)
