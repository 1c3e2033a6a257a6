"""Connections to a live cluster through the Python driver."""
from __future__ import annotations

import contextlib
import logging
from typing import Iterator

from cassandra.cluster import Cluster, NoHostAvailable, Session
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

from .config import Settings
from .errors import ClusterError

# The driver logs every failed connection attempt at WARNING; our own errors say what went wrong.
logging.getLogger("cassandra").setLevel(logging.ERROR)


@contextlib.contextmanager
def connect(settings: Settings, keyspace: str | None = None, timeout: float = 30.0) -> Iterator[Session]:
    cluster = Cluster(list(settings.contact_points), port=settings.port, connect_timeout=10,
                      load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
                      control_connection_timeout=10)
    try:
        try:
            session = cluster.connect(keyspace)
        except NoHostAvailable as e:
            where = ", ".join(f"{h}:{settings.port}" for h in settings.contact_points)
            raise ClusterError(f"cannot reach Cassandra at {where} (start a cluster with 'ctl cluster up'): "
                               f"{e}") from e
        session.default_timeout = timeout
        yield session
    finally:
        cluster.shutdown()


def live_nodes(session: Session) -> int:
    return sum(1 for h in session.cluster.metadata.all_hosts() if h.is_up)
