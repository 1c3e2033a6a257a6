"""async_triggers.spark_jobs.session: the connector jars resolved by Maven for real, and a Spark session that loads them."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from async_triggers.spark_jobs import session
from async_triggers.spark_jobs.errors import SparkSetupError



@pytest.fixture(scope="module")
def jar_home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


def test_should_resolve_the_connector_with_maven_without_spark_or_scala(jar_home):
    jars = session.connector_jars(jar_home)
    names = {j.name for j in jars}
    assert f"spark-cassandra-connector_2.12-{session.CONNECTOR_VERSION}.jar" in names
    assert f"spark-cassandra-connector-driver_2.12-{session.CONNECTOR_VERSION}.jar" in names
    assert any(n.startswith("java-driver-core-shaded-") for n in names)
    assert not [n for n in names if n.startswith(("spark-core", "spark-sql", "scala-library", "scala-reflect"))]
    assert any(n.startswith("amqp-client-") for n in names)   # the JVM sender's publisher
    assert not [n for n in names if n.startswith("netty-")]    # Spark's own Netty only
    assert all(j.parent == session.jar_dir(jar_home) for j in jars)
    assert session.jar_dir(jar_home).name.startswith(session.CONNECTOR_VERSION + "-")
    # no staging directory left behind
    assert sorted(p.name for p in (jar_home / "spark-jars").iterdir()) == [session.jar_dir(jar_home).name]


def test_should_use_a_filled_jar_cache_without_maven(jar_home):
    first = session.connector_jars(jar_home)
    assert session.connector_jars(jar_home, mvn="no-such-mvn") == first


def test_should_give_a_clear_error_when_maven_is_missing(tmp_path):
    with pytest.raises(SparkSetupError, match="'no-such-mvn' is not on PATH"):
        session.connector_jars(tmp_path, mvn="no-such-mvn")


def test_should_give_a_clear_error_and_leave_no_cache_when_maven_fails(tmp_path):
    bad = tmp_path / "pom.xml"
    bad.write_text("<project>not a pom")
    with pytest.raises(SparkSetupError, match=r"Maven could not resolve the Spark Cassandra Connector .*exit 1"):
        session.connector_jars(tmp_path / "home", pom=bad)
    assert list((tmp_path / "home" / "spark-jars").iterdir()) == []


def test_should_gather_connector_and_spark_options_in_one_dict():
    opts = session.connector_options(("10.0.0.1", "10.0.0.2"), 9043)
    assert opts["spark.cassandra.connection.host"] == "10.0.0.1,10.0.0.2"
    assert opts["spark.cassandra.connection.port"] == "9043"
    conf = session.spark_options("local[2]", "x", [Path("/a.jar"), Path("/b.jar")])
    assert conf["spark.jars"] == "/a.jar,/b.jar" and "spark.jars.packages" not in conf


def test_should_have_no_connector_in_a_session_without_jars(spark):
    assert not session.connector_loaded(spark)


def test_should_load_the_connector_in_a_session_with_the_resolved_jars(jar_home):
    # a fresh process: a JVM's class path is fixed by its first session, and the test session has no connector
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from async_triggers.spark_jobs import session
        t = time.monotonic()
        spark = session.build_session(master="local[1]", home=Path({str(jar_home)!r}), load_sender=True)
        print("started", round(time.monotonic() - t, 1), flush=True)
        print("loaded", session.connector_loaded(spark), flush=True)
        reader = spark.read.format(session.CASSANDRA_FORMAT).options(keyspace="ks", table="t")
        print("jars", spark.conf.get("spark.jars"), flush=True)
        loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
        print("sender", spark._jvm.java.lang.Class.forName("org.asynctriggers.loadgen.JvmLoad", True, loader).getName(), flush=True)
        spark.stop()
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["loaded"] == "True", proc.stdout + proc.stderr[-3000:]
    # the connector's jars, and the load generator's JVM sender compiled against them
    from async_triggers.spark_jobs import jvm_sender
    assert sorted(lines["jars"].split(",")) == sorted(
        [str(j) for j in session.connector_jars(jar_home)] + [str(jvm_sender.jar_path(jar_home))])
    assert lines["sender"] == "org.asynctriggers.loadgen.JvmLoad"
    print(f"session with connector started in {lines['started']} s")


def _driver_idempotence(jar_home, load_sender: bool) -> str:
    """The Java driver's default idempotence in a fresh session's JVM, read through the configuration loader the
    connector builds its sessions with (a programmatic one)."""
    script = textwrap.dedent(f"""
        from pathlib import Path
        from async_triggers.spark_jobs import session
        spark = session.build_session(master="local[1]", home=Path({str(jar_home)!r}), load_sender={load_sender})
        jvm = spark._jvm
        loader = jvm.com.datastax.oss.driver.api.core.config.DriverConfigLoader.programmaticBuilder().build()
        option = jvm.com.datastax.oss.driver.api.core.config.DefaultDriverOption.REQUEST_DEFAULT_IDEMPOTENCE
        print("idempotent", loader.getInitialConfig().getDefaultProfile().getBoolean(option), flush=True)
        spark.stop()
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)["idempotent"]


def test_should_let_the_driver_retry_a_timed_out_batch_of_the_jobs_writes(jar_home):
    # the connector marks its one-row statements idempotent, not its batches: a job's session says every request is
    assert _driver_idempotence(jar_home, load_sender=False) == "True"
    # the load generator's sender keeps the driver's own default
    assert _driver_idempotence(jar_home, load_sender=True) == "False"
