"""What every sub-app shares: turning a library error into a message on stderr and an exit code."""
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
