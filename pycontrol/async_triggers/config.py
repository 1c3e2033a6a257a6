"""One frozen settings object, built in one place.

Precedence: defaults < environment (ASYNC_TRIGGERS_*) < command-line flags; for the connection options,
defaults < cqlshrc file < environment < flags (async_triggers.connection).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from . import connection as connection_mod
from .connection import Connection
from .errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]   # pycontrol/async_triggers/config.py
CASSANDRA_VERSION = "5.0.9"
PLUGIN_JAR = "async-triggers-plugin.jar"
# The Prometheus JMX exporter beside the plugin: Maven copies the agent into trigger-plugin/target/dist-lib/ when it
# builds the plugin, its config lives in trigger-plugin/dist/metrics/. Each local node serves its metrics on its
# own address at this port (ccm: 7000 storage, 7100+ JMX, 9042 CQL).
METRICS_EXPORTER_JAR = "jmx_prometheus_javaagent.jar"
METRICS_EXPORTER_CONFIG = "prometheus-jmx.yaml"
METRICS_PORT = 7070


@dataclasses.dataclass(frozen=True)
class Settings:
    home: Path                      # caches: install dirs, ccm config, spark jars
    cassandra_version: str = CASSANDRA_VERSION
    install_dir: Path | None = None  # an official binary distribution, if the user has one
    cluster_name: str = "atc"
    connection: Connection = Connection()   # hosts, port, auth, TLS: async_triggers.connection

    @property
    def contact_points(self) -> tuple[str, ...]:
        return self.connection.hosts

    @property
    def port(self) -> int:
        return self.connection.port

    def with_hosts(self, hosts, port: int | None = None) -> "Settings":
        """These settings pointed at other hosts (a cluster just started), keeping auth and TLS."""
        return dataclasses.replace(self, connection=connection_mod.with_hosts(self.connection, hosts, port))

    @property
    def ccm_dir(self) -> Path:
        return self.home / "ccm"

    @property
    def plugin_jar(self) -> Path:
        """The plugin as built: one jar, on every node's class path (``-javaagent:`` or lib/)."""
        return REPO_ROOT / "trigger-plugin" / "target" / PLUGIN_JAR


def load(connection_flags=None, **flags) -> Settings:
    """Build the settings: defaults, then ASYNC_TRIGGERS_* environment, then non-None flags.
    ``connection_flags`` are the connection options given as flags (async_triggers.connection.resolve);
    ``contact_points=`` is still accepted for them."""
    env = os.environ
    conn_flags = dict(connection_flags or {})
    contact_points = flags.pop("contact_points", None)
    if contact_points is not None and conn_flags.get("hosts") is None:
        conn_flags["hosts"] = ",".join(contact_points) if not isinstance(contact_points, str) else contact_points
    values: dict = {
        "home": Path(env.get("ASYNC_TRIGGERS_HOME", Path.home() / ".cache" / "async-triggers")),
        "cassandra_version": env.get("ASYNC_TRIGGERS_CASSANDRA_VERSION", CASSANDRA_VERSION),
        "cluster_name": env.get("ASYNC_TRIGGERS_CLUSTER", "atc"),
    }
    if env.get("ASYNC_TRIGGERS_INSTALL_DIR"):
        values["install_dir"] = Path(env["ASYNC_TRIGGERS_INSTALL_DIR"])
    for key, value in flags.items():
        if value is None:
            continue
        if key not in {f.name for f in dataclasses.fields(Settings)}:
            raise ConfigError(f"unknown setting '{key}'")
        values[key] = value
    if "home" in values:
        values["home"] = Path(values["home"]).expanduser()
    if values.get("install_dir") is not None:
        values["install_dir"] = Path(values["install_dir"]).expanduser().resolve()
    if "connection" not in values:
        values["connection"] = connection_mod.resolve(conn_flags, env)
    return Settings(**values)
