"""The connection options on the command line: on the root (``ctl --hosts a trigger list``) and in place after a
command (``ctl trigger deploy --hosts a,b --port 9142 flows.py``), with their environment variables in --help.

A command that talks to a cluster takes them with one line, ``@connection_options`` under ``@app.command``; its
``ctx.obj`` is then the settings with the resolved connection (async_triggers.connection: flags > environment >
cqlshrc > defaults; flags after the command win over the same flags on the root).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from typing import Iterator, Optional

import typer

from .. import connection as connection_mod
from ..connection import ENV, ENV_PREFIX
from .click_compat import ParameterSource, get_current_context
from .exit_codes import errors_to_exit

PANEL = "Connection"
_FLAGS_KEY = "async_triggers.connection_flags"


def _env(field: str) -> str:
    return ENV_PREFIX + ENV[field]


def _options() -> dict[str, tuple[type, object]]:
    """field -> (annotation, typer.Option), made fresh for each command (Click params are per command)."""
    def opt(*decls, help: str, field: str):
        return typer.Option(None, *decls, help=help, envvar=_env(field), show_envvar=True, rich_help_panel=PANEL)
    return {
        "hosts": (Optional[str], opt("--hosts", "--contact-points", field="hosts",
                                     help="Comma-separated CQL hosts, each host or host:port (\\[addr]:port for IPv6) "
                                          "(default: 127.0.0.1; also ASYNC_TRIGGERS_CONTACT_POINTS)")),
        "port": (Optional[int], opt("--port", field="port", help="CQL native port (default: 9042).")),
        "local_dc": (Optional[str], opt("--local-dc", field="local_dc",
                                        help="Local data center (default: the driver takes the first node's).")),
        "username": (Optional[str], opt("--username", "-u", field="username",
                                        help="User to log in as. The password is never an option: "
                                             "ASYNC_TRIGGERS_PASSWORD, [authentication] password in the cqlshrc "
                                             "file, or a prompt on a terminal (not when CI is set).")),
        "cqlshrc": (Optional[str], opt("--cqlshrc", field="cqlshrc",
                                       help="A cqlshrc file, read like cqlsh: sections connection (hostname, port, ssl), "
                                            "authentication (username, password), ssl (certfile, validate, userkey, "
                                            "usercert, check_hostname), protocol (version) "
                                            "(default: ~/.cassandra/cqlshrc when it exists).")),
        "ssl": (Optional[bool], opt("--ssl/--no-ssl", field="ssl", help="Connect with TLS.")),
        "ssl_ca": (Optional[str], opt("--ssl-ca", field="ssl_ca",
                                      help="CA certificate(s), PEM, the nodes' certificates are checked against "
                                           "(implies --ssl) (default: the system's).")),
        "ssl_cert": (Optional[str], opt("--ssl-cert", field="ssl_cert",
                                        help="Client certificate, PEM (require_client_auth; implies --ssl).")),
        "ssl_key": (Optional[str], opt("--ssl-key", field="ssl_key", help="The client certificate's key, PEM.")),
        "ssl_validate": (Optional[bool], opt("--ssl-validate/--no-ssl-validate", field="ssl_validate",
                                             help="Check the nodes' certificates (default: check).")),
        "ssl_check_hostname": (Optional[bool], opt("--ssl-check-hostname/--no-ssl-check-hostname",
                                                   field="ssl_check_hostname",
                                                   help="Also check that a certificate names its node's host, "
                                                        "like cqlsh's [ssl] check_hostname (default: no).")),
        "protocol_version": (Optional[int], opt("--protocol-version", field="protocol_version",
                                                help="Native protocol version (default: negotiated).")),
        "verbose": (Optional[bool], opt("--verbose", field="verbose",
                                        help="Print the resolved connection, where each value came from, and the "
                                             "local data center in use.")),
    }


PARAM_PREFIX = "conn_"


def _given(ctx: typer.Context, values: dict) -> dict:
    """The connection options given on this command's command line (environment values are resolved later, with
    the cqlshrc file, in their own place in the precedence)."""
    given = {}
    for name, value in values.items():
        source = ctx.get_parameter_source(name)
        if value is not None and source == ParameterSource.COMMANDLINE:
            given[name[len(PARAM_PREFIX):]] = value
    return given


def root_flags(ctx: typer.Context, values: dict) -> dict:
    """Record the root's connection flags for the commands below it; return them."""
    flags = _given(ctx, values)
    ctx.meta[_FLAGS_KEY] = flags
    return flags


def root_parameters() -> list[inspect.Parameter]:
    return [inspect.Parameter(PARAM_PREFIX + field, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
            for field, (annotation, option) in _options().items()]


def connection_options(command):
    """Give ``command`` the connection options; its ``ctx.obj`` becomes the settings with the resolved connection."""
    signature = inspect.signature(command)
    extra = root_parameters()
    names = {p.name for p in extra}

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        values = {name: kwargs.pop(name) for name in names}
        ctx = get_current_context()
        flags = {**ctx.meta.get(_FLAGS_KEY, {}), **_given(ctx, values)}
        with errors_to_exit():
            conn = connection_mod.resolve(flags)
        ctx.obj = dataclasses.replace(ctx.obj, connection=conn)
        if conn.verbose:
            connection_mod.show_on_stderr()
        return command(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *extra])
    return wrapper


def confirm(question: str, yes: bool) -> None:
    """Ask before a discard; ``--yes`` answers for scripts. Without a terminal to ask, refuse (naming --yes)."""
    import sys

    from ..errors import NotConfirmed
    if yes:
        return
    if not sys.stdin.isatty():
        raise NotConfirmed(f"{question} No terminal to ask: add --yes to confirm")
    if not typer.confirm(question, default=False, err=True):
        raise NotConfirmed("not confirmed: nothing was changed")


@contextlib.contextmanager
def acting_on(settings, what: str) -> Iterator:
    """A session for a command that changes the cluster: it first says, on stderr, which cluster it changes and
    through which contact point ("deploy on cluster 'prod' via 10.0.0.1:9042"), so that a default of 127.0.0.1 or a
    stale environment variable never acts unseen."""
    from .. import review
    from ..cql import connect
    with connect(settings) as session:
        typer.echo(f"{what} on {review.target(session)}", err=True)
        yield session
