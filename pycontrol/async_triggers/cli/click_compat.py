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


def flags_without_a_type() -> None:
    """Typer releases that print each option's type in the help print ``<bool>`` after a flag too, as if it took a
    value (``--drain <bool>``). A flag takes none: show no type for it. A no-op on releases without that column."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - an older Typer
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_flags_without_a_type", False):
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._flags_without_a_type = True
    TyperOption.display_type_rich = display_type_rich
