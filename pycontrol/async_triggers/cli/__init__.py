"""`ctl`: one sub-app per noun. Commands stay thin: build settings, call the library, map errors to exit codes
(exit_codes.py); the connection options come from options.py."""
from __future__ import annotations

import functools
import inspect
import json
import sys

import typer

from .. import config as config_mod
from .click_compat import ClickException, NoArgsIsHelpError, flags_without_a_type
from .exit_codes import BAD_INPUT_CODE, INTERRUPTED, errors_to_exit, missing_extra
from .options import root_flags, root_parameters

flags_without_a_type()

# show_locals stays off: a traceback must never print a local holding the password
app = typer.Typer(help="Asynchronous triggers for Apache Cassandra: clusters, flows, verification, benchmarks.",
                  no_args_is_help=True, add_completion=True, pretty_exceptions_show_locals=False)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version
        typer.echo(f"ctl (async-triggers) {version('async-triggers')}")
        raise typer.Exit()


def _with_root_connection_options(callback):
    extra = root_parameters()
    names = [p.name for p in extra]

    @functools.wraps(callback)
    def wrapper(*args, **kwargs):
        values = {name: kwargs.pop(name) for name in names}
        return callback(*args, connection_values=values, **kwargs)

    signature = inspect.signature(callback)
    params = [p for p in signature.parameters.values() if p.name != "connection_values"]
    wrapper.__signature__ = signature.replace(parameters=[*params, *extra])
    return wrapper


@app.callback()
@_with_root_connection_options
def _root(ctx: typer.Context,
          _version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                        help="Print the version and exit."),
          home: str = typer.Option(None, help="Cache directory (default ~/.cache/async-triggers).",
                                   envvar="ASYNC_TRIGGERS_HOME", show_envvar=True),
          install_dir: str = typer.Option(None, "--install-dir", envvar="ASYNC_TRIGGERS_INSTALL_DIR", show_envvar=True,
                                          help="An official Apache Cassandra 5.0 binary distribution to use instead "
                                               "of the one assembled from Maven."),
          connection_values: dict = None):
    """Connection options work here and after any command that talks to a cluster (those win)."""
    flags = root_flags(ctx, connection_values or {})
    with errors_to_exit():
        ctx.obj = config_mod.load(connection_flags=flags, home=home, install_dir=install_dir)


def _register() -> None:
    from . import bench, chaos, cluster, demo, fuzz, plugin, spark, trigger, verify
    if getattr(app, "_registered", False):
        return
    app._registered = True
    app.add_typer(bench.app, name="bench")
    app.add_typer(chaos.app, name="chaos")
    app.add_typer(cluster.app, name="cluster")
    app.add_typer(fuzz.app, name="fuzz")
    app.add_typer(plugin.app, name="plugin")
    app.add_typer(spark.app, name="spark")
    app.add_typer(trigger.app, name="trigger")
    app.command("verify")(verify.verify)
    app.command("demo")(demo.demo)


def run(args: list[str] | None = None) -> int:
    """Run ctl; Click's own usage errors (a bad option value, an unknown option) are printed as JSON too when the
    command line has --json. Returns the exit code."""
    _register()
    argv = sys.argv[1:] if args is None else list(args)
    try:
        result = typer.main.get_command(app).main(args=argv, prog_name="ctl", standalone_mode=False)
    except ClickException as e:
        if NoArgsIsHelpError is not None and isinstance(e, NoArgsIsHelpError):
            e.show()
            return BAD_INPUT_CODE
        if "--json" in argv:
            typer.echo(json.dumps({"error": e.format_message(), "exit_code": e.exit_code}), err=True)
        else:
            e.show()
        return e.exit_code
    except typer.Exit as e:
        return e.exit_code
    except ModuleNotFoundError as e:   # outside a command's errors_to_exit: the same message
        return missing_extra(e, "--json" in argv).exit_code
    except typer.Abort:
        typer.echo("aborted", err=True)
        return INTERRUPTED
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run())
