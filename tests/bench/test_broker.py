"""async_triggers.benchmarks.broker: a private RabbitMQ node from Debian's package, started and stopped by the benchmarks (marker
``broker`` for the tests that start one); its options and errors without one."""
from __future__ import annotations

import dataclasses

import pytest

from async_triggers.benchmarks import broker as broker_mod
from async_triggers.benchmarks.broker import Broker, BrokerConfig
from async_triggers.benchmarks.errors import BrokerError
from broker_helpers import free_ports, private_config, require_broker


@pytest.mark.parametrize("overrides, message", [
    (dict(nodename="bad name"), "'nodename' must be 1 to 64 letters, digits, '_' or '-', found: 'bad name'"),
    (dict(amqp_port=0), "'amqp_port' must be a port number between 1 and 65535, found: 0"),
    (dict(epmd_port=70000), "'epmd_port' must be a port number between 1 and 65535, found: 70000"),
    (dict(amqp_port=5000, dist_port=5000), "the broker's ports must differ, found: "),
])
def test_should_check_broker_options_with_exact_messages(tmp_path, overrides, message):
    with pytest.raises(BrokerError) as e:
        Broker(BrokerConfig(data_dir=tmp_path, **overrides))
    assert str(e.value).startswith(message)


def test_should_keep_the_default_broker_node_under_the_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ASYNC_TRIGGERS_HOME", str(tmp_path))
    config = broker_mod.default_config()
    assert config.data_dir == tmp_path / "rabbitmq" / "async-triggers-bench"
    assert config.node == "async-triggers-bench@localhost"
    assert config.url == "amqp://guest:guest@127.0.0.1:35672/%2F"


def test_should_use_nothing_of_a_system_rabbitmq_installation(tmp_path, monkeypatch):
    monkeypatch.setenv("RABBITMQ_NODENAME", "rabbit@elsewhere")
    monkeypatch.setenv("ERL_EPMD_PORT", "4369")
    env = Broker(BrokerConfig(data_dir=tmp_path, amqp_port=1001, dist_port=1002, epmd_port=1003)).environment()
    assert env["RABBITMQ_NODENAME"] == "async-triggers-bench@localhost"
    assert env["ERL_EPMD_PORT"] == "1003" and env["RABBITMQ_NODE_PORT"] == "1001"
    assert env["HOME"] == str(tmp_path)                      # the Erlang cookie is the node's own
    paths = [v for k, v in env.items() if k.startswith("RABBITMQ_") and v.startswith("/")]
    assert paths and all(p.startswith(str(tmp_path)) for p in paths)


def test_should_say_how_to_install_a_missing_rabbitmq(tmp_path):
    broker = Broker(BrokerConfig(data_dir=tmp_path / "node", scripts_dir=tmp_path / "no-rabbitmq"))
    with pytest.raises(BrokerError, match=r"RabbitMQ is not installed \(.*no-rabbitmq/rabbitmq-server or epmd is "
                                          r"missing\): run 'make broker'"):
        broker.start()
    assert broker.stop() is False


def test_should_find_no_amqp_answer_on_a_closed_port():
    (port,) = free_ports(1)
    assert broker_mod.amqp_answers("127.0.0.1", port, timeout=0.5) is False


@pytest.mark.broker
def test_should_start_reuse_and_stop_a_private_broker_node(tmp_path):
    require_broker()
    config = private_config(tmp_path / "node")
    broker = Broker(config)
    try:
        broker.start()
        assert broker.running() and broker_mod.amqp_answers(config.host, config.amqp_port)
        pids = broker.pids()
        assert sorted(pids) == ["beam", "epmd", "server"]
        assert all(broker_mod._alive(pid) for pid in pids.values())
        assert (config.data_dir / ".erlang.cookie").is_file()
        assert any((config.data_dir / "mnesia").iterdir())           # its data is under its own directory
        # another process's view of the same node (pid files): it is running, start() reuses it
        other = Broker(config)
        assert other.running() and other.start().pids() == pids
    finally:
        assert broker.stop() is True
    assert not broker.running() and broker.pids() == {}
    assert all(not broker_mod._alive(pid) for pid in pids.values())
    assert broker_mod.port_free(config.host, config.amqp_port) and broker_mod.port_free("127.0.0.1", config.epmd_port)
    assert broker.stop() is False


@pytest.mark.broker
def test_should_name_a_taken_broker_port(tmp_path):
    require_broker()
    import socket
    config = private_config(tmp_path / "node")
    with socket.socket() as s:
        s.bind((config.host, config.amqp_port))
        s.listen()
        with pytest.raises(BrokerError, match=rf"port {config.amqp_port} \(AMQP\) on 127.0.0.1 is taken by another "
                                              r"process: give the benchmark's broker other ports"):
            Broker(config).start()
    assert not (config.data_dir / "server.pid").exists()


@pytest.mark.broker
def test_should_report_the_log_of_a_node_that_cannot_boot_and_leave_nothing_running(tmp_path):
    require_broker()
    # a configuration RabbitMQ rejects: the node exits during boot
    config = dataclasses.replace(private_config(tmp_path / "node"), extra_conf=("no_such_key = 1",))
    broker = Broker(config)
    with pytest.raises(BrokerError) as e:
        broker.start(timeout=90)
    assert str(e.value).startswith(f"broker attest-broker@localhost did not answer AMQP on 127.0.0.1:"
                                   f"{config.amqp_port}: server exited during its start (code ")
    # the cause, as RabbitMQ states it, is in the message
    assert "Conf file attempted to set unknown variable: no_such_key" in str(e.value)
    assert broker.pids() == {}
    assert broker_mod.port_free("127.0.0.1", config.epmd_port)
