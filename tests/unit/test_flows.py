"""Loading flow files: the API a developer writes, and clear errors for bad files."""
import pytest

from async_triggers.errors import ConfigError
from async_triggers.flow_file import load_flow_file
from async_triggers.flows import FanOut, Flow, Ref, Write, row, source


def test_should_build_references_and_steps():
    fan = FanOut("k.f", match={"id": source.a}).write("k.t", x=row.b, y=source["weird col"])
    flow = Flow(name="f", source="k.s", steps=[Write("k.t", x=source.a), fan])
    assert source.a == Ref("source", "a") and str(row.b) == "row.b"
    assert [(f is not None, w.target) for f, w in flow.writes()] == [(False, "k.t"), (True, "k.t")]
    assert fan.writes[0].columns["y"] == Ref("source", "weird col")


def test_should_load_flows_from_a_file(tmp_path):
    f = tmp_path / "f.py"
    f.write_text("from async_triggers.flows import Flow, Write, source\n"
                 "FLOWS = [Flow(name='a', source='k.s', steps=[Write('k.t', x=source.x)])]\n")
    assert [fl.name for fl in load_flow_file(f)] == ["a"]


def test_should_load_a_flow_file_that_imports_a_module_beside_it_and_defines_a_dataclass(tmp_path):
    (tmp_path / "shared_columns.py").write_text("from async_triggers.flows import source\nCOLUMNS = dict(x=source.x)\n")
    f = tmp_path / "f.py"
    f.write_text("import dataclasses\n"
                 "from async_triggers.flows import Flow, Write\n"
                 "from shared_columns import COLUMNS\n"
                 "@dataclasses.dataclass(frozen=True)\n"
                 "class Names:\n"
                 "    flow: str = 'a'\n"
                 "FLOWS = [Flow(name=Names().flow, source='k.s', steps=[Write('k.t', **COLUMNS)])]\n")
    import sys
    path_before = list(sys.path)
    [flow] = load_flow_file(f)
    assert (flow.name, dict(flow.steps[0].columns)) == ("a", {"x": source.x})
    assert sys.path == path_before, "the flow file's folder is on the path only while it loads"
    assert "shared_columns" not in sys.modules, "another flow file may have a module of that name beside it"


@pytest.mark.parametrize("text, message", [
    ("x = 1\n", "must define FLOWS, a non-empty list of async_triggers.flows.Flow"),
    ("raise RuntimeError('boom')\n", "could not load the flow file: RuntimeError: boom"),
    ("from async_triggers.flows import Flow\nFLOWS = [Flow(name='a', source='k.s'), Flow(name='a', source='k.s')]\n",
     "flow names must be unique, repeated: a"),
    ("from async_triggers.flows import Flow\nFLOWS = [Flow(name='a', source='nodot')]\nFLOWS[0].source_table\n",
     "the source of flow 'a' must be written 'keyspace.table', found: 'nodot'"),
])
def test_should_reject_bad_flow_files(tmp_path, text, message):
    f = tmp_path / "bad.py"
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_flow_file(f)
    assert message in str(e.value) and "bad.py" in str(e.value)


def test_should_name_a_missing_flow_file(tmp_path):
    with pytest.raises(ConfigError, match="flow file not found: .*none.py"):
        load_flow_file(tmp_path / "none.py")
