"""The contracts between the control plane and the plugin, each with one home, checked from the other language
through tests/golden/contract/ (the plugin's JUnit tests read the same files):

- the tables of our keyspace and of the backup maps: home async_triggers.keyspace, golden keyspace.json;
- the flow spec's defaults and choices: home the plugin's parser (spec/FlowSpecContractTest writes flow_spec.json),
  checked here against what the control plane renders for a flow that sets nothing.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from async_triggers import flows, keyspace, schema, status, validate
from async_triggers.errors import ValidationError
from async_triggers.flows import Flow, Write, source

CONTRACT = Path(__file__).resolve().parents[1] / "golden" / "contract"


def _golden(name: str) -> dict:
    return json.loads((CONTRACT / name).read_text())


def test_should_hold_the_keyspace_layout_the_plugin_is_checked_against():
    path = CONTRACT / "keyspace.json"
    text = json.dumps(keyspace.contract(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.read_text() == text, f"{path} differs from async_triggers.keyspace (UPDATE_GOLDEN=1 to accept)"


def test_should_read_every_counter_and_time_of_a_flow_status_row():
    fields = {f.name for f in dataclasses.fields(status.FlowNodeStatus)}
    assert fields - set(status.DERIVED) == set(keyspace.FLOW_STATUS.column_names())


# --- the flow spec: the plugin's parser is the home; the control plane must render and refuse the same ----------

USERS = schema.TableSchema("app", "users", ("id",), (), {"id": "bigint", "name": "text", "email": "text"})
BY_NAME = schema.TableSchema("app", "users_by_name", ("name",), ("id",), {"name": "text", "id": "bigint", "email": "text"})
COPY = schema.TableSchema("app", "users_copy", ("id",), (), {"id": "bigint", "name": "text", "email": "text"})
SCHEMA = schema.of(USERS, BY_NAME, COPY)
SPEC = _golden("flow_spec.json")


def _flow(**options) -> Flow:
    """The golden file's flow (keyed by a column that may change: a lineage target), or a handler in its place."""
    steps = [] if options.get("handler") else [Write("app.users_by_name", name=source.name, id=source.id,
                                                     email=source.email)]
    return Flow(name="users_by_name", source="app.users", steps=steps, **options)


def _at(spec: dict, path: str):
    """A value of a spec by the golden file's dotted path (``targets[].mode``: the first target's)."""
    value = spec
    for part in path.split("."):
        value = value[part[:-2]][0] if part.endswith("[]") else value[part]
    return value


@pytest.mark.parametrize("path", sorted(SPEC["defaults"]))
def test_should_render_the_plugins_default_for_an_option_a_flow_leaves_out(path):
    copy = Flow(name="users_copy", source="app.users", steps=[Write("app.users_copy", id=source.id, name=source.name,
                                                                    email=source.email)])
    rendered = validate.compile_all([copy], SCHEMA)[0]   # a whole copy keyed by the source's key: the default mode
    assert _at(rendered, path) == SPEC["defaults"][path]


@pytest.mark.parametrize("option, accepted", [
    ("events", flows.EVENTS), ("overflow.policy", flows.OVERFLOW_POLICIES),
    ("read_consistency", flows.READ_CONSISTENCY_LEVELS), ("write_consistency", flows.WRITE_CONSISTENCY_LEVELS)])
def test_should_accept_the_choices_the_plugin_accepts(option, accepted):
    assert sorted(accepted) == sorted(SPEC["choices"][option])


def _options(spec: dict) -> dict:
    """A rejected spec's options as Flow arguments (the ones a flow file can set)."""
    groups = {"queue": flows.Queue, "retry": flows.Retry, "overflow": flows.Overflow, "backup": flows.Backup}
    out = {}
    for key, value in spec.items():
        if key in groups:
            out[key] = groups[key](**value)
        elif key in ("events", "read_consistency", "write_consistency", "page_size", "start_delay_ms", "handler"):
            out[key] = tuple(value) if key == "events" else value
    return out


# the rules a flow file cannot break: the control plane writes the name it is given and computes each target's mode
NOT_SETTABLE = ("'name' is required", "'targets[0].mode'")


@pytest.mark.parametrize("case", [c for c in SPEC["rejected"] if not any(r in c["message"] for r in NOT_SETTABLE)],
                         ids=lambda c: c["message"].split(": ", 1)[1][:50])
def test_should_refuse_what_the_plugin_refuses(case):
    option = case["message"].split("'")[3]          # flow 'users_by_name': '<option>' ...
    with pytest.raises(ValidationError) as refused:
        validate.compile_all([_flow(**_options(case["spec"]))], SCHEMA)
    assert f"'{option}'" in str(refused.value)
