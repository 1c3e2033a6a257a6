"""Is the plugin on every node: what each node says about it over CQL.

A node started with the plugin's ``-javaagent:`` line announces it in system properties named ``cassandra.*``
(the agent sets them before Cassandra starts: trigger-plugin's ClassPathAgent), and Cassandra shows those in the
node-local virtual table ``system_views.system_properties``. Virtual tables answer for the node that serves the
query, so each node is asked on its own (the driver's ``host=``). Nothing else is needed: no JMX, no shell on the node.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Iterable

from cassandra.query import SimpleStatement

from .errors import DeployError

VERSION = "cassandra.async_triggers.version"
SHA256 = "cassandra.async_triggers.jar_sha256"
JAR = "cassandra.async_triggers.jar"
_PROPERTIES = (VERSION, SHA256, JAR)


@dataclasses.dataclass(frozen=True)
class NodePlugin:
    """One node's answer. state: 'loaded', 'missing' (the node answers without the plugin) or 'unreachable'."""
    address: str
    datacenter: str | None
    rack: str | None
    state: str
    version: str | None = None
    jar_sha256: str | None = None
    jar: str | None = None
    error: str | None = None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class PluginReport:
    nodes: list[NodePlugin]

    @property
    def builds(self) -> set[tuple[str | None, str | None]]:
        return {(n.version, n.jar_sha256) for n in self.nodes if n.state == "loaded"}

    @property
    def problems(self) -> list[str]:
        """What an operator must fix before flows run everywhere; empty when every node runs one build."""
        out = [f"{n.address} ({n.datacenter}): the plugin is not loaded (no -javaagent line, or the node was not "
               "restarted after adding it)" for n in self.nodes if n.state == "missing"]
        out += [f"{n.address} ({n.datacenter}): cannot ask it ({n.error})" for n in self.nodes if n.state == "unreachable"]
        if len(self.builds) > 1:
            seen = ", ".join(f"{n.address}={n.version}/{(n.jar_sha256 or '?')[:12]}" for n in self.nodes if n.state == "loaded")
            out.append(f"the nodes run different builds of the plugin: {seen}")
        return out

    def as_dict(self) -> dict:
        return {"nodes": [n.as_dict() for n in self.nodes], "same_build": len(self.builds) <= 1,
                "problems": self.problems}


def _ask(session, host, timeout: float) -> NodePlugin:
    where = dict(address=str(host.address), datacenter=host.datacenter, rack=host.rack)
    # a node of a data center the load balancing ignores has no state in the driver (is_up None): ask it anyway
    if host.is_up is False:
        return NodePlugin(state="unreachable", error="the driver sees it down", **where)
    try:
        props = _properties(session, host, timeout)
    except Exception as e:  # one node's failure is part of the report, not the end of it
        return NodePlugin(state="unreachable", error=f"{type(e).__name__}: {e}", **where)
    # the virtual table answers a name it does not know with a row holding null
    if props.get(VERSION) is None:
        return NodePlugin(state="missing", **where)
    return NodePlugin(state="loaded", version=props[VERSION], jar_sha256=props.get(SHA256), jar=props.get(JAR), **where)


_QUERY = "SELECT name, value FROM system_views.system_properties WHERE name IN (%s, %s, %s)"


def _properties(session, host, timeout: float) -> dict:
    """The node's answer, through the session when it keeps a pool to the node, else (a node of another data center
    than the local one, which the load balancing ignores) through a connection of its own to that node alone, made
    like the session's (port, credentials, TLS, protocol)."""
    from cassandra.cluster import Cluster
    from cassandra.policies import HostDistance, WhiteListRoundRobinPolicy

    if session.cluster.profile_manager.distance(host) != HostDistance.IGNORED:
        return _retrying(lambda: session.execute(SimpleStatement(_QUERY), _PROPERTIES, host=host, timeout=timeout),
                         timeout)
    c = session.cluster
    own = Cluster([host.endpoint.address], port=c.port, auth_provider=c.auth_provider, ssl_context=c.ssl_context,
                  ssl_options=c.ssl_options, protocol_version=c.protocol_version, connect_timeout=timeout,
                  load_balancing_policy=WhiteListRoundRobinPolicy([host.endpoint.address]))
    try:
        one = own.connect()
        return _retrying(lambda: one.execute(SimpleStatement(_QUERY), _PROPERTIES, timeout=timeout), timeout)
    finally:
        own.shutdown()


def _retrying(ask, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return {r.name: r.value for r in ask()}
        except Exception:
            # right after connecting, the driver may still be opening its pool to this host ("marked down")
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def check(session, timeout: float = 10.0) -> PluginReport:
    """Ask every node the driver knows of (all data centers), in address order."""
    hosts: Iterable = sorted(session.cluster.metadata.all_hosts(), key=lambda h: (h.datacenter or "", str(h.address)))
    return PluginReport([_ask(session, h, timeout) for h in hosts])


def require_everywhere(session) -> PluginReport:
    """Refuse (DeployError) unless every node runs the plugin, one build: a flow deployed where a replica lacks it
    would lose that replica's tasks (it would store writes without recording them)."""
    report = check(session)
    if report.problems:
        raise DeployError("the plugin must run on every node before a flow is deployed:\n  "
                          + "\n  ".join(report.problems)
                          + "\ninstall it as the bundle's INSTALL.md says, then check with `ctl plugin check`")
    return report
