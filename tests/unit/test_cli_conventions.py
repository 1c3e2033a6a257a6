"""ctl's conventions without a cluster: connection options in place after a command and on the root, their
precedence and environment variables, --json errors and exit codes, trigger wait on an unknown flow, the password
kept out of every output."""
import contextlib
import dataclasses
import json

import pytest
import typer
from typer.testing import CliRunner

from async_triggers import cli, connection
from async_triggers.cli import exit_codes, preflight, trigger as cli_trigger
from async_triggers.errors import (CheckFailed, ConfigError, ConnectionFailed, DeployError, UnknownFlowError,
                                   ValidationError)

SECRET = "s3cr3t-Pa55"
cli._register()


@pytest.fixture(autouse=True)
def clean_env(tmp_path, monkeypatch):
    monkeypatch.setattr(connection, "DEFAULT_CQLSHRC", tmp_path / "absent" / "cqlshrc")
    for var in [v for v in __import__("os").environ if v.startswith("ASYNC_TRIGGERS_") and v != "ASYNC_TRIGGERS_HOME"]:
        monkeypatch.delenv(var)


@pytest.fixture
def seen(monkeypatch):
    """Replace the trigger commands' connect: record the settings they connect with."""
    connections = []

    @contextlib.contextmanager
    def fake_connect(settings, *a, **k):
        connections.append(settings.connection)
        yield object()

    monkeypatch.setattr(cli_trigger, "connect", fake_connect)
    monkeypatch.setattr(cli_trigger.deploy_mod, "read_deployed", lambda session: {})
    monkeypatch.setattr(cli_trigger.status_mod, "paused_flows", lambda session: set())
    return connections


def invoke(*args, env=None):
    return CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "250", **(env or {})})


def test_should_accept_connection_options_after_the_command(seen):
    result = invoke("trigger", "list", "--hosts", "a,b", "--port", "9142", "--local-dc", "dc2", "--username", "u",
                    env={"ASYNC_TRIGGERS_PASSWORD": SECRET})
    assert result.exit_code == 0, result.output
    assert (seen[0].hosts, seen[0].port, seen[0].local_dc, seen[0].username) == (("a", "b"), 9142, "dc2", "u")


def test_should_connect_to_the_port_given_in_contact_points_instead_of_crashing(seen):
    result = invoke("--contact-points", "h1:9142", "trigger", "list")
    assert result.exit_code == 0, result.output
    assert (seen[0].hosts, seen[0].port) == (("h1",), 9142)


def test_should_prefer_command_flags_over_root_flags_over_the_environment(seen):
    env = {"ASYNC_TRIGGERS_PORT": "9000", "ASYNC_TRIGGERS_HOSTS": "envhost"}
    assert invoke("--port", "9100", "trigger", "list", env=env).exit_code == 0
    assert invoke("--port", "9100", "trigger", "list", "--port", "9200", env=env).exit_code == 0
    assert invoke("trigger", "list", env=env).exit_code == 0
    assert [(c.hosts, c.port) for c in seen] == [(("envhost",), 9100), (("envhost",), 9200), (("envhost",), 9000)]


def test_should_show_the_environment_variables_in_the_help():
    text = invoke("trigger", "deploy", "--help").output
    for var in ("ASYNC_TRIGGERS_HOSTS", "ASYNC_TRIGGERS_PORT", "ASYNC_TRIGGERS_LOCAL_DC", "ASYNC_TRIGGERS_USERNAME",
                "ASYNC_TRIGGERS_SSL_CA", "ASYNC_TRIGGERS_CQLSHRC", "ASYNC_TRIGGERS_PASSWORD"):
        assert var in text, var
    assert "--password" not in text


def test_should_offer_shell_completion():
    text = invoke("--help").output
    assert "--install-completion" in text and "--show-completion" in text


@pytest.mark.parametrize("error, code", [
    (ConfigError("x"), 2), (ValidationError("f", "x"), 2), (UnknownFlowError(["f"]), 2),
    (ConnectionFailed("x"), 1), (DeployError("x"), 1), (CheckFailed("x"), 1), (KeyboardInterrupt(), 130),
])
def test_should_map_each_error_to_its_exit_code(error, code):
    assert exit_codes.exit_code_of(error) == code


def test_should_exit_1_with_the_message_not_a_traceback_when_cassandra_refuses_a_statement(capsys):
    from cassandra import InvalidRequest
    with pytest.raises(typer.Exit) as done:
        with exit_codes.errors_to_exit(as_json=False):
            raise InvalidRequest("Error from server: code=2200 [Invalid query] message=\"Table 'users' doesn't exist\"")
    assert done.value.exit_code == 1
    assert capsys.readouterr().err.strip() == ("error: Cassandra refused a statement: Error from server: code=2200 "
                                               "[Invalid query] message=\"Table 'users' doesn't exist\"")


def test_should_exit_2_with_a_json_error_on_bad_input(seen):
    result = invoke("trigger", "list", "--json", "--hosts", "a:1,b:2")
    assert result.exit_code == 2
    error = json.loads(result.stderr.strip())
    assert error["exit_code"] == 2 and "entries name different ports (a:1, b:2)" in error["error"]
    assert result.stdout == ""


