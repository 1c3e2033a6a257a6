"""How a command ends, in one place: the exit codes, and the library errors turned into a message on stderr (one
JSON object with --json) and the exit code of their outcome (async_triggers.errors).

| code | meaning |
| --- | --- |
| 0 | done; a check found nothing wrong |
| 1 | a check found a problem (rows missing, unexpected or with a wrong value), or an operation failed (cluster unreachable, refused credentials, Spark could not run, a deploy failed) |
| 2 | bad input: an unknown flow, a bad option value, an invalid flow file (also Click's usage errors) |
| 130 | interrupted |
"""
from __future__ import annotations

import contextlib
import json
import sys

import typer
from cassandra import DriverException

from .. import errors, extras
from ..errors import BAD_INPUT, FAILED, INTERRUPTED, AsyncTriggersError
from .click_compat import UsageError, get_current_context

OK = 0
PROBLEM = errors.EXIT_CODES[FAILED]
BAD_INPUT_CODE = errors.EXIT_CODES[BAD_INPUT]


def exit_code_of(error: BaseException) -> int:
    """errors.exit_code_of, and Click's usage errors as bad input."""
    if isinstance(error, UsageError):
        return BAD_INPUT_CODE
    return errors.exit_code_of(error)


def json_requested() -> bool:
    """True when the running command (or the root) was given --json."""
    ctx = get_current_context(silent=True)
    while ctx is not None:
        if ctx.params.get("as_json") or ctx.meta.get("async_triggers.json"):
            return True
        ctx = ctx.parent
    return False


def fail(message: str, code: int, as_json: bool | None = None) -> typer.Exit:
    """Print ``message`` on stderr (as {"error": ..., "exit_code": ...} with --json); the Exit to raise."""
    if as_json if as_json is not None else json_requested():
        typer.echo(json.dumps({"error": message, "exit_code": code}), err=True)
    else:
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def missing_extra(error: ModuleNotFoundError, as_json: bool | None = None) -> typer.Exit:
    """The Exit for a part of an extra that is not installed, naming the extra (extras.py); any other missing module
    is raised again, as the bug it is."""
    message = extras.missing(error)
    if message is None:
        raise error
    return fail(message, PROBLEM, as_json)


@contextlib.contextmanager
def errors_to_exit(as_json: bool | None = None):
    """Turn our errors into their message and exit code; ``as_json`` defaults to the command's --json."""
    try:
        yield
    except AsyncTriggersError as e:
        raise fail(str(e), exit_code_of(e), as_json)
    except DriverException as e:   # what Cassandra answered a statement with, not a stack trace
        raise fail(f"Cassandra refused a statement: {e}", PROBLEM, as_json)
    except ModuleNotFoundError as e:
        raise missing_extra(e, as_json)
    except KeyboardInterrupt:
        if as_json if as_json is not None else json_requested():
            typer.echo(json.dumps({"error": "interrupted", "exit_code": INTERRUPTED}), err=True)
        else:
            typer.echo("interrupted", err=True)
        sys.exit(INTERRUPTED)
