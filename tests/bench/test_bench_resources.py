"""async_triggers.benchmarks.harness.resources on real processes and real loopback TCP: CPU seconds of a child that burns CPU, bytes of a
child that sends to a server in this process (counted from its socket's kernel counters via ``ss``), the window's
rules (what was there before the first sample, what came later), descendants, and ``ss -tinpH`` output as this
machine prints it."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from async_triggers.benchmarks import results
from async_triggers.benchmarks.errors import BenchError
from async_triggers.benchmarks.harness.resources import Sampler, cmdline_contains, descendants
from async_triggers.benchmarks.harness.tcp_counters import TcpCounters, TcpSocket, parse_ss, tcp_sockets
from async_triggers.spark_jobs.loadgen import Record

T0 = 1_700_000_000.0
MACHINE = {"cpu": "test cpu", "cores": 2, "memory_gb": 24.0, "os": "Linux", "python": "3.11"}

# A child that does its steps one by one: after each it prints the step and waits for a line on stdin, so the test
# decides when the next one starts (and the child stays alive, its socket open, until the test has sampled it).
CHILD = r"""
import socket, sys, time
conn = None
for step in sys.argv[1:]:
    what, arg = step.split(":")
    if what == "connect":
        conn = socket.create_connection(("127.0.0.1", int(arg)))
    elif what == "burn":
        start = time.process_time()
        while time.process_time() - start < float(arg):
            pass
    elif what == "send":
        conn.sendall(b"x" * int(arg))
    print(step, flush=True)
    sys.stdin.readline()
"""


class Child:
    def __init__(self, *steps: str):
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, *steps], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid

    def done(self, step: str) -> None:
        """Wait until the child has done ``step``."""
        line = self.proc.stdout.readline()
        assert line == step + "\n", f"child {self.pid} said {line!r}, expected {step!r}"

    def go(self) -> None:
        """Let the child go on with its next step (or exit after its last)."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


