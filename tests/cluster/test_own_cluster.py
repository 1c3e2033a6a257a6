"""docs/own-cluster.md, step by step, on a cluster ctl did not make: two data centers, PasswordAuthenticator,
client TLS, ``simplestrategy_enabled: false``, no plugin (tests/secure_cluster.py). The plugin is installed from the
bundle the way its INSTALL.md says; ctl reaches the cluster only through its connection options (environment
variables here: the password never in argv). Then: a deploy refused while a node lacks the plugin; tweets written
before the deploy, brought in by ``deploy --backfill``; writes with TTLs; pause and resume; a whole data center
killed while tweets keep coming; Spark verification with 0 missing; a Prometheus scrape. The role's password must
appear in no process's argv and no output or node log.

Nodes per DC: ASYNC_TRIGGERS_OWN_CLUSTER_DCS (default "1,1" in the default suite; `make test-own-cluster` runs 2,2).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

import secure_cluster
from async_triggers import config
from async_triggers.cluster import install

NAME = "atc-own"
ROOT = Path(__file__).resolve().parents[2]
DCS = [int(n) for n in os.environ.get("ASYNC_TRIGGERS_OWN_CLUSTER_DCS", "1,1").split(",")]
ADDRESSES = [f"127.0.0.{i}" for i in range(1, sum(DCS) + 1)]
METRICS_PORT = 7070
pytestmark = pytest.mark.timeout(1500)


class ArgvWatch:
    """Samples every process's argv while the test runs: a password handed over in argv would show here."""

    def __init__(self, secret: str):
        self.secret, self.seen, self._stop = secret, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for p in psutil.process_iter(["pid", "cmdline"]):
                line = " ".join(p.info.get("cmdline") or [])
                if self.secret in line:
                    self.seen.append(line[:200])
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    settings = config.load(cluster_name=NAME)
    busy = [a for a in ADDRESSES if secure_cluster.port_busy(a)]
    if busy:
        pytest.skip(f"another Cassandra is listening on {', '.join(busy)}:9042")
    folder = tmp_path_factory.mktemp("own")
    certs = secure_cluster.make_certificates(folder / "certs", ADDRESSES)
    install_dir = install.ensure_install(settings, lambda m: print(f"[own] {m}", flush=True))
    cluster = secure_cluster.create(settings.ccm_dir, NAME, install_dir, DCS, certs)
    try:
        for node in cluster.nodes.values():
            secure_cluster.start(node)
        password = "pw-" + secrets.token_hex(12)
        secure_cluster.create_role(cluster, certs, DCS, "ops", password)
        yield dict(cluster=cluster, certs=certs, folder=folder, password=password, outputs=[])
    finally:
        secure_cluster.remove(cluster)


