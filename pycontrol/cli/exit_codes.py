"""How a command ends on a library error: its message on stderr, exit 2 for a flow that fails validation, 1 for any
other library error, 130 when interrupted."""
from __future__ import annotations

import contextlib
import sys

import typer

from ..errors import AsyncTriggersError, ValidationError


@contextlib.contextmanager
def errors_to_exit():
    try:
        yield
    except ValidationError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)
    except AsyncTriggersError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
