"""The Click that Typer runs on: recent Typer releases carry their own copy (``typer._click``), whose contexts and
exceptions are not the ``click`` package's; older ones use ``click``. Everything of Click's we touch comes from here."""
try:
    from typer._click import core, exceptions
    from typer._click.globals import get_current_context
except ImportError:  # Typer before it carried Click
    from click import core, exceptions
    from click.globals import get_current_context

ParameterSource = core.ParameterSource
ClickException = exceptions.ClickException
UsageError = exceptions.UsageError
NoArgsIsHelpError = getattr(exceptions, "NoArgsIsHelpError", None)

__all__ = ["ClickException", "NoArgsIsHelpError", "ParameterSource", "UsageError", "get_current_context"]
