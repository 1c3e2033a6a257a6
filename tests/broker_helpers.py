"""A private RabbitMQ node for the ``broker`` tests (async_triggers.benchmarks.broker on free ports in a temporary directory),
and the fan-out writers the worker tests plug in: one in memory, one that hangs (run in a worker process that
the test kills before it acknowledges)."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from async_triggers.benchmarks import broker as broker_mod


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def require_broker() -> None:
    if not broker_mod.installed():
        pytest.skip("RabbitMQ is not installed: run 'make broker' (Debian's rabbitmq-server)")
    pytest.importorskip("pika", reason="pika is in the 'bench' extra: make bench-deps")


def private_broker(tmp_path_factory, nodename: str):
    """A private RabbitMQ node for a module's tests (a fixture's body: yields it started, stops it after)."""
    require_broker()
    node = broker_mod.Broker(private_config(tmp_path_factory.mktemp("rabbitmq") / "node", nodename=nodename))
    node.start()
    yield node
    node.stop()


def private_config(data_dir: Path, nodename: str = "attest-broker") -> broker_mod.BrokerConfig:
    amqp, dist, epmd = free_ports(3)
    return broker_mod.BrokerConfig(data_dir=data_dir, nodename=nodename, amqp_port=amqp, dist_port=dist,
                                   epmd_port=epmd)


class MemoryWriter:
    """Fans out into a list (what Cassandra's timelines would hold: one entry per tweet, with its row count)."""

    def __init__(self, fail_first: int = 0):
        self.written: list = []
        self.fail_first = fail_first
        self.lock = threading.Lock()

    def fan_out(self, tweet) -> int:
        with self.lock:
            if self.fail_first > 0:
                self.fail_first -= 1
                raise TimeoutError(f"write timeout for {tweet.tweet_id}")
            self.written.append(tweet)
        return 1 + tweet.author_id % 3


def hanging_writer(marker: str):
    """A writer that records the tweet it was handed in ``marker`` and never returns (its process is killed)."""
    class Hanging:
        def fan_out(self, tweet) -> int:
            Path(marker).write_text(str(tweet.tweet_id))
            while True:
                time.sleep(60)
    return Hanging()
