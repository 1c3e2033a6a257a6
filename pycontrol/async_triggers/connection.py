"""How to connect to a cluster, in one place: the options, where their values come from, and what they become for
the Python driver, the Spark Cassandra Connector and the child processes we start.

Precedence, for every option: command-line flags > environment (ASYNC_TRIGGERS_*) > a cqlshrc file > defaults.
The cqlshrc file is the one cqlsh reads (``--cqlshrc PATH``, else ``~/.cassandra/cqlshrc`` when it exists), with
cqlsh's own sections and keys (``CQLSHRC_KEYS``).

The password is never an argument: it comes from ``ASYNC_TRIGGERS_PASSWORD``, the cqlshrc file, or a prompt on a
terminal (:func:`with_password`). It is kept out of ``repr``, of our messages, of the argv of every process we
start (children get it in their environment, :func:`child_env`) and of Spark's launch command (the connector reads
it from the session's runtime conf, :func:`~async_triggers.connection_clients.spark_conf`).
"""
from __future__ import annotations

import configparser
import dataclasses
import os
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .errors import ConfigError

DEFAULT_HOSTS = ("127.0.0.1",)
DEFAULT_PORT = 9042
DEFAULT_CQLSHRC = Path("~/.cassandra/cqlshrc")
ENV_PREFIX = "ASYNC_TRIGGERS_"

# field -> environment variable (without the prefix); the password has no flag, only these two ways (and a prompt)
ENV = {
    "hosts": "HOSTS", "port": "PORT", "local_dc": "LOCAL_DC", "username": "USERNAME", "password": "PASSWORD",
    "ssl": "SSL", "ssl_ca": "SSL_CA", "ssl_cert": "SSL_CERT", "ssl_key": "SSL_KEY", "ssl_validate": "SSL_VALIDATE",
    "ssl_check_hostname": "SSL_CHECK_HOSTNAME", "protocol_version": "PROTOCOL_VERSION", "cqlshrc": "CQLSHRC",
    "verbose": "VERBOSE",
}
LEGACY_HOSTS_ENV = "ASYNC_TRIGGERS_CONTACT_POINTS"

# field -> (section, key) of a cqlshrc file, as cqlsh reads them (cqlsh.py, cqlshlib/sslhandling.py)
CQLSHRC_KEYS = {
    "hosts": ("connection", "hostname"), "port": ("connection", "port"), "ssl": ("connection", "ssl"),
    "username": ("authentication", "username"), "password": ("authentication", "password"),
    "ssl_ca": ("ssl", "certfile"), "ssl_validate": ("ssl", "validate"), "ssl_cert": ("ssl", "usercert"),
    "ssl_key": ("ssl", "userkey"), "ssl_check_hostname": ("ssl", "check_hostname"),
    "protocol_version": ("protocol", "version"),
}
_BOOLS = {"ssl", "ssl_validate", "ssl_check_hostname", "verbose"}
_PATHS = {"ssl_ca", "ssl_cert", "ssl_key", "cqlshrc"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclasses.dataclass(frozen=True)
class Connection:
    """Everything a client needs to reach the cluster. ``origin`` says where each value came from."""
    hosts: tuple[str, ...] = DEFAULT_HOSTS
    port: int = DEFAULT_PORT
    local_dc: str | None = None          # None: the driver picks the data center of the first node it reaches
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False, compare=False)
    ssl: bool = False
    ssl_ca: Path | None = None           # PEM CA file(s) the nodes' certificates are checked against
    ssl_cert: Path | None = None         # client certificate (PEM), for require_client_auth
    ssl_key: Path | None = None          # its private key (PEM)
    ssl_validate: bool = True
    ssl_check_hostname: bool = False     # off unless asked, like cqlsh
    protocol_version: int | None = None
    cqlshrc: Path | None = None          # the file that was read, if any
    verbose: bool = False
    origin: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def where(self) -> str:
        return ", ".join(f"{h}:{self.port}" for h in self.hosts)

    def describe(self) -> list[str]:
        """The resolved options and their sources, for verbose output (never the password itself)."""
        lines = []
        for f in dataclasses.fields(self):
            if f.name in ("origin", "verbose"):
                continue
            value = getattr(self, f.name)
            if f.name == "password":
                value = "(set)" if value else "(none)"
            elif f.name == "local_dc" and value is None:
                value = "(chosen by the driver: the data center of the first node it reaches)"
            elif isinstance(value, tuple):
                value = ",".join(value)
            lines.append(f"{f.name:<18} {value}  [{self.origin.get(f.name, 'default')}]")
        return lines


