"""`ctl verify` and `ctl trigger backfill` fail before Spark starts: a bad option, a host DNS does not know, a node
that refuses the connection, each with its own message (no cluster, no Spark here: the jobs must not be reached)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from async_triggers import cli
from async_triggers.spark_jobs import backfill as backfill_job, verify as verify_job


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    def reached(*args, **kwargs):
        raise AssertionError("the Spark job was reached")
    monkeypatch.setattr(verify_job, "run", reached)
    monkeypatch.setattr(backfill_job, "run_backfill", reached)


def run(*args: str):
    cli._register()
    return CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "250"})


@pytest.mark.parametrize("command", [("verify", "tl"), ("trigger", "backfill", "tl")])
def test_should_name_a_host_that_dns_does_not_know(command):
    result = run(*command, "--hosts", "nosuchhost.invalid")
    assert result.exit_code == 1, result.output
    assert "no address for the contact point(s) nosuchhost.invalid: DNS does not know the host name" in result.output


@pytest.mark.parametrize("command", [("verify", "tl"), ("trigger", "backfill", "tl")])
def test_should_say_that_no_node_answers_at_the_contact_point(command):
    result = run(*command, "--hosts", "127.0.0.9", "--json")
    assert result.exit_code == 1, result.output
    error = json.loads(result.output.strip().splitlines()[-1])
    assert error["error"].startswith("cannot reach Cassandra at 127.0.0.9:9042") and error["exit_code"] == 1


@pytest.mark.parametrize("command, message", [
    (("verify", "tl", "--consistency", "TWELVE"), "--consistency must be one of ONE,"),
    (("verify", "tl", "--ranges", "0"), "--ranges must be at least 1, found: 0"),
    (("trigger", "backfill", "tl", "--ranges", "0"), "--ranges must be at least 1, found: 0"),
])
def test_should_refuse_a_bad_option_before_it_connects(command, message):
    result = run(*command, "--hosts", "nosuchhost.invalid")
    assert result.exit_code == 2 and message in result.output, result.output
