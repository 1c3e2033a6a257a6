"""Connections to a live cluster through the Python driver (how to connect: async_triggers.connection)."""
from __future__ import annotations

import contextlib
import logging
from typing import Iterator

from cassandra import AuthenticationFailed, UnresolvableContactPoints
from cassandra.cluster import NoHostAvailable, Session

from . import connection as connection_mod, connection_clients
from .errors import ConnectionFailed

# The driver logs every failed connection attempt at WARNING; our own errors say what went wrong.
logging.getLogger("cassandra").setLevel(logging.ERROR)
# --verbose: where each connection option came from and the data center chosen, at INFO; the command line shows them
# (cli/options.py), a library caller decides with its own logging
LOG = logging.getLogger("async_triggers.connection")


@contextlib.contextmanager
def connect(settings, keyspace: str | None = None, timeout: float = 30.0) -> Iterator[Session]:
    """A session on the cluster ``settings`` names: a Settings (its ``connection``) or a Connection. Asks for the
    password on a terminal when a username has none (connection.with_password)."""
    conn = connection_mod.with_password(getattr(settings, "connection", settings))
    if conn.verbose:
        for line in conn.describe():
            LOG.info("%s", line)
    try:
        cluster = connection_clients.make_cluster(conn)
    except UnresolvableContactPoints:   # the driver's message is the empty dict of what it resolved
        raise ConnectionFailed(f"no address for the contact point(s) {', '.join(conn.hosts)}: DNS does not know "
                               "the host name (check --hosts, ASYNC_TRIGGERS_HOSTS or cqlshrc)") from None
    try:
        try:
            session = cluster.connect(keyspace)
        except NoHostAvailable as e:
            raise ConnectionFailed(f"cannot reach Cassandra at {conn.where()} (start a cluster with 'ctl cluster "
                                   f"up'): {_reasons(e)}") from None
        except AuthenticationFailed as e:
            raise ConnectionFailed(f"Cassandra at {conn.where()} refused user '{conn.username}': {e}") from None
        if conn.verbose:
            dc = connection_clients.chosen_dc(cluster)
            how = "given" if conn.local_dc else "chosen by the driver"
            LOG.info("local data center %s (%s)", dc, how)
        session.default_timeout = timeout
        yield session
    finally:
        cluster.shutdown()


def _reasons(e: NoHostAvailable) -> str:
    """The driver's per-host errors, one per host (they never hold the password: auth errors carry the server's
    message only)."""
    errors = getattr(e, "errors", None) or {}
    if not errors:
        return str(e)
    return "; ".join(f"{host}: {type(err).__name__}: {err}" for host, err in errors.items())
