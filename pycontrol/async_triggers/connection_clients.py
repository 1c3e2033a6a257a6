"""What a resolved :class:`~async_triggers.connection.Connection` becomes for each client: the Python driver's
``Cluster`` arguments (with an ``ssl.SSLContext`` built like cqlsh builds it) and the Spark Cassandra Connector's
settings (with the Java trust and key stores it needs, made from the PEM files by the JDK's keytool and openssl).

Import these from ``async_triggers.connection``; they live apart only to keep each module short.
"""
from __future__ import annotations

import atexit
import re
import secrets
import shutil
import ssl
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError

if TYPE_CHECKING:
    from .connection import Connection


def ssl_context(conn: "Connection") -> ssl.SSLContext | None:
    """The driver's TLS context, as cqlsh makes it: validation against the CA (the system's when none is given)
    unless turned off, host name checking only when asked, the client certificate when given."""
    if not conn.ssl:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = conn.ssl_validate and conn.ssl_check_hostname
    if conn.ssl_validate:
        context.verify_mode = ssl.CERT_REQUIRED
        try:
            if conn.ssl_ca:
                context.load_verify_locations(cafile=str(conn.ssl_ca))
            else:
                context.load_default_certs()
        except (ssl.SSLError, OSError) as e:
            raise ConfigError(f"{conn.origin.get('ssl_ca', '--ssl-ca')}: cannot load CA file {conn.ssl_ca}: {e}") from None
    else:
        context.verify_mode = ssl.CERT_NONE
    if conn.ssl_cert:
        try:
            context.load_cert_chain(certfile=str(conn.ssl_cert), keyfile=str(conn.ssl_key))
        except (ssl.SSLError, OSError) as e:
            raise ConfigError(f"cannot load the client certificate {conn.ssl_cert} with key {conn.ssl_key}: "
                              f"{e}") from None
    return context


def cluster_kwargs(conn: "Connection") -> dict:
    """The driver ``Cluster`` arguments: hosts, port, auth, TLS, the local data center, the protocol version."""
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

    kwargs: dict = {"contact_points": list(conn.hosts), "port": conn.port, "connect_timeout": 10,
                    "control_connection_timeout": 10,
                    "load_balancing_policy": TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=conn.local_dc or ""))}
    if conn.username:
        kwargs["auth_provider"] = PlainTextAuthProvider(username=conn.username, password=conn.password or "")
    context = ssl_context(conn)
    if context is not None:
        kwargs["ssl_context"] = context
    if conn.protocol_version is not None:
        kwargs["protocol_version"] = conn.protocol_version
    return kwargs


def make_cluster(conn: "Connection", **overrides):
    """A driver ``Cluster`` for ``conn`` (not yet connected); ``overrides`` replace or add ``Cluster`` arguments
    (a reconnection policy, a fixed protocol version)."""
    from cassandra.cluster import Cluster
    return Cluster(**{**cluster_kwargs(conn), **overrides})


def chosen_dc(cluster) -> str | None:
    """The local data center a connected driver uses (the one it picked when none was given)."""
    policy = cluster.load_balancing_policy
    policy = getattr(policy, "_child_policy", policy)
    return getattr(policy, "local_dc", None) or None


# --- Spark --------------------------------------------------------------------------------------------------------

SECRET_KEY = re.compile(r"password", re.IGNORECASE)


def spark_conf(conn: "Connection") -> tuple[dict[str, str], dict[str, str]]:
    """The connector's settings for ``conn``, split in two: the public ones, safe to give Spark at launch (PySpark
    puts every launch setting into the JVM's command line), and the secret ones, which must only be set on the
    running session's conf (the connector merges it into every read and write)."""
    public = {"spark.cassandra.connection.host": ",".join(conn.hosts),
              "spark.cassandra.connection.port": str(conn.port)}
    secret: dict[str, str] = {}
    if conn.local_dc:
        public["spark.cassandra.connection.localDC"] = conn.local_dc
    if conn.username:
        public["spark.cassandra.auth.username"] = conn.username
        secret["spark.cassandra.auth.password"] = conn.password or ""
    if conn.ssl:
        public["spark.cassandra.connection.ssl.enabled"] = "true"
        stores = java_stores(conn)
        if "truststore" in stores:
            path, password = stores["truststore"]
            public["spark.cassandra.connection.ssl.trustStore.path"] = str(path)
            public["spark.cassandra.connection.ssl.trustStore.type"] = "PKCS12"
            secret["spark.cassandra.connection.ssl.trustStore.password"] = password
        if "keystore" in stores:
            path, password = stores["keystore"]
            public["spark.cassandra.connection.ssl.clientAuth.enabled"] = "true"
            public["spark.cassandra.connection.ssl.keyStore.path"] = str(path)
            public["spark.cassandra.connection.ssl.keyStore.type"] = "PKCS12"
            secret["spark.cassandra.connection.ssl.keyStore.password"] = password
    assert not any(SECRET_KEY.search(k) for k in public), "a secret among the launch settings"
    return public, secret


_STORES: dict[tuple, dict] = {}


def java_stores(conn: "Connection") -> dict[str, tuple[Path, str]]:
    """PKCS12 stores for the JVM, made once per process in a private temporary folder removed at exit:
    ``truststore`` from the CA file (when validating), ``keystore`` from the client certificate and key. Their
    passwords are random and reach keytool and openssl through the environment, never their argv."""
    key = (conn.ssl_ca, conn.ssl_cert, conn.ssl_key, conn.ssl_validate)
    if key in _STORES:
        return _STORES[key]
    folder = Path(tempfile.mkdtemp(prefix="atc-tls-"))   # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    stores: dict[str, tuple[Path, str]] = {}
    if conn.ssl_ca and conn.ssl_validate:
        password = secrets.token_urlsafe(24)
        path = folder / "truststore.p12"
        pems = re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", conn.ssl_ca.read_text(), re.S)
        if not pems:
            raise ConfigError(f"{conn.origin.get('ssl_ca', '--ssl-ca')}: {conn.ssl_ca} holds no PEM certificate")
        for i, pem in enumerate(pems):
            cert = folder / f"ca-{i}.pem"
            cert.write_text(pem + "\n")
            _run(["keytool", "-importcert", "-noprompt", "-alias", f"ca-{i}", "-file", str(cert), "-keystore",
                  str(path), "-storetype", "PKCS12", "-storepass:env", "ATC_STORE_PASSWORD"],
                 password, f"making a trust store of {conn.ssl_ca}")
        stores["truststore"] = (path, password)
    if conn.ssl_cert:
        password = secrets.token_urlsafe(24)
        path = folder / "keystore.p12"
        _run(["openssl", "pkcs12", "-export", "-in", str(conn.ssl_cert), "-inkey", str(conn.ssl_key), "-name",
              "client", "-out", str(path), "-passout", "env:ATC_STORE_PASSWORD"],
             password, f"making a key store of {conn.ssl_cert} and {conn.ssl_key}")
        stores["keystore"] = (path, password)
    _STORES[key] = stores
    return stores


def _run(cmd: list[str], password: str, what: str) -> None:
    import os
    if shutil.which(cmd[0]) is None:
        raise ConfigError(f"{what} needs '{cmd[0]}' on PATH (the Spark connector reads Java key stores)")
    done = subprocess.run(cmd, env={**os.environ, "ATC_STORE_PASSWORD": password}, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        raise ConfigError(f"{what} failed ({cmd[0]} exit {done.returncode}): {' '.join(tail)}")