# --- parsing ----------------------------------------------------------------------------------------------------

def parse_hosts(entries: str | Sequence[str], what: str = "--hosts") -> tuple[tuple[str, ...], int | None]:
    """``"a,b:9142,[::1]:9042"`` to the hosts and the one port their entries name (None when none does).

    Bare IPv6 addresses (``::1``) are hosts; with a port they need brackets. The driver and the connector use one
    port for every host, so entries naming different ports are rejected."""
    items = entries.split(",") if isinstance(entries, str) else [p for e in entries for p in e.split(",")]
    hosts, ports = [], {}
    for raw in items:
        entry = raw.strip()
        if not entry:
            continue
        host, port_text = entry, None
        if entry.startswith("["):
            close = entry.find("]")
            if close < 0 or (entry[close + 1:] and not entry[close + 1:].startswith(":")):
                raise ConfigError(f"{what}: cannot parse host {entry!r} (an IPv6 address with a port is "
                                  "written [addr]:port)")
            host, port_text = entry[1:close], entry[close + 2:] or None
        elif entry.count(":") == 1:
            host, port_text = entry.split(":")
        if not host:
            raise ConfigError(f"{what}: entry {entry!r} names no host")
        if port_text is not None:
            ports[entry] = _port(port_text, f"{what} entry {entry!r}")
        hosts.append(host)
    if not hosts:
        raise ConfigError(f"{what} names no host: {entries!r}")
    if len(set(ports.values())) > 1:
        raise ConfigError(f"{what}: entries name different ports ({', '.join(ports)}); the driver and the Spark "
                          "connector use one port for every host: give one --port")
    return tuple(hosts), next(iter(ports.values()), None)


def _port(text, what: str) -> int:
    try:
        port = int(str(text).strip())
    except ValueError:
        raise ConfigError(f"{what}: the port must be a number, found: {text!r}") from None
    if not 0 < port < 65536:
        raise ConfigError(f"{what}: the port must be between 1 and 65535, found: {port}")
    return port


def _bool(text, what: str) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{what} must be true or false, found: {text!r}")


def read_cqlshrc(path: Path) -> dict[str, str]:
    """The connection values a cqlshrc file sets, as text, keyed by our field names."""
    parser = configparser.RawConfigParser()   # raw, like cqlsh reads the password: a % is a %
    try:
        with open(path) as f:
            parser.read_file(f)
    except OSError as e:
        raise ConfigError(f"cannot read the cqlshrc file {path}: {e.strerror}") from e
    except configparser.Error as e:
        raise ConfigError(f"the cqlshrc file {path} is not valid: {e.message.splitlines()[0]}") from e
    return {field: parser.get(section, key).strip() for field, (section, key) in CQLSHRC_KEYS.items()
            if parser.has_option(section, key)}


def _convert(field: str, value, what: str):
    if value is None:
        return None
    if field == "port":
        return _port(value, what)
    if field == "protocol_version":
        try:
            version = int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{what}: the protocol version must be a number, found: {value!r}") from None
        if not 3 <= version <= 6:
            raise ConfigError(f"{what}: the protocol version must be between 3 and 6, found: {version}")
        return version
    if field in _BOOLS:
        return _bool(value, what)
    if field in _PATHS:
        return Path(str(value)).expanduser()
    text = str(value).strip()
    return text or None


# --- resolution -------------------------------------------------------------------------------------------------

