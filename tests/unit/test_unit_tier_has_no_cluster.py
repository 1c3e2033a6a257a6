"""The unit tier's guard (tests/conftest.py) holds: a command that would connect to a local node fails the test instead of
changing a cluster that happens to run on this machine."""
from typer.testing import CliRunner

from async_triggers import cli


def test_should_fail_a_unit_test_that_reaches_a_local_node():
    cli._register()
    result = CliRunner().invoke(cli.app, ["trigger", "pause", "anything", "--hosts", "127.0.0.1"])
    assert isinstance(result.exception, AssertionError), result.output
    assert "a unit test connected to ['127.0.0.1']" in str(result.exception)
