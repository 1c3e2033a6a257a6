"""The README reads in five minutes and every command it shows is real: at most 250 lines, a table of contents, the
report and the blog post cited by title, links that point at files that exist, and each `ctl ...` line naming a
command that exists with options that command has."""
from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from async_triggers import cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def ctl_lines(text: str) -> list[str]:
    """Every ctl invocation in the code blocks and in backticks: `ctl trigger drop FLOW`."""
    found = []
    for block in re.findall(r"```(?:sh|text)?\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip().removeprefix("$ ").strip()
            if line.startswith("ctl "):
                found.append(line)
    found += [m for m in re.findall(r"`(ctl [^`]+)`", text)]
    return found


def resolve(words: list[str]):
    """The command a line names and the words left (its arguments and options)."""
    cli._register()
    command = get_command(cli.app)
    rest = list(words)
    while getattr(command, "commands", None) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, rest


def options_of(command) -> set[str]:
    return {o for p in command.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}


def test_should_keep_the_readme_short_with_contents_and_its_sources_by_title():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    text = " ".join(text.split())
    assert "**Contents:**" in text
    assert '"Building Data Flows Using Distributed Key-Value Stores"' in text
    assert '"Managing Indexes in Cassandra using Async Triggers"' in text
    assert "make demo" in text and "make test" in text


def test_should_link_only_files_that_exist_from_the_readme():
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ROOT / target).exists(), target
    for path in re.findall(r"\b((?:docs|trigger-plugin|tests|benchmarks)/[\w./-]+\.(?:md|py|yaml|json))", text):
        assert (ROOT / path).exists(), path


def test_should_show_only_ctl_commands_and_options_that_exist_in_the_readme():
    lines = ctl_lines(README.read_text())
    assert len(lines) >= 12
    root_options = options_of(get_command(cli.app))
    for line in lines:
        words = line.split()[1:]
        command, rest = resolve(words)
        assert not (getattr(command, "commands", None) and rest), f"{line!r}: no such command"   # `ctl bench`: a group
        used = {w.strip("[]").split("=")[0] for part in rest for w in part.split("|") if w.strip("[]").startswith("--")}
        unknown = used - options_of(command) - root_options
        assert not unknown, f"{line!r}: {command.name} has no {sorted(unknown)}"


def test_should_catch_a_ctl_command_or_option_that_does_not_exist():
    command, rest = resolve(["trigger", "drop", "FLOW", "--drain"])
    assert command.name == "drop" and "--drain" in options_of(command)
    assert "--force" not in options_of(command)
    command, _ = resolve(["trigger", "explode"])
    assert getattr(command, "commands", None), "an unknown subcommand leaves the group unresolved"