def ctl(own, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    """ctl as an operator runs it: connection through the environment (never the password in argv)."""
    env = dict(os.environ, ASYNC_TRIGGERS_HOSTS="127.0.0.1", ASYNC_TRIGGERS_LOCAL_DC="dc1",
               ASYNC_TRIGGERS_USERNAME="ops", ASYNC_TRIGGERS_PASSWORD=own["password"],
               ASYNC_TRIGGERS_SSL="1", ASYNC_TRIGGERS_SSL_CA=str(own["certs"].ca), CI="true")
    env.pop("ASYNC_TRIGGERS_CONTACT_POINTS", None)
    done = subprocess.run([sys.executable, "-m", "async_triggers", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    own["outputs"].append(done.stdout + done.stderr)
    print(f"$ ctl {' '.join(args)}\n{done.stdout}{done.stderr}(exit {done.returncode})", flush=True)  # docs/own-cluster.md's transcript
    if check:
        assert done.returncode == 0, f"ctl {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _verify(own) -> dict:
    """ctl verify's JSON (one object per target table) summed over the flow's targets."""
    done = ctl(own, "verify", "twitter_timeline", "--master", "local[2]", "--json", check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    tables = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: sum(t[k] for t in tables) for k in ("expected", "present", "missing", "unexpected")}


def test_should_follow_the_own_cluster_guide_end_to_end_without_exposing_the_password(own):
    cluster, folder = own["cluster"], own["folder"]
    nodes = [cluster.nodes[n] for n in sorted(cluster.nodes)]
    with ArgvWatch(own["password"]) as argv:
        # 0. the application's schema, as the application's owner would make it (NTS: SimpleStrategy is refused)
        secure_cluster.run_cql(own["certs"], "ops", own["password"], secure_cluster.twitter_schema(DCS))

        # 1. no node runs the plugin yet: check says so (exit 1), per node
        before = ctl(own, "plugin", "check", "--json", check=False)
        assert before.returncode == 1, before.stdout + before.stderr
        assert {n["state"] for n in json.loads(before.stdout)["nodes"]} == {"missing"}

        # 2. the bundle, installed on every node but the last (INSTALL.md steps 1-2)
        bundle = json.loads(ctl(own, "plugin", "bundle", "--out", str(folder / "dist"), "--json").stdout)
        script = Path(bundle["folder"]) / "install-on-node.sh"
        for node in nodes[:-1]:
            secure_cluster.install_plugin(node, script, folder / "opt", METRICS_PORT)
            secure_cluster.restart(node)
        partial = ctl(own, "plugin", "check", check=False)
        assert partial.returncode == 1 and nodes[-1].address() in partial.stderr

        # 3. tweets written before any flow exists, some with a TTL
        old = secure_cluster.write_graph_and_tweets(own, tweets=40, ttl_every=4, ttl=600)

        # 4. a deploy while a node lacks the plugin is refused, naming it, with nothing changed
        flows = ROOT / "examples" / "twitter" / "flows.py"
        refused = ctl(own, "trigger", "deploy", str(flows), check=False)
        assert refused.returncode == 1 and nodes[-1].address() in refused.stderr, refused.stderr
        assert not secure_cluster.keyspace_exists(own, "async_triggers")

        secure_cluster.install_plugin(nodes[-1], script, folder / "opt", METRICS_PORT)
        secure_cluster.restart(nodes[-1])
        report = json.loads(ctl(own, "plugin", "check", "--json").stdout)
        assert report["same_build"] and {n["state"] for n in report["nodes"]} == {"loaded"}
        assert sorted({n["datacenter"] for n in report["nodes"]}) == [f"dc{i + 1}" for i in range(len(DCS))]

        # 5. deploy with backfill: the old tweets reach every timeline with their own write timestamps
        ctl(own, "trigger", "deploy", str(flows), "--backfill", "--master", "local[2]")
        secure_cluster.assert_replication_is_per_dc(own, DCS)
        verified = _verify(own)
        assert verified["missing"] == 0 and verified["unexpected"] == 0 and verified["expected"] > 0, verified
        secure_cluster.assert_backfill_kept_write_times(own, old)

        # 6. live writes with TTLs: the timeline rows get the source's remaining TTL
        live = secure_cluster.write_tweets(own, tweets=10, ttl=900)
        ctl(own, "trigger", "wait", "twitter_timeline", "--timeout", "120")
        secure_cluster.assert_timeline_ttls(own, live, at_most=900)

        # 7. paused: captured, not executed; resumed: drained
        ctl(own, "trigger", "pause", "twitter_timeline")
        paused = secure_cluster.write_tweets(own, tweets=10)
        time.sleep(6)
        assert secure_cluster.timeline_rows_of(own, paused) == 0
        status = json.loads(ctl(own, "trigger", "status", "twitter_timeline", "--nodes", "--json").stdout)
        assert status and all(s.get("paused") for s in status), status
        ctl(own, "trigger", "resume", "twitter_timeline")
        ctl(own, "trigger", "wait", "twitter_timeline", "--timeout", "180")
        assert secure_cluster.timeline_rows_of(own, paused) > 0

        # 8. a whole data center dies (kill -9) while tweets keep coming: they are acknowledged and captured in the
        # live one; the timeline's lineage is written at EACH_QUORUM, so its tasks wait (spending no attempts) until
        # the dead data center is back, and then nothing is missing
        dead_dc = [n for n in nodes if n.data_center == f"dc{len(DCS)}"]
        for node in dead_dc:
            node.stop(gently=False, wait_other_notice=False)
        during = secure_cluster.write_tweets(own, tweets=20, consistency="LOCAL_ONE")
        status = json.loads(ctl(own, "trigger", "status", "twitter_timeline", "--nodes", "--json").stdout)
        assert any(s.get("backlog", 0) > 0 or s.get("pending", 0) > 0 or s.get("completed", 0) > 0 for s in status), status
        for node in dead_dc:
            secure_cluster.start(node)
        ctl(own, "trigger", "wait", "twitter_timeline", "--timeout", "300")
        assert secure_cluster.timeline_rows_of(own, during) == len(during)
        after = _verify(own)
        assert after["missing"] == 0 and after["unexpected"] == 0, after

        # 9. Prometheus: the flow's counters as the exporter serves them
        scrape = urllib.request.urlopen(f"http://{nodes[0].address()}:{METRICS_PORT}/metrics", timeout=10).read().decode()
        assert re.search(r'async_triggers_\w+\{[^}]*flow="twitter_timeline"', scrape), scrape[:2000]

        # 10. removing it: every flow, its capture index, trigger and backup map, then the keyspace; a second run
        # finds nothing left
        removed = json.loads(ctl(own, "plugin", "uninstall", "--yes", "--json").stdout)
        assert sorted(removed["flows"]) == ["twitter_timeline", "twitter_timeline_follows", "twitter_tweet_counts"] and removed["keyspace"] and removed["discarded"] == [], removed
        again = json.loads(ctl(own, "plugin", "uninstall", "--yes", "--json").stdout)
        assert (again["flows"], again["indexes"], again["triggers"], again["backup_maps"], again["keyspace"]) == \
            ([], [], [], [], False), again
        assert json.loads(ctl(own, "trigger", "list", "--json").stdout) == []

    assert argv.seen == [], f"the password was in a process's argv: {argv.seen}"
    for text in own["outputs"]:
        assert own["password"] not in text
    for node in nodes:
        log = Path(node.get_path()) / "logs" / "system.log"
        assert own["password"] not in log.read_text(errors="replace")
