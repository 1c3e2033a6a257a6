# Over 400 lines: one private RabbitMQ node's whole life (config, start, stop, its CLI) reads best in one place.
"""A private RabbitMQ node for the external-queue baseline, from Debian's ``rabbitmq-server`` (``make broker``).

    python -m async_triggers.benchmarks.broker start|stop|status [--amqp-port 35672] [--nodename async-triggers-bench]

The node is the benchmark's own: its own node name, its own ports (AMQP, Erlang distribution and a private
``epmd``, all on 127.0.0.1), its own data, logs, configuration and Erlang cookie under
``$ASYNC_TRIGGERS_HOME/rabbitmq/<nodename>/`` (default ``~/.cache/async-triggers/rabbitmq/...``). It never reads
``/etc/rabbitmq`` or ``/var/lib/rabbitmq`` and needs no service manager (the machine's PID 1 manages none): the
processes are children of whoever called :meth:`Broker.start`, in a session of their own, and their pids are
written beside the data so :meth:`Broker.stop` from another process stops exactly them.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from async_triggers.benchmarks.errors import BrokerError  # noqa: E402

RABBITMQ_SCRIPTS = Path("/usr/lib/rabbitmq/bin")   # Debian's package: the real scripts, not the su wrappers
DEFAULT_NODENAME = "async-triggers-bench"
DEFAULT_AMQP_PORT = 35672
DEFAULT_DIST_PORT = 35682
DEFAULT_EPMD_PORT = 35669
AMQP_HEADER = b"AMQP\x00\x00\x09\x01"               # protocol header of AMQP 0-9-1
_NODENAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def default_home() -> Path:
    """``$ASYNC_TRIGGERS_HOME``, else ``~/.cache/async-triggers`` (the same rule as ``async_triggers.config``)."""
    return Path(os.environ.get("ASYNC_TRIGGERS_HOME", Path.home() / ".cache" / "async-triggers")).expanduser()


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    data_dir: Path
    nodename: str = DEFAULT_NODENAME
    host: str = "127.0.0.1"
    amqp_port: int = DEFAULT_AMQP_PORT
    dist_port: int = DEFAULT_DIST_PORT
    epmd_port: int = DEFAULT_EPMD_PORT
    scripts_dir: Path = RABBITMQ_SCRIPTS
    extra_conf: tuple[str, ...] = ()    # more rabbitmq.conf lines (e.g. memory or disk limits for a run)

    @property
    def node(self) -> str:
        return f"{self.nodename}@localhost"

    @property
    def url(self) -> str:
        """The AMQP URL of the node (RabbitMQ's ``guest`` user may log in over the loopback interface only)."""
        return f"amqp://guest:guest@{self.host}:{self.amqp_port}/%2F"

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "log"

    @property
    def startup_log(self) -> Path:
        return self.log_dir / "startup.log"

    def validate(self) -> None:
        if not _NODENAME.match(self.nodename):
            raise BrokerError(f"'nodename' must be 1 to 64 letters, digits, '_' or '-', found: {self.nodename!r}")
        ports = {"amqp_port": self.amqp_port, "dist_port": self.dist_port, "epmd_port": self.epmd_port}
        for name, port in ports.items():
            if not isinstance(port, int) or not 1 <= port <= 65535:
                raise BrokerError(f"'{name}' must be a port number between 1 and 65535, found: {port!r}")
        if len(set(ports.values())) != len(ports):
            raise BrokerError(f"the broker's ports must differ, found: {ports}")


def default_config(home: Path | None = None, nodename: str = DEFAULT_NODENAME, **overrides) -> BrokerConfig:
    """The benchmarks' node: data under ``<home>/rabbitmq/<nodename>``, the default ports unless overridden."""
    data_dir = Path(home or default_home()) / "rabbitmq" / nodename
    return BrokerConfig(data_dir=data_dir, nodename=nodename, **overrides)


def installed(scripts_dir: Path = RABBITMQ_SCRIPTS) -> bool:
    return (scripts_dir / "rabbitmq-server").is_file() and shutil.which("epmd") is not None


def amqp_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when an AMQP 0-9-1 broker answers the protocol header with ``Connection.Start`` (a method frame on
    channel 0). RabbitMQ opens its listener at the end of its boot, so this means the node is ready."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(AMQP_HEADER)
            head = b""
            while len(head) < 7:
                chunk = s.recv(7 - len(head))
                if not chunk:
                    return False
                head += chunk
            return head[0] == 1 and head[1:3] == b"\x00\x00"
    except OSError:
        return False


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:  # a zombie has exited: it only waits for its parent to reap it
        return stat.read_text().split(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _excerpt(path: Path, first_errors: int = 8, last: int = 5) -> str:
    """What a failed start left in its log: the first error lines (RabbitMQ states the cause first, then pages
    of Erlang crash reports) and the last lines."""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"(no log at {path})"
    errors = [line for line in lines if "[error]" in line and line.split("[error]", 1)[1].strip("<>.0123456789 ")]
    shown = errors[:first_errors]
    tail = [line for line in lines[-last:] if line not in shown]
    return "\n".join(shown + (["..."] if shown and tail else []) + tail)


class Broker:
    """Start, check and stop the private node described by a :class:`BrokerConfig`.

    ``start`` returns once the node answers AMQP; it reuses the node when the pids written by an earlier
    ``start`` are still this node's and it answers. ``stop`` stops the node gracefully (``rabbitmqctl stop``),
    then by signal to the process group it started if that did not work, and its ``epmd``.
    """

    def __init__(self, config: BrokerConfig, progress: Callable[[str], None] | None = None):
        config.validate()
        self.config = config
        self._progress = progress or (lambda msg: None)
        self._children: dict[str, subprocess.Popen] = {}

    # -- files --------------------------------------------------------------------------------------------------
    def _pid_file(self, what: str) -> Path:
        return self.config.data_dir / f"{what}.pid"

    def _read_pid(self, what: str) -> int | None:
        """The pid written by ``start``, if that process still lives and is still this node's (pids are reused)."""
        try:
            pid = int(self._pid_file(what).read_text().strip())
        except (OSError, ValueError):
            return None
        if not _alive(pid):
            return None
        if what == "epmd":
            return pid if f"-port {self.config.epmd_port}" in _cmdline(pid) else None
        return pid if self._beam(pid) is not None else None

    def _beam(self, pgid: int) -> int | None:
        """The Erlang VM in the process group of the server's start script: the one whose home is our data dir
        (RabbitMQ sets its node name after the VM started, so the command line does not carry it)."""
        marker = f"-home {self.config.data_dir} "
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                fields = (proc / "stat").read_text().split(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and marker in _cmdline(int(proc.name)) + " ":
                return int(proc.name)
        return None

    def environment(self) -> dict[str, str]:
        """The environment of every RabbitMQ/Erlang process of this node, ``rabbitmqctl`` included: nothing of a
        system-wide installation (``/etc/rabbitmq``, ``/var/lib/rabbitmq``, the default cookie) is used."""
        c, d = self.config, self.config.data_dir
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        env.update({
            "HOME": str(d),                              # the Erlang cookie lives in $HOME/.erlang.cookie
            "RABBITMQ_NODENAME": c.node,
            "RABBITMQ_NODE_IP_ADDRESS": c.host,
            "RABBITMQ_NODE_PORT": str(c.amqp_port),
            "RABBITMQ_DIST_PORT": str(c.dist_port),
            "ERL_EPMD_PORT": str(c.epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_CONF_ENV_FILE": str(d / "rabbitmq-env.conf"),
            "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(d / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(d / "mnesia"),
            "RABBITMQ_LOG_BASE": str(c.log_dir),
            "RABBITMQ_LOGS": str(c.log_dir / f"{c.nodename}.log"),
            # our epmd runs before the node: neither the node nor rabbitmqctl may start a daemon of their own
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-start_epmd false",
            "RABBITMQ_CTL_ERL_ARGS": "-start_epmd false",
        })
        return env

    def _write_config(self) -> None:
        c, d = self.config, self.config.data_dir
        for sub in (d, c.log_dir, d / "mnesia"):
            sub.mkdir(parents=True, exist_ok=True)
        (d / "rabbitmq-env.conf").write_text("# the benchmark's node takes its settings from its environment\n")
        (d / "rabbitmq.conf").write_text(
            "# written by benchmarks/async_triggers/benchmarks/broker.py\n"
            f"listeners.tcp.default = {c.host}:{c.amqp_port}\n"
            "loopback_users.guest = true\n"
            "log.console = false\n"
            "log.file.level = info\n"
            # the node shares a small disk with Cassandra: do not block publishers at RabbitMQ's 50 MB default
            "disk_free_limit.absolute = 20MB\n"
            + "".join(f"{line}\n" for line in c.extra_conf))
        (d / "advanced.config").write_text("[].\n")
        (d / "enabled_plugins").write_text("[].\n")          # no management plugin: one more port, no use here

    # -- state --------------------------------------------------------------------------------------------------
    def running(self) -> bool:
        """True when this node's server process lives and the node answers AMQP on its port."""
        return self._read_pid("server") is not None and amqp_answers(self.config.host, self.config.amqp_port)

    def pids(self) -> dict[str, int]:
        """The node's processes, for resource measurement: ``server`` (the start script, leader of the process
        group), ``beam`` (the Erlang VM: the broker itself) and ``epmd``; empty when the node is not running."""
        found = {what: pid for what in ("server", "epmd") if (pid := self._read_pid(what)) is not None}
        if "server" in found and (beam := self._beam(found["server"])) is not None:
            found["beam"] = beam
        return found

    # -- start --------------------------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> "Broker":
        c = self.config
        if not installed(c.scripts_dir):
            raise BrokerError(f"RabbitMQ is not installed ({c.scripts_dir / 'rabbitmq-server'} or epmd is "
                              "missing): run 'make broker' (Debian's rabbitmq-server package)")
        if self.running():
            self._progress(f"broker {c.node} is already running on {c.host}:{c.amqp_port}")
            return self
        if self._read_pid("server") is not None:
            raise BrokerError(f"broker {c.node} has a server process (pid {self._read_pid('server')}) that does "
                              f"not answer AMQP on {c.host}:{c.amqp_port}: stop it first "
                              f"(python -m async_triggers.benchmarks.broker stop); its log: {c.startup_log}")
        for what, port in (("AMQP", c.amqp_port), ("Erlang distribution", c.dist_port)):
            if not port_free(c.host, port):
                raise BrokerError(f"port {port} ({what}) on {c.host} is taken by another process: give the "
                                  "benchmark's broker other ports (--amqp-port, --dist-port)")
        self._write_config()
        epmd_pid = self._read_pid("epmd")
        if epmd_pid is None:
            if not port_free("127.0.0.1", c.epmd_port):
                raise BrokerError(f"port {c.epmd_port} (epmd) on 127.0.0.1 is taken by another process: give "
                                  "the benchmark's broker another one (--epmd-port)")
            self._spawn("epmd", [shutil.which("epmd"), "-port", str(c.epmd_port), "-address", "127.0.0.1"],
                        c.log_dir / "epmd.log")
            self._wait_for(lambda: _listening("127.0.0.1", c.epmd_port), 10.0, "epmd",
                           f"epmd did not listen on 127.0.0.1:{c.epmd_port}", c.log_dir / "epmd.log")
        self._progress(f"starting broker {c.node} on {c.host}:{c.amqp_port} (data in {c.data_dir})")
        started = time.monotonic()
        self._spawn("server", [str(c.scripts_dir / "rabbitmq-server")], c.startup_log)
        self._wait_for(lambda: amqp_answers(c.host, c.amqp_port), timeout, "server",
                       f"broker {c.node} did not answer AMQP on {c.host}:{c.amqp_port}",
                       c.startup_log)
        self._progress(f"broker {c.node} is up in {time.monotonic() - started:.1f} s")
        return self

    def _spawn(self, what: str, argv: list[str], log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, env=self.environment(), cwd=self.config.data_dir, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._children[what] = proc
        self._pid_file(what).write_text(f"{proc.pid}\n")

    def _wait_for(self, ready: Callable[[], bool], timeout: float, what: str, message: str, log: Path) -> None:
        deadline = time.monotonic() + timeout
        proc = self._children[what]
        while time.monotonic() < deadline:
            if ready():
                return
            if proc.poll() is not None:
                self._stop_started()
                raise BrokerError(f"{message}: {what} exited during its start (code {proc.returncode}); from "
                                  f"{log}:\n{_excerpt(log)}")
            time.sleep(0.2)
        self._stop_started()
        raise BrokerError(f"{message} within {timeout:.0f} s; from {log}:\n{_excerpt(log)}")

    def _stop_started(self) -> None:
        for what in ("server", "epmd"):
            proc = self._children.pop(what, None)
            if proc is not None and proc.poll() is None:
                self._signal_group(proc.pid, signal.SIGKILL)
                proc.wait(10)
            self._pid_file(what).unlink(missing_ok=True)

    # -- stop ---------------------------------------------------------------------------------------------------
    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the node and its epmd; False when nothing of this node was running."""
        c = self.config
        server, epmd = self._read_pid("server"), self._read_pid("epmd")
        if server is None and epmd is None:
            for what in ("server", "epmd"):
                self._pid_file(what).unlink(missing_ok=True)
            return False
        if server is not None:
            self._progress(f"stopping broker {c.node}")
            ctl = [str(c.scripts_dir / "rabbitmqctl"), "-n", c.node, "stop"]
            try:
                subprocess.run(ctl, env=self.environment(), cwd=c.data_dir, capture_output=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                pass
            if not self._await_exit("server", server, timeout / 2):
                self._signal_group(server, signal.SIGTERM)
                if not self._await_exit("server", server, timeout / 2):
                    self._signal_group(server, signal.SIGKILL)
                    if not self._await_exit("server", server, 10):
                        raise BrokerError(f"broker {c.node} (process group {server}) did not stop")
        if epmd is not None:
            self._signal_group(epmd, signal.SIGTERM)
            if not self._await_exit("epmd", epmd, 10):
                self._signal_group(epmd, signal.SIGKILL)
                self._await_exit("epmd", epmd, 5)
        for what in ("server", "epmd"):
            self._pid_file(what).unlink(missing_ok=True)
        self._progress(f"broker {c.node} stopped")
        return True

    def _await_exit(self, what: str, pid: int, timeout: float) -> bool:
        proc = self._children.get(what)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.pid == pid:
                if proc.poll() is not None:
                    self._children.pop(what, None)
                    return True
            elif not _alive(pid):
                return True
            time.sleep(0.1)
        return False

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)  # the group of a process we started in a session of its own
        except ProcessLookupError:
            pass

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.benchmarks.broker", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("start", "stop", "status"))
    p.add_argument("--home", type=Path, default=None, help="default: $ASYNC_TRIGGERS_HOME or ~/.cache/async-triggers")
    p.add_argument("--nodename", default=DEFAULT_NODENAME)
    p.add_argument("--amqp-port", type=int, default=DEFAULT_AMQP_PORT)
    p.add_argument("--dist-port", type=int, default=DEFAULT_DIST_PORT)
    p.add_argument("--epmd-port", type=int, default=DEFAULT_EPMD_PORT)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    say = lambda msg: print(f"-- {msg}", file=sys.stderr, flush=True)
    try:
        broker = Broker(default_config(args.home, args.nodename, amqp_port=args.amqp_port,
                                       dist_port=args.dist_port, epmd_port=args.epmd_port), progress=say)
        if args.action == "start":
            broker.start()
            print(broker.config.url)
        elif args.action == "stop":
            if not broker.stop():
                say(f"broker {broker.config.node} was not running")
        else:
            up = broker.running()
            print(f"{broker.config.node} {'running' if up else 'stopped'} {broker.config.url} "
                  f"{' '.join(f'{k}={v}' for k, v in broker.pids().items())}".rstrip())
            return 0 if up else 3
    except BrokerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