def resolve(flags: Mapping[str, object] | None = None, env: Mapping[str, str] | None = None) -> Connection:
    """The connection from flags (field -> value, None or absent when not given), the environment and a cqlshrc
    file, in that order of precedence. Raises ConfigError naming the option, variable or file at fault."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if env is None else env
    unknown = set(flags) - set(ENV)
    if unknown:
        raise ConfigError(f"unknown connection option(s): {', '.join(sorted(unknown))}")
    if "password" in flags:
        raise ConfigError("the password is never taken as an argument: set ASYNC_TRIGGERS_PASSWORD, put it in a "
                          "cqlshrc file, or let ctl ask for it on a terminal")
    layers: list[tuple[str, dict]] = [("flag", {k: (v, f"--{k.replace('_', '-')}") for k, v in flags.items()})]
    env_values = {}
    for field, name in ENV.items():
        var = ENV_PREFIX + name
        if env.get(var, "").strip() != "" or (field == "password" and env.get(var)):
            env_values[field] = (env[var], f"environment {var}")
    if "hosts" not in env_values and env.get(LEGACY_HOSTS_ENV, "").strip():
        env_values["hosts"] = (env[LEGACY_HOSTS_ENV], f"environment {LEGACY_HOSTS_ENV}")
    layers.append(("environment", env_values))

    rc_value, rc_what = (flags["cqlshrc"], "--cqlshrc") if "cqlshrc" in flags else env_values.get("cqlshrc", (None, None))
    rc_path = Path(str(rc_value)).expanduser() if rc_value else DEFAULT_CQLSHRC.expanduser()
    if rc_value and not rc_path.is_file():
        raise ConfigError(f"{rc_what}: no cqlshrc file at {rc_path}")
    rc_values = {}
    if rc_path.is_file():
        rc_values = {f: (v, f"cqlshrc {rc_path} [{CQLSHRC_KEYS[f][0]}] {CQLSHRC_KEYS[f][1]}")
                     for f, v in read_cqlshrc(rc_path).items()}
    layers.append(("cqlshrc", rc_values))

    values: dict = {"cqlshrc": rc_path if rc_values or rc_path.is_file() else None}
    origin: dict[str, str] = {"cqlshrc": rc_what or ("default" if values["cqlshrc"] else "none")}
    for field in ENV:
        if field == "cqlshrc":
            continue
        for _, layer in layers:
            if field in layer:
                raw, what = layer[field]
                if field == "hosts":
                    hosts, port = parse_hosts(raw, what)
                    values["hosts"] = hosts
                    if port is not None:
                        values["_hosts_port"] = (port, what)
                else:
                    values[field] = raw if field == "password" else _convert(field, raw, what)
                origin[field] = what
                break
    _settle_port(values, origin)
    _settle_ssl(values, origin, layers)
    return Connection(**values, origin=origin)


def _settle_port(values: dict, origin: dict) -> None:
    hosts_port = values.pop("_hosts_port", None)
    if hosts_port is None:
        return
    port, what = hosts_port
    if "port" in values and values["port"] != port and origin["port"].startswith("--"):
        raise ConfigError(f"{what} names port {port} but --port says {values['port']}: give one of them")
    values["port"], origin["port"] = port, what


def _settle_ssl(values: dict, origin: dict, layers) -> None:
    # TLS is on when asked (--ssl, ASYNC_TRIGGERS_SSL, [connection] ssl), or when a flag or variable names a CA or a
    # client certificate: nobody gives --ssl-ca to talk in clear. A cqlshrc [ssl] section alone does not turn it
    # on (cqlsh needs --ssl or [connection] ssl too).
    if "ssl" not in values:
        implied = [what for kind, layer in layers[:2] for f, (_, what) in layer.items() if f in ("ssl_ca", "ssl_cert")]
        if implied:
            values["ssl"], origin["ssl"] = True, f"implied by {implied[0]}"
    if bool(values.get("ssl_cert")) != bool(values.get("ssl_key")):
        have, missing = ("ssl_cert", "--ssl-key") if values.get("ssl_cert") else ("ssl_key", "--ssl-cert")
        raise ConfigError(f"{origin[have]} is set but {missing} is not: a client certificate needs its key")
    for field in ("ssl_ca", "ssl_cert", "ssl_key"):
        path = values.get(field)
        if values.get("ssl") and path is not None and not path.is_file():
            raise ConfigError(f"{origin[field]}: no such file: {path}")


# --- the password -----------------------------------------------------------------------------------------------

_PROMPTED: dict[tuple, str] = {}


def with_password(conn: Connection, *, env: Mapping[str, str] | None = None, isatty: Callable[[], bool] | None = None,
                  ask: Callable[[str], str] | None = None) -> Connection:
    """``conn`` with its password: as resolved, else asked on the terminal (once per process) when a username is
    set, stdin is a terminal and CI is not set; else ConfigError saying how to give one."""
    if not conn.username or conn.password is not None:
        return conn
    key = (conn.username, conn.hosts, conn.port)
    if key not in _PROMPTED:
        env = os.environ if env is None else env
        isatty = isatty or (lambda: sys.stdin is not None and sys.stdin.isatty())
        why = "CI is set" if env.get("CI", "").lower() in _TRUE else None if isatty() else "stdin is not a terminal"
        if why:
            raise ConfigError(f"user '{conn.username}' needs a password and {why}, so ctl cannot ask for it: set "
                              f"{ENV_PREFIX}PASSWORD, or [authentication] password in a cqlshrc file (--cqlshrc)")
        if ask is None:
            import getpass
            ask = getpass.getpass
        _PROMPTED[key] = ask(f"Password for {conn.username} at {conn.where()}: ")
    origin = {**conn.origin, "password": "prompt"}
    return dataclasses.replace(conn, password=_PROMPTED[key], origin=origin)


def child_env(conn: Connection, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process that must connect like us: every option as its ASYNC_TRIGGERS_ variable,
    the password included, so that nothing secret goes into the child's argv."""
    env = dict(os.environ if base is None else base)
    env.pop(LEGACY_HOSTS_ENV, None)
    values = {"hosts": ",".join(conn.hosts), "port": str(conn.port), "local_dc": conn.local_dc,
              "username": conn.username, "password": conn.password, "ssl": "true" if conn.ssl else "false",
              "ssl_ca": conn.ssl_ca, "ssl_cert": conn.ssl_cert, "ssl_key": conn.ssl_key,
              "ssl_validate": "true" if conn.ssl_validate else "false",
              "ssl_check_hostname": "true" if conn.ssl_check_hostname else "false",
              "protocol_version": conn.protocol_version, "cqlshrc": conn.cqlshrc,
              "verbose": "true" if conn.verbose else None}
    for field, value in values.items():
        var = ENV_PREFIX + ENV[field]
        if value is None:
            env.pop(var, None)
        else:
            env[var] = str(value)
    return env


