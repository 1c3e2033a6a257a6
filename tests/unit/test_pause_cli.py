"""`ctl trigger pause|resume|wait` without a cluster: the errors a user gets for an unknown, unpausable or paused flow."""
import contextlib
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from async_triggers import config, pause
from async_triggers.cli import trigger as cli_trigger
from async_triggers.errors import ConfigError, UnknownFlowError, FlowPausedError
from async_triggers.spec import FlowSpec

SOURCE = {"keyspace": "app", "table": "users", "partition_key": ["id"], "clustering": [], "columns": {"id": "bigint"}}
DEPLOYED = {name: FlowSpec.parse({"name": name, "source": SOURCE, "targets": [],
                                  "backup": {"enabled": backup, "safety_net_ms": 300000}}, version=1)
            for name, backup in (("copy", True), ("fast", False))}


class NoKeyspaceSession:
    """A cluster where nothing was deployed yet."""
    cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={}))


@pytest.fixture()
def empty_cluster(monkeypatch):
    @contextlib.contextmanager
    def connect(_settings):
        yield NoKeyspaceSession()

    monkeypatch.setattr(cli_trigger, "connect", connect)
    monkeypatch.setattr(cli_trigger, "acting_on", lambda settings, what: connect(settings))


@pytest.mark.parametrize("command", ["pause", "resume"])
def test_should_name_an_unknown_flow_and_exit_2(empty_cluster, command):
    result = CliRunner().invoke(cli_trigger.app, [command, "nope"], obj=config.load())
    assert result.exit_code == 2
    assert result.output.strip() == "error: no deployed flow named 'nope' (deployed: none)"


@pytest.mark.parametrize("command", ["pause", "resume"])
def test_should_ask_for_the_flow_with_exit_2(command):
    result = CliRunner().invoke(cli_trigger.app, [command], obj=config.load())
    assert result.exit_code == 2
    assert "Missing argument" in result.output and "NAME" in result.output.upper()


def test_should_name_the_deployed_flows_when_the_name_is_wrong():
    with pytest.raises(UnknownFlowError, match=r"^no deployed flow named 'cpy' \(deployed: copy, fast\)$"):
        pause.check_pausable("cpy", DEPLOYED)


def test_should_refuse_to_pause_a_flow_without_backup_entries():
    with pytest.raises(ConfigError, match=r"^flow 'fast' keeps no backup entries \(Backup\(enabled=False\)\)"):
        pause.check_pausable("fast", DEPLOYED)
    assert pause.check_pausable("copy", DEPLOYED) is DEPLOYED["copy"]


def test_should_fail_waiting_on_a_paused_flow_at_once_naming_it(monkeypatch):
    @contextlib.contextmanager
    def connect(_settings):
        yield NoKeyspaceSession()

    monkeypatch.setattr(cli_trigger, "connect", connect)
    monkeypatch.setattr(cli_trigger.status_mod, "paused_flows", lambda session: {"copy"})
    monkeypatch.setattr(cli_trigger.deploy_mod, "require_deployed", lambda session, names: None)
    result = CliRunner().invoke(cli_trigger.app, ["wait", "copy", "other", "--timeout", "60"], obj=config.load())
    assert result.exit_code == 1
    assert result.output.strip() == ("error: flow 'copy' is paused: its tasks wait in the backup maps and none runs "
                                     "until `ctl trigger resume copy`")


def test_should_name_every_paused_flow():
    assert str(FlowPausedError(["a", "b"])) == ("flows 'a', 'b' are paused: their tasks wait in the backup maps and "
                                                "none runs until `ctl trigger resume` of each")
