"""Network partitions between the nodes of a local cluster, for the fault campaign's nemeses.

Every node of a ccm cluster listens on its own loopback address (127.0.0.N), but the kernel gives every outbound
connection the source address 127.0.0.1: a packet from node2 to node3 looks like one from node1. So a rule cannot
name its sender by address. It names it by **cgroup**: each node's JVM is moved, right after it starts (seconds
before it opens its first connection to another node), into a cgroup of its own under the cgroup v2 hierarchy
(``async-triggers/<cluster>/<node>``), and the rules match the sending socket's cgroup (iptables' ``cgroup``
match in the OUTPUT chain). A connection opened before its JVM was moved is matched by its own address and port.

A *link* ``(sender, receiver)`` cut drops every TCP packet the sender's JVM sends to the receiver's storage port:
Cassandra sends each message, a response too, over the sending node's own outbound connection, so cutting one
direction is an asymmetric partition and cutting both isolates the pair. The client port (9042) and JMX are never
touched: clients, nodetool and the plugin's status reads keep working, as in a partition between data centers.

Rules live in one chain of their own (``ASYNC_TRIGGERS``), jumped to from OUTPUT; ``heal()`` empties it.
Needs root, iptables (``make netfilter``) and a cgroup v2 hierarchy; without them a partition is refused with
the reason, and nodes still start (the move is skipped).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

from async_triggers.errors import ClusterError

CHAIN = "ASYNC_TRIGGERS"
CGROUP_PARENT = "async-triggers"


def cgroup2_root() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1), or None."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def cgroup_path(cluster: str, node: str) -> str:
    """The node's cgroup, relative to the cgroup v2 root (what iptables' ``--path`` takes)."""
    return f"{CGROUP_PARENT}/{cluster}/{node}"


def confine(cluster: str, node: str, pid: int | None) -> bool:
    """Move a node's JVM into its own cgroup; False (and nothing done) where that cannot be done here."""
    root = cgroup2_root()
    if pid is None or root is None or os.geteuid() != 0:
        return False
    folder = root / cgroup_path(cluster, node)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cgroup.procs").write_text(f"{pid}\n")
    except OSError:
        return False
    return True


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    argv = ["iptables", "-w", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise ClusterError(f"{' '.join(argv)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


def require() -> None:
    """Refuse, with the reason, where partitions cannot be made."""
    if os.geteuid() != 0:
        raise ClusterError("network partitions need root (iptables rules on the loopback interface)")
    if shutil.which("iptables") is None:
        raise ClusterError("network partitions need iptables: `make netfilter` installs it (Debian's package)")
    if cgroup2_root() is None:
        raise ClusterError("network partitions need a cgroup v2 hierarchy (none mounted: /proc/mounts)")
    if shutil.which("ss") is None:
        raise ClusterError("network partitions need ss (iproute2) to find the connections a node already has open")
    (cgroup2_root() / CGROUP_PARENT).mkdir(exist_ok=True)
    _ensure_chain()
    probe = ["-m", "cgroup", "--path", CGROUP_PARENT, "-j", "RETURN"]
    if _iptables("-A", CHAIN, *probe, check=False).returncode != 0:
        raise ClusterError("network partitions need iptables' cgroup match (xt_cgroup), which this kernel refuses")
    _iptables("-D", CHAIN, *probe, check=False)


def _ensure_chain() -> None:
    if _iptables("-n", "-L", CHAIN, check=False).returncode != 0:
        _iptables("-N", CHAIN)
    if _iptables("-C", "OUTPUT", "-j", CHAIN, check=False).returncode != 0:
        _iptables("-I", "OUTPUT", "1", "-j", CHAIN)


def _open_sockets(pid: int, address: str, port: int) -> list[tuple[str, int]]:
    """(source address, source port) of the established connections the process has open to address:port."""
    done = subprocess.run(["ss", "-tnpH", "state", "established", "dst", f"{address}:{port}"],
                          capture_output=True, text=True, timeout=30)
    out = []
    for line in done.stdout.splitlines():
        if f"pid={pid}," not in line:
            continue
        fields = line.split()
        local = fields[2] if len(fields) > 3 else ""
        host, _, sport = local.rpartition(":")
        if sport.isdigit():
            out.append((host.strip("[]"), int(sport)))
    return out


def cut(cluster: str, links: Iterable[tuple[str, int | None, str, int]]) -> list[str]:
    """Drop what each sender sends to each receiver: links of (sender node, sender pid, receiver address,
    receiver storage port). Returns the rules added, as iptables arguments."""
    require()
    _ensure_chain()
    rules: list[str] = []
    for sender, pid, address, port in links:
        confine(cluster, sender, pid)
        spec = ["-p", "tcp", "-d", address, "--dport", str(port)]
        wanted = [[*spec, "-m", "cgroup", "--path", cgroup_path(cluster, sender)]]
        if pid is not None:
            wanted += [["-p", "tcp", "-s", src, "--sport", str(sport), "-d", address, "--dport", str(port)]
                       for src, sport in _open_sockets(pid, address, port)]
        for rule in wanted:
            _iptables("-A", CHAIN, *rule, "-j", "DROP")
            rules.append(" ".join(rule))
    return rules


def heal() -> None:
    """Remove every partition rule (the chain stays, empty). A no-op where no partition was ever made."""
    if shutil.which("iptables") is None or os.geteuid() != 0:
        return
    if _iptables("-n", "-L", CHAIN, check=False).returncode == 0:
        _iptables("-F", CHAIN)