def with_hosts(conn: Connection, hosts: Sequence[str], port: int | None = None) -> Connection:
    """``conn`` pointed at other hosts (a cluster we just started), keeping auth and TLS."""
    return dataclasses.replace(conn, hosts=tuple(hosts), port=conn.port if port is None else port,
                               origin={**conn.origin, "hosts": "the cluster's nodes"})


# --- the Spark jobs' and benchmark scripts' command lines (argparse) ----------------------------------------------

def add_arguments(parser) -> None:
    """The connection options of an argparse command line, as in ctl (the password only from the environment,
    the cqlshrc file or a prompt)."""
    g = parser.add_argument_group("connection", "also ASYNC_TRIGGERS_HOSTS, _PORT, _LOCAL_DC, _USERNAME, _PASSWORD, "
                                                "_SSL, _SSL_CA, _SSL_CERT, _SSL_KEY, _SSL_VALIDATE, _CQLSHRC, and a "
                                                "cqlshrc file, with ctl's precedence")
    g.add_argument("--hosts", "--contact-points", dest="conn_hosts", help="comma-separated CQL hosts, host or host:port "
                                                                           "(default 127.0.0.1)")
    g.add_argument("--port", dest="conn_port", help="CQL native port (default 9042)")
    g.add_argument("--local-dc", dest="conn_local_dc")
    g.add_argument("--username", dest="conn_username")
    g.add_argument("--cqlshrc", dest="conn_cqlshrc")
    g.add_argument("--ssl", dest="conn_ssl", action="store_const", const=True)
    g.add_argument("--ssl-ca", dest="conn_ssl_ca")
    g.add_argument("--ssl-cert", dest="conn_ssl_cert")
    g.add_argument("--ssl-key", dest="conn_ssl_key")
    g.add_argument("--no-ssl-validate", dest="conn_ssl_validate", action="store_const", const=False)
    g.add_argument("--ssl-check-hostname", dest="conn_ssl_check_hostname", action="store_const", const=True)
    g.add_argument("--protocol-version", dest="conn_protocol_version")


def from_arguments(args, env: Mapping[str, str] | None = None) -> Connection:
    """The connection an argparse namespace (with :func:`add_arguments`) and the environment name (a job's command
    line: with --verbose, its connection lines go to stderr)."""
    flags = {k[len("conn_"):]: v for k, v in vars(args).items() if k.startswith("conn_")}
    conn = resolve(flags, env)
    if conn.verbose:
        show_on_stderr()
    return conn


def show_on_stderr() -> None:
    """--verbose, for a command line (ctl, a Spark job's main): the connection's log lines (async_triggers.cql, logger
    ``async_triggers.connection``) on stderr as ``connection: ...``. Library code only logs them."""
    import logging
    import sys
    log = logging.getLogger("async_triggers.connection")
    class ToStderr(logging.StreamHandler):
        """Writes to whatever sys.stderr is when a line is logged (a test runner swaps it per command)."""
        async_triggers_cli = True

        @property
        def stream(self):
            return sys.stderr

        @stream.setter
        def stream(self, _value):
            pass

    if not any(getattr(h, "async_triggers_cli", False) for h in log.handlers):
        handler = ToStderr()
        handler.setFormatter(logging.Formatter("connection: %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False



def arguments_of(conn: Connection) -> list[str]:
    """The non-secret options that make a child resolve the same hosts and port (with :func:`child_env` for the
    rest)."""
    return ["--hosts", ",".join(conn.hosts), "--port", str(conn.port)]
