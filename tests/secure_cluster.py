"""Someone else's cluster, made the way operators run them, for the tests of "On your own cluster": ccm nodes in
two data centers (PropertyFileSnitch), PasswordAuthenticator with CassandraAuthorizer, client TLS only (a
certificate made here with the JDK's keytool), the guardrail ``simplestrategy_enabled: false``, and no plugin:
the test installs it the way the bundle's INSTALL.md says (install-on-node.sh on each node's jvm-server.options,
then a rolling restart). ctl made none of it, and nothing here uses ctl's own cluster code (which assumes open,
plaintext clusters): ccm starts the nodes and watches their logs."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

from async_triggers.cluster import ccm_driver, install, node_process

STORE_PASSWORD = "keystore-secret"   # the nodes' keystore: not the role's password, which the test makes up


@dataclasses.dataclass(frozen=True)
class Certificates:
    keystore: Path      # PKCS12, the nodes' key and certificate
    ca: Path            # PEM, what clients trust (the self-signed certificate itself)


def make_certificates(folder: Path, addresses: list[str]) -> Certificates:
    folder.mkdir(parents=True, exist_ok=True)
    keystore, ca = folder / "node-keystore.p12", folder / "ca.pem"
    for f in (keystore, ca):
        f.unlink(missing_ok=True)
    san = ",".join(f"ip:{a}" for a in addresses)
    subprocess.run(["keytool", "-genkeypair", "-alias", "node", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
                    "-dname", "CN=async-triggers-test-node", "-ext", f"SAN={san}", "-keystore", str(keystore),
                    "-storetype", "PKCS12", "-storepass", STORE_PASSWORD], check=True, capture_output=True)
    subprocess.run(["keytool", "-exportcert", "-rfc", "-alias", "node", "-keystore", str(keystore),
                    "-storepass", STORE_PASSWORD, "-file", str(ca)], check=True, capture_output=True)
    return Certificates(keystore=keystore, ca=ca)


def yaml_options(certs: Certificates) -> dict:
    return {
        **install.LAPTOP_TUNING,
        **install.COMMITLOG_SYNC["batch"],
        "authenticator": {"class_name": "org.apache.cassandra.auth.PasswordAuthenticator"},
        "authorizer": {"class_name": "org.apache.cassandra.auth.CassandraAuthorizer"},
        "role_manager": {"class_name": "org.apache.cassandra.auth.CassandraRoleManager"},
        "client_encryption_options": {"enabled": True, "optional": False, "keystore": str(certs.keystore),
                                      "keystore_password": STORE_PASSWORD, "require_client_auth": False},
        "simplestrategy_enabled": False,
    }


def create(ccm_dir: Path, name: str, install_dir: Path, dcs: list[int], certs: Certificates, heap: str = "768M"):
    """A new ccm cluster (a leftover of the same name is removed first), not started."""
    from ccmlib.cluster import Cluster
    shutil.rmtree(ccm_dir / name, ignore_errors=True)
    ccm_dir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(str(ccm_dir), name, install_dir=str(install_dir))
    cluster.set_configuration_options(values=yaml_options(certs))
    cluster.set_environment_variable("MAX_HEAP_SIZE", heap)
    cluster.populate(dcs)
    for node in cluster.nodes.values():
        # as in the official tarball and packages (conf/triggers): Cassandra loads no trigger class without it
        ccm_driver.triggers_dir(node).mkdir(parents=True, exist_ok=True)
    return cluster


def jvm_server_options(node) -> Path:
    """The node's own jvm-server.options (ccm gives each node a conf dir of its own)."""
    return Path(node.get_conf_dir()) / "jvm-server.options"


def start(node, timeout: int = 240) -> None:
    """Start one node the way its service would: its conf dir's options (the -javaagent line once installed) plus
    the fast-start properties every test node gets; return when it listens for CQL clients."""
    node.start(wait_other_notice=False, wait_for_binary_proto=timeout, allow_root=True,
               jvm_args=list(node_process.FAST_START_JVM_ARGS))


def restart(node, timeout: int = 240) -> None:
    """What INSTALL.md's rolling restart does for one node: drain, stop, start, wait until it serves CQL."""
    node.nodetool("drain")
    node.stop(gently=True, wait_other_notice=False)
    start(node, timeout)


