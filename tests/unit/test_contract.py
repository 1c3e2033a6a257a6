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

from async_triggers import keyspace, status

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
    assert fields == set(keyspace.FLOW_STATUS.column_names())
