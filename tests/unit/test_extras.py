"""A command whose extra is not installed says which, before it connects (the wheel alone has no Spark, no ccm)."""
import builtins
import importlib
import sys

import pytest
from typer.testing import CliRunner

from async_triggers import cli


@pytest.fixture
def without(monkeypatch):
    """Make the named top-level modules impossible to import, as in a virtualenv without them."""
    real, real_module = builtins.__import__, importlib.import_module

    def make(*names):
        def refuse(name):
            if name.split(".")[0] in names:
                raise ModuleNotFoundError(f"No module named '{name}'", name=name)

        def fake(name, *args, **kwargs):
            refuse(name)
            return real(name, *args, **kwargs)

        def fake_module(name, *args, **kwargs):
            refuse(name)
            return real_module(name, *args, **kwargs)
        for loaded in [m for m in sys.modules if m.split(".")[0] in names]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setattr(builtins, "__import__", fake)
        monkeypatch.setattr(importlib, "import_module", fake_module)
    return make


@pytest.mark.parametrize("command", [("verify", "f"), ("trigger", "backfill", "f")])
def test_should_name_the_spark_extra_before_connecting(without, command):
    cli._register()
    without("pyspark")
    result = CliRunner().invoke(cli.app, [*command, "--hosts", "127.0.0.9", "--json"])
    assert result.exit_code == 1, result.output
    assert "this command needs the 'spark' extra (pyspark is not installed): pip install 'async-triggers[spark]'" \
        in result.output
    assert "cannot reach" not in result.output   # it never connected