def remove(cluster) -> None:
    for node in cluster.nodes.values():
        if node.is_running():
            node.stop(gently=False, wait_other_notice=False)
    shutil.rmtree(cluster.get_path(), ignore_errors=True)


# --- what the test does on that cluster, through the driver as the application would (auth + TLS) ---------------

def port_busy(address: str) -> bool:
    from async_triggers.cluster import health
    return health.port_open(address, 9042, timeout=0.5)


def _connect(certs: Certificates, username: str, password: str):
    import ssl
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster
    from cassandra.policies import DCAwareRoundRobinPolicy
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(str(certs.ca))
    cluster = Cluster(["127.0.0.1"], ssl_context=context, auth_provider=PlainTextAuthProvider(username, password),
                      load_balancing_policy=DCAwareRoundRobinPolicy(local_dc="dc1"), connect_timeout=10)
    deadline = time.monotonic() + 60
    while True:
        try:
            return cluster, cluster.connect()
        except Exception:   # the default superuser appears a moment after the first node starts
            if time.monotonic() > deadline:
                cluster.shutdown()
                raise
            time.sleep(2)


@contextlib.contextmanager
def session_of(own) -> Iterator:
    cluster, session = _connect(own["certs"], "ops", own["password"])
    try:
        yield session
    finally:
        cluster.shutdown()


def create_role(ccm_cluster, certs: Certificates, dcs: list[int], name: str, password: str) -> None:
    """What an operator does first on a multi-DC cluster with authentication: system_auth replicated in every DC
    (it starts as SimpleStrategy RF 1, so a DC may hold no replica of a role), repaired, then an own superuser
    (CREATE TRIGGER needs one); the default 'cassandra' role only makes it."""
    cluster, session = _connect(certs, "cassandra", "cassandra")
    try:
        per_dc = ", ".join(f"'dc{i + 1}': {min(3, n)}" for i, n in enumerate(dcs))
        session.execute("ALTER KEYSPACE system_auth WITH replication = {'class': 'NetworkTopologyStrategy', "
                        + per_dc + "}")
        cluster.control_connection.wait_for_schema_agreement(wait_time=30)
        for node in ccm_cluster.nodes.values():
            node.nodetool("repair -full system_auth")
        session.execute(f"CREATE ROLE IF NOT EXISTS {name} WITH SUPERUSER = true AND LOGIN = true AND PASSWORD = %s",
                        (password,))
    finally:
        cluster.shutdown()


def run_cql(certs: Certificates, username: str, password: str, script: str) -> None:
    from async_triggers.cql_script import statements
    cluster, session = _connect(certs, username, password)
    try:
        for statement in statements(script, "test schema"):
            session.execute(statement)
        cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    finally:
        cluster.shutdown()


def twitter_schema(dcs: list[int]) -> str:
    """examples/twitter/schema.cql with the replication an operator of this cluster would choose: per DC."""
    schema = (Path(__file__).resolve().parents[1] / "examples" / "twitter" / "schema.cql").read_text()
    per_dc = ", ".join(f"'dc{i + 1}': {min(2, n)}" for i, n in enumerate(dcs))
    return schema.replace("{'class': 'NetworkTopologyStrategy', 'replication_factor': 2}",
                          "{'class': 'NetworkTopologyStrategy', " + per_dc + "}")


def install_plugin(node, script: Path, prefix: Path, metrics_port: int | None = None) -> None:
    """INSTALL.md step 1 on one node: install-on-node.sh on the node's jvm-server.options."""
    env = dict(os.environ)
    if metrics_port:
        env.update(ASYNC_TRIGGERS_METRICS_PORT=str(metrics_port), ASYNC_TRIGGERS_METRICS_ADDRESS=node.address())
    subprocess.run([str(script), str(jvm_server_options(node)), str(prefix)], check=True, capture_output=True, env=env)


def keyspace_exists(own, name: str) -> bool:
    with session_of(own) as s:
        return s.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (name,)).one() is not None