def test_should_report_usage_errors_as_json_with_json(capsys):
    assert cli.run(["trigger", "list", "--json", "--port", "abc"]) == 2
    error = json.loads(capsys.readouterr().err.strip())
    assert error["exit_code"] == 2 and error["error"].startswith("Invalid value for '--port'")


def test_should_exit_1_and_never_show_the_password_when_the_cluster_is_unreachable():
    result = invoke("trigger", "list", "--json", "--hosts", "127.0.0.9", "--port", "1", "--username", "u",
                    "--verbose", env={"ASYNC_TRIGGERS_PASSWORD": SECRET})
    assert result.exit_code == 1
    error = json.loads(result.stderr.strip().splitlines()[-1])
    assert error["error"].startswith("cannot reach Cassandra at 127.0.0.9:1")
    assert "connection: password           (set)" in result.stderr       # --verbose says where things came from
    assert SECRET not in result.output + result.stderr


def test_should_exit_2_for_a_username_without_a_password_outside_a_terminal():
    result = invoke("trigger", "list", "--hosts", "127.0.0.9", "--port", "1", "--username", "u", env={"CI": "true"})
    assert result.exit_code == 2
    assert "user 'u' needs a password and CI is set" in result.stderr


def test_should_fail_wait_at_once_naming_an_unknown_flow(seen, monkeypatch):
    monkeypatch.setattr(cli_trigger.deploy_mod, "read_deployed", lambda session: {"known": {}})
    monkeypatch.setattr(cli_trigger.status_mod, "wait_drained", lambda *a, **k: pytest.fail("waited"))
    result = invoke("trigger", "wait", "known", "nope", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr) == {"error": "no deployed flow named 'nope' (deployed: known)", "exit_code": 2}


def test_should_hand_the_verify_job_its_connection_not_argv(monkeypatch):
    from async_triggers.spark_jobs import verify as verify_job
    got = {}

    def fake_run(request, connection=None):
        got["request"], got["connection"] = request, connection
        raise UnknownFlowError(["f"])

    monkeypatch.setattr(verify_job, "run", fake_run)
    monkeypatch.setattr(preflight, "deployed", lambda conn, names, acting=None: {})   # no cluster here (test_preflight.py)
    result = invoke("verify", "f", "--username", "u", "--json", env={"ASYNC_TRIGGERS_PASSWORD": SECRET})
    assert result.exit_code == 2, result.output
    assert got["connection"].password == SECRET and got["connection"].username == "u"
    assert SECRET not in repr(got["request"])
    assert json.loads(result.stderr)["error"] == "no deployed flow named 'f' (deployed: none)"


def test_should_pass_every_flow_and_option_to_the_verify_job_and_exit_with_its_verdict(monkeypatch):
    from async_triggers.spark_jobs import verify as verify_job
    from async_triggers.spark_jobs.compare import Result
    from async_triggers.spark_jobs.verify_run import FlowReport
    got = {}

    def fake_run(request, connection=None):
        got.update(dataclasses.asdict(request))
        return [FlowReport(f, (Result("ks.t", ("k",), expected=1, present=1 if f == "a" else 0,
                                      missing=0 if f == "a" else 1, unexpected=0),), 1.0, request.consistency)
                for f in request.flows]

    monkeypatch.setattr(verify_job, "run", fake_run)
    monkeypatch.setattr(preflight, "deployed", lambda conn, names, acting=None: {})
    result = invoke("verify", "a", "b", "--consistency", "ALL", "--ranges", "8", "--restart", "--repair", "--json")
    assert result.exit_code == 1, result.output
    assert (got["flows"], got["all"], got["consistency"], got["ranges"], got["restart"], got["repair"]) == \
           (("a", "b"), False, "ALL", 8, True, True)
    assert [json.loads(line)[0]["flow"] for line in result.stdout.splitlines()] == ["a", "b"]
    result = invoke("verify", "a", "--all")
    assert result.exit_code == 2 and "name the flows to verify, or --all" in result.stderr
    assert invoke("verify").exit_code == 2


def test_should_show_no_value_type_for_a_flag_in_the_help():
    text = invoke("trigger", "drop", "--help").output
    drain = next(line for line in text.splitlines() if line.strip("│ ").startswith("--drain"))
    assert "<bool>" not in drain and "Wait until the flow's tasks are done" in drain
    timeout = next(line for line in text.splitlines() if line.strip("│ ").startswith("--timeout"))
    assert "<float>" in timeout, "an option that takes a value still shows its type"


def test_should_offer_json_output_on_every_command_but_the_pass_through_tools():
    from typer.main import get_command
    cli._register()

    def leaves(command, path):
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from leaves(sub, path + [name])
        else:
            yield " ".join(path), {p.name for p in command.params}

    found = dict(leaves(get_command(cli.app), []))
    assert len(found) > 30 and "trigger status" in found
    missing = sorted(name for name, params in found.items() if "as_json" not in params)
    assert missing == ["cluster cqlsh", "cluster nodetool"], missing   # their output is the tool's own