class Sink:
    """A TCP server on 127.0.0.1 in this process that reads and counts every byte sent to it."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received = 0
        self.changed = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn):
        with conn:
            while data := conn.recv(1 << 16):
                with self.changed:
                    self.received += len(data)
                    self.changed.notify_all()

    def wait_for(self, total: int, timeout: float = 10) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.received >= total, timeout), \
                f"the sink got {self.received} bytes, expected {total}"


@pytest.fixture()
def sink():
    s = Sink()
    yield s
    s.server.close()


@pytest.fixture()
def children():
    started: list[Child] = []

    def start(*steps: str) -> Child:
        started.append(Child(*steps))
        return started[-1]
    yield start
    for child in started:
        child.kill()


def a_run(resources_object: dict) -> dict:
    """A run in the results schema with these resources (summarise validates it)."""
    records = [Record(0, i, T0 + i, T0 + i, T0 + i + 0.002, "ok", False, None) for i in range(3)]
    return results.summarise(records, experiment="saturating", app="external_queue", db_nodes=2, duration_s=3.0,
                             throughput_msg_s=1.0, resources=resources_object, machine=MACHINE, commit="abc123")


def test_should_measure_cpu_memory_and_bytes_of_processes_started_during_the_window(sink, children):
    pids: dict[str, list[int]] = {"app": [], "queue": []}
    sampler = Sampler({"app": lambda: pids["app"], "queue": lambda: pids["queue"]}, interval_s=0.1)
    with sampler:
        time.sleep(0.2)
        burner = children("burn:0.5")
        sender = children(f"connect:{sink.port}", "send:5000000")
        pids["app"].append(burner.pid)
        pids["queue"].append(sender.pid)
        burner.done("burn:0.5")
        sender.done(f"connect:{sink.port}")
        sender.go()
        sender.done("send:5000000")
        sink.wait_for(5_000_000)
        time.sleep(0.3)                         # the children wait, alive: the last samples see their totals
    burner.go(), sender.go()
    res = sampler.result(messages=1000)
    assert set(res) == {"window_s", "messages", "app", "db", "queue"}
    assert res["messages"] == 1000 and res["window_s"] >= 0.5
    assert res["db"] is None                    # not a group of this sampler
    app, queue = res["app"], res["queue"]
    assert app["processes"] == 1 and queue["processes"] == 1
    # started after the first sample: counted from zero, the interpreter's start-up included
    assert 0.45 <= app["cpu_s"] < 1.5
    assert 0.002 < app["memory_gb"] < 1 and 0.002 < queue["memory_gb"] < 1     # a Python interpreter: ~10 MB
    assert app["net_bytes"] == 0
    # the sender's end of the connection: 5 MB out, nothing in; the sink's end is this process, no group's
    assert 5_000_000 <= queue["net_bytes"] < 10_000_000
    assert queue["cpu_s"] > 0
    run = a_run(res)
    results.validate(run)
    assert run["resources"] == res


def test_should_count_what_ran_before_the_window_from_the_first_sample(sink, children):
    worker = children(f"connect:{sink.port}", "send:1000000", "burn:0.4", "burn:0.3", "send:2000000")
    worker.done(f"connect:{sink.port}")
    for step in ("send:1000000", "burn:0.4"):
        worker.go()
        worker.done(step)
    sink.wait_for(1_000_000)
    sampler = Sampler({"app": lambda: [worker.pid], "db": lambda: []}, interval_s=0.1)
    with sampler:
        for step in ("burn:0.3", "send:2000000"):
            worker.go()
            worker.done(step)
        sink.wait_for(3_000_000)
        sampler.sample()                        # right before it goes: its final counters
    worker.go()
    res = sampler.result(messages=10)
    assert res["db"] is None and res["queue"] is None      # a group without pids, and no group at all
    app = res["app"]
    assert app["processes"] == 1
    assert 0.28 <= app["cpu_s"] < 0.6           # the 0.3 s in the window, not the 0.4 s before it
    # the socket's first 1 MB was before the window (counted, it would read 3 MB); some of its acknowledgements may
    # still be on their way at the first sample (seen: 2,130,966 on a loaded machine)
    assert 2_000_000 <= app["net_bytes"] < 2_500_000
    results.validate(a_run(res))


def test_should_follow_a_group_as_its_processes_come_and_go(children):
    first = children("burn:0.2")
    first.done("burn:0.2")
    current = [first.pid]
    with Sampler({"app": lambda: current}, interval_s=0.05) as sampler:
        first.go()
        first.proc.wait(10)                     # gone: a listed pid that no longer exists is skipped
        time.sleep(0.15)
        second = children("burn:0.3")
        current.append(second.pid)
        second.done("burn:0.3")
        time.sleep(0.15)
    res = sampler.result(messages=1)
    assert res["app"]["processes"] == 2
    assert 0.3 <= res["app"]["cpu_s"] < 1.0     # the second's burn (and start-up); the first burnt before


def test_should_find_the_descendants_of_a_process_tree(children):
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys\n"
        "wait = [sys.executable, '-c', 'import sys; sys.stdin.read()']\n"
        "a = subprocess.Popen(wait + ['pyspark-worker-marker'], stdin=subprocess.PIPE)\n"
        "b = subprocess.Popen(wait, stdin=subprocess.PIPE)\n"
        "print(a.pid, b.pid, flush=True)\n"
        "sys.stdin.read()\n"
        "a.stdin.close(); b.stdin.close(); a.wait(); b.wait()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        marked, other = map(int, parent.stdout.readline().split())
        assert descendants(parent.pid, cmdline_contains("pyspark-worker-marker")) == [marked]
        assert sorted(descendants(parent.pid)) == sorted([marked, other])
        assert descendants(parent.pid, lambda p: False) == []
    finally:
        parent.stdin.close()
        parent.wait(10)
    assert descendants(parent.pid) == []        # gone: nothing, not an error


# `ss -tinpH` on this machine (iproute2 6.1, Linux, BBR): a loopback connection 127.0.0.1 <-> 127.0.0.1 both of
# whose ends a fork shares (two users), one to 127.0.0.2 on a dual-stack listener (its far end v4-mapped), a
# half-closed one (CLOSE-WAIT, and its FIN-WAIT-2 end orphaned: no users, an empty info line). ss pads lines with
# spaces to its width; the padding is left out here (and put back in a test).
SS_SAMPLE = (
    'ESTAB      0      0               127.0.0.1:38603          127.0.0.1:44364 users:(("python3",pid=15023,fd=5),'
    '("python3",pid=14982,fd=5))\n'
    '\t bbr wscale:10,10 rto:204 rtt:0.028/0.016 ato:40 mss:38400 pmtu:65535 rcvmss:34518 advmss:65483 cwnd:11 '
    'bytes_sent:1234 bytes_acked:1234 bytes_received:100000 segs_out:3 segs_in:6 data_segs_out:1 data_segs_in:3 '
    'bbr:(bw:102399993896bps,mrtt:0.003,pacing_gain:2.88672,cwnd_gain:2.88672) send 120685714286bps lastsnd:316 '
    'lastrcv:316 lastack:316 pacing_rate 292643982552bps delivery_rate 102400000000bps delivered:2 app_limited '
    'rcv_rtt:0.028 rcv_space:65483 rcv_ssthresh:94833 minrtt:0.003 snd_wnd:76800\n'
    'ESTAB      0      0               127.0.0.1:51452          127.0.0.2:51753 users:(("python3",pid=15023,fd=7),'
    '("python3",pid=14982,fd=7))\n'
    '\t bbr wscale:10,10 rto:204 rtt:0.035/0.019 mss:50176 pmtu:65535 rcvmss:536 advmss:65483 cwnd:11 '
    'bytes_sent:3000 bytes_acked:3001 segs_out:3 segs_in:2 data_segs_out:1 bbr:(bw:36491625488bps,mrtt:0.011,'
    'pacing_gain:2.88672,cwnd_gain:2.88672) send 126156800000bps lastsnd:264 lastrcv:264 lastack:264 pacing_rate '
    '191936230624bps delivery_rate 36491636360bps delivered:2 app_limited rcv_space:65495 rcv_ssthresh:65495 '
    'minrtt:0.011 snd_wnd:100352\n'
    'CLOSE-WAIT 1      0               127.0.0.3:57779          127.0.0.1:51080 users:(("python3",pid=14982,fd=12))\n'
    '\t bbr wscale:10,10 rto:200 rtt:0.026/0.013 ato:40 mss:32768 pmtu:65535 rcvmss:536 advmss:65483 cwnd:10 '
    'bytes_received:11 segs_out:2 segs_in:4 data_segs_in:1 send 100824615385bps lastsnd:212 lastrcv:212 '
    'lastack:212 pacing_rate 288141767440bps delivered:1 app_limited rcv_space:65483 rcv_ssthresh:65483 '
    'minrtt:0.026 snd_wnd:65536\n'
    'FIN-WAIT-2 0      0               127.0.0.1:51080          127.0.0.3:57779\n'
    '\t\n'
    'ESTAB      0      0               127.0.0.1:44364          127.0.0.1:38603 users:(("python3",pid=15023,fd=4),'
    '("python3",pid=14982,fd=4))\n'
    '\t bbr wscale:10,10 rto:204 rtt:0.033/0.013 ato:40 mss:47616 pmtu:65535 rcvmss:1234 advmss:65483 cwnd:13 '
    'bytes_sent:100000 bytes_acked:100001 bytes_received:1234 segs_out:6 segs_in:4 data_segs_out:3 data_segs_in:1 '
    'bbr:(bw:26270887936bps,mrtt:0.015,pacing_gain:2.88672,cwnd_gain:2.88672) send 150062545455bps lastsnd:320 '
    'lastrcv:320 lastack:320 pacing_rate 213871799840bps delivery_rate 26270896544bps delivered:4 '
    'rcv_space:65495 rcv_ssthresh:76597 minrtt:0.015 snd_wnd:95232\n'
    'ESTAB      0      0      [::ffff:127.0.0.2]:51753 [::ffff:127.0.0.1]:51452 users:(("python3",pid=15023,fd=8),'
    '("python3",pid=14982,fd=8))\n'
    '\t bbr wscale:10,10 rto:200 rtt:0.026/0.013 ato:40 mss:32768 pmtu:65535 rcvmss:3000 advmss:65483 cwnd:10 '
    'bytes_received:3000 segs_out:1 segs_in:3 data_segs_in:1 bbr:(bw:0bps,mrtt:0.026) send 100824615385bps '
    'lastsnd:268 lastrcv:268 lastack:268 pacing_rate 288141767440bps delivered:1 app_limited rcv_space:65483 '
    'rcv_ssthresh:99406 minrtt:0.026 snd_wnd:65536\n'
)
SHARED = (14982, 15023)


def test_should_parse_the_ss_output_of_this_machine():
    sockets = parse_ss(SS_SAMPLE)
    assert [(s.state, s.local, s.peer, s.pids, s.bytes_sent, s.bytes_received) for s in sockets] == [
        ("ESTAB", "127.0.0.1:38603", "127.0.0.1:44364", SHARED, 1234, 100000),
        ("ESTAB", "127.0.0.1:51452", "127.0.0.2:51753", SHARED, 3000, 0),    # bytes_acked (3001) counts the SYN
        ("CLOSE-WAIT", "127.0.0.3:57779", "127.0.0.1:51080", (14982,), 0, 11),   # 10 bytes and the FIN
        ("FIN-WAIT-2", "127.0.0.1:51080", "127.0.0.3:57779", (), 0, 0),
        ("ESTAB", "127.0.0.1:44364", "127.0.0.1:38603", SHARED, 100000, 1234),
        ("ESTAB", "[::ffff:127.0.0.2]:51753", "[::ffff:127.0.0.1]:51452", SHARED, 0, 3000),
    ]
    padded = "\n".join(line + " " * 200 for line in SS_SAMPLE.splitlines()) + "\n"
    assert parse_ss(padded) == sockets
    assert parse_ss("") == []


def test_should_use_bytes_acked_from_ss_on_a_kernel_without_bytes_sent():
    old_kernel = SS_SAMPLE.replace("bytes_sent:", "unknown_counter:")
    assert [s.bytes_sent for s in parse_ss(old_kernel)] == [1234, 3001, 0, 0, 100001, 0]


def test_should_name_the_ss_output_it_cannot_read():
    with pytest.raises(BenchError, match=r"ss output: expected 'state recv-q send-q local peer \[users\]', "
                                         r"found: 'ESTAB 0 0'"):
        parse_ss("ESTAB 0 0\n")
    with pytest.raises(BenchError, match="ss output: TCP info without a socket line before it: 'cubic"):
        parse_ss("\t cubic bytes_sent:1\n")


def test_should_see_a_connection_of_this_process_through_ss(sink):
    with socket.create_connection(("127.0.0.1", sink.port)) as conn:
        conn.sendall(b"y" * 1000)
        sink.wait_for(1000)
        local = "%s:%d" % conn.getsockname()
        mine = [s for s in tcp_sockets() if s.local == local]
    assert len(mine) == 1 and mine[0].peer == f"127.0.0.1:{sink.port}"
    assert os.getpid() in mine[0].pids and mine[0].bytes_sent == 1000


def sock(local: str, sent: int, received: int, pids=(1,)) -> TcpSocket:
    return TcpSocket("ESTAB", local, "127.0.0.1:9042", tuple(pids), sent, received)


def test_should_count_tcp_bytes_within_the_window_only():
    c = TcpCounters()
    c.first([sock("127.0.0.1:1000", 500, 700), sock("127.0.0.1:3000", 5, 5)])
    c.update("app", [sock("127.0.0.1:1000", 500, 700)])
    assert c.total("app") == 0
    c.update("app", [sock("127.0.0.1:1000", 600, 750),     # +150 since the first sample
                     sock("127.0.0.1:2000", 40, 2)])       # opened in the window: from zero, +42
    assert c.total("app") == 192
    # 1000's 4-tuple reused by a new connection (counters went down): the old one's 150 stay
    c.update("app", [sock("127.0.0.1:1000", 10, 20), sock("127.0.0.1:2000", 40, 2)])
    assert c.total("app") == 150 + 30 + 42
    # in the first sample but first seen for this group later: from its values in the first sample
    c.update("db", [sock("127.0.0.1:3000", 8, 9)])
    assert c.total("db") == 7 and c.total("queue") == 0


def test_should_refuse_tcp_counter_updates_before_a_first_sample():
    with pytest.raises(BenchError, match="TcpCounters.update before TcpCounters.first"):
        TcpCounters().update("app", [])


def test_should_check_the_sampler_groups_and_interval():
    with pytest.raises(BenchError, match="unknown resource group\\(s\\) 'spark': the results schema's components "
                                         "are app, db, queue"):
        Sampler({"app": list, "spark": list})
    with pytest.raises(BenchError, match="'interval_s' must be a number of seconds above 0, found: 0"):
        Sampler({"app": list}, interval_s=0)


def test_should_refuse_sampler_results_without_a_window():
    sampler = Sampler({"app": list})
    with pytest.raises(BenchError, match=r"the resource sampler has no window yet: start\(\) and stop\(\) it "
                                         r"around the run \(0 sample\(s\) so far\)"):
        sampler.result(messages=1)
    with pytest.raises(BenchError, match="this resource sampler was not started"):
        sampler.stop()
    with sampler:
        pass
    with pytest.raises(BenchError, match="'messages' must be a count of completed messages"):
        sampler.result(messages=-1)
    assert sampler.result(messages=0)["app"] is None
    with pytest.raises(BenchError, match="this resource sampler has already been started"):
        sampler.start()


def test_should_name_a_resource_group_whose_pid_listing_fails():
    with pytest.raises(BenchError, match="resource group 'db': listing its pids failed: integer division or modulo "
                                         "by zero"):
        Sampler({"db": lambda: [1 // 0]}).start()
    calls = []

    def later():
        calls.append(1)
        if len(calls) >= 3:
            raise RuntimeError("ccm status failed")
        return []
    sampler = Sampler({"db": later}, interval_s=0.05).start()
    deadline = time.monotonic() + 30
    while len(calls) < 3 and time.monotonic() < deadline:     # the thread's second sample fails
        time.sleep(0.05)
    with pytest.raises(BenchError, match="resource sampling failed during the run: resource group 'db': listing "
                                         "its pids failed: ccm status failed"):
        sampler.stop()
    with pytest.raises(BenchError, match="resource sampling failed during the run"):
        sampler.result(messages=1)


def test_should_say_how_to_get_missing_sampler_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))           # no ss on it
    with pytest.raises(BenchError, match=r"the resource sampler needs 'ss' from iproute2 .*apt-get install "
                                         r"iproute2"):
        Sampler({"app": list})
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "psutil", None)    # what an environment without psutil does on import
    with pytest.raises(BenchError, match="the resource sampler needs psutil: make bench-deps"):
        Sampler({"app": list})
    with pytest.raises(BenchError, match="the resource sampler needs psutil: make bench-deps"):
        descendants(1)