def assert_replication_is_per_dc(own, dcs: list[int]) -> None:
    with session_of(own) as s:
        row = s.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'async_triggers'").one()
    replication = dict(row.replication)
    assert replication.pop("class").endswith("NetworkTopologyStrategy"), row
    assert replication == {f"dc{i + 1}": str(min(2, n)) for i, n in enumerate(dcs)}, row


USERS = 30


def write_graph_and_tweets(own, tweets: int, ttl_every: int, ttl: int) -> list[tuple]:
    """A small follower graph and tweets; every ttl_every-th tweet with a TTL. Returns (tweet_id, author) pairs."""
    rng = random.Random(7)
    with session_of(own) as s:
        for user in range(USERS):
            s.execute("INSERT INTO twitter.users (user_id, name) VALUES (%s, %s)", (user, f"user{user}"))
            for follower in rng.sample(range(USERS), 4):
                if follower != user:
                    s.execute("INSERT INTO twitter.followers (user_id, follower_id) VALUES (%s, %s)", (user, follower))
    return _tweets(own, tweets, rng, ttl=ttl, ttl_every=ttl_every)


def write_tweets(own, tweets: int, ttl: int | None = None, consistency: str = "LOCAL_QUORUM") -> list[tuple]:
    return _tweets(own, tweets, random.Random(), ttl=ttl, ttl_every=1 if ttl else 0, consistency=consistency)


def _tweets(own, count: int, rng, ttl: int | None, ttl_every: int, consistency: str = "LOCAL_QUORUM") -> list[tuple]:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    from cassandra.util import uuid_from_time
    out = []
    with session_of(own) as s:
        for i in range(count):
            tweet, author = uuid_from_time(time.time()), rng.randrange(USERS)
            using = f" USING TTL {ttl}" if ttl and ttl_every and i % ttl_every == 0 else ""
            s.execute(SimpleStatement("INSERT INTO twitter.tweets (tweet_id, author_id, body, created_at) "
                                      f"VALUES (%s, %s, %s, toTimestamp(now())){using}",
                                      consistency_level=getattr(ConsistencyLevel, consistency)),
                      (tweet, author, f"tweet {i} by {author}"))
            out.append((tweet, author))
    return out


def timeline_rows_of(own, tweets: list[tuple]) -> int:
    with session_of(own) as s:
        return sum(1 for tweet, author in tweets
                   if s.execute("SELECT tweet_id FROM twitter.timeline WHERE user_id = %s AND tweet_id = %s",
                                (author, tweet)).one() is not None)


def assert_backfill_kept_write_times(own, tweets: list[tuple]) -> None:
    """A backfilled timeline row is stamped from its tweet's own write timestamp (a later write of the tweet wins): the
    timeline flow's fan-out follows its table, so a tweet's version is its write time's multiple of the spacing, and
    the author's own row, the direct step's, takes that version's last stamp (docs/design.md, "Stamps")."""
    from async_triggers.spark_jobs.follows import SPACING
    with session_of(own) as s:
        for tweet, author in tweets[:10]:
            source = s.execute("SELECT WRITETIME(body) AS w FROM twitter.tweets WHERE tweet_id = %s", (tweet,)).one()
            derived = s.execute("SELECT WRITETIME(body) AS w FROM twitter.timeline WHERE user_id = %s AND tweet_id = %s",
                                (author, tweet)).one()
            stamp = source.w // SPACING * SPACING + SPACING - 1
            assert derived is not None and derived.w == stamp, (tweet, source, derived, stamp)


def assert_timeline_ttls(own, tweets: list[tuple], at_most: int) -> None:
    """A TTL'd tweet's timeline rows expire with it: a TTL, never longer than the tweet's remaining one."""
    with session_of(own) as s:
        for tweet, author in tweets:
            source = s.execute("SELECT TTL(body) AS t FROM twitter.tweets WHERE tweet_id = %s", (tweet,)).one()
            derived = s.execute("SELECT TTL(body) AS t FROM twitter.timeline WHERE user_id = %s AND tweet_id = %s",
                                (author, tweet)).one()
            assert derived is not None and derived.t is not None, (tweet, derived)
            assert 0 < derived.t <= min(at_most, source.t + 1), (tweet, source, derived)
