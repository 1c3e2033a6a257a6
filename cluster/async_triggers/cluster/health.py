"""Is a node up: its process, its CQL port, an actual CQL query (Python driver), its peers."""
from __future__ import annotations

import logging
import socket
import time
from typing import Callable, Iterable

import psutil

from async_triggers.errors import ClusterError

Progress = Callable[[str], None]


def process_alive(pid: int | None) -> bool:
    """True when the process exists and is not a zombie (where PID 1 does not reap, dead JVMs linger as zombies)."""
    if not pid:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def port_open(address: str, port: int = 9042, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def cql_query(address: str, query: str, port: int = 9042, timeout: float = 5.0) -> list[tuple]:
    """Run one query against exactly one node (no other host is contacted). Raises the driver's errors."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([address]), request_timeout=timeout)
    cluster = Cluster([address], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=timeout, control_connection_timeout=timeout,
                      protocol_version=5)
    try:
        session = cluster.connect()
        return [tuple(r) for r in session.execute(query)]
    finally:
        cluster.shutdown()


def _quiet_driver():
    # the driver logs every refused connection at WARNING/ERROR while a node is still starting
    for name in ("cassandra", "cassandra.cluster", "cassandra.connection", "cassandra.pool"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def wait_for_cql(addresses: Iterable[str], timeout: float = 180.0, port: int = 9042,
                 progress: Progress | None = None,
                 still_alive: Callable[[str], str | None] | None = None) -> None:
    """Poll until every address answers `SELECT release_version FROM system.local` over CQL.

    still_alive(address) may return an error message when the node's process is gone: the wait then fails at
    once instead of running into the timeout. Raises ClusterError naming the nodes that did not answer."""
    _quiet_driver()
    pending = list(dict.fromkeys(addresses))
    deadline = time.monotonic() + timeout
    last_error: dict[str, str] = {}
    while pending:
        for address in list(pending):
            if still_alive is not None:
                dead = still_alive(address)
                if dead:
                    raise ClusterError(dead)
            if not port_open(address, port):
                last_error[address] = f"port {port} closed"
                continue
            try:
                cql_query(address, "SELECT release_version FROM system.local", port=port)
            except Exception as e:  # the driver raises many types (NoHostAvailable, OperationTimedOut...)
                last_error[address] = f"{type(e).__name__}: {e}"
                continue
            pending.remove(address)
            if progress:
                progress(f"{address} answers CQL")
        if not pending:
            return
        if time.monotonic() > deadline:
            details = "; ".join(f"{a}: {last_error.get(a, '?')}" for a in pending)
            raise ClusterError(f"no CQL answer within {timeout:.0f}s from {', '.join(pending)} ({details})")
        time.sleep(1.0)


def wait_for_peers(addresses: list[str], timeout: float = 120.0, port: int = 9042) -> None:
    """Poll until each node lists every other one in system.peers_v2 (gossip has met them all)."""
    _quiet_driver()
    deadline = time.monotonic() + timeout
    want = set(addresses)
    while True:
        missing = {}
        for address in addresses:
            try:
                peers = {r[0] for r in cql_query(address, "SELECT peer FROM system.peers_v2", port=port)}
            except Exception as e:
                missing[address] = f"{type(e).__name__}"
                continue
            lacking = want - {address} - {str(p) for p in peers}
            if lacking:
                missing[address] = "does not know " + ", ".join(sorted(lacking))
        if not missing:
            return
        if time.monotonic() > deadline:
            raise ClusterError("nodes did not see each other within "
                               f"{timeout:.0f}s: " + "; ".join(f"{a} {m}" for a, m in missing.items()))
        time.sleep(1.0)
