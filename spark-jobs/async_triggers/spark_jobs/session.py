"""A local Spark session with the Spark Cassandra Connector on its class path.

The connector jars are resolved once by Maven (``spark-jobs/pom.xml``) into
``$ASYNC_TRIGGERS_HOME/spark-jars/<connector-version>/`` and handed to Spark through ``spark.jars``: no Ivy,
no ``spark.jars.packages``, so a session starts offline once the cache is filled.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

from .errors import SparkSetupError

CONNECTOR_VERSION = "3.5.1"        # Scala 2.12 build, matching pyspark 3.5.x
CASSANDRA_FORMAT = "org.apache.spark.sql.cassandra"
CONNECTOR_CLASS = "com.datastax.spark.connector.cql.CassandraConnector"
POM = Path(__file__).resolve().parents[2] / "pom.xml"   # spark-jobs/pom.xml


def default_home() -> Path:
    """``$ASYNC_TRIGGERS_HOME``, else ``~/.cache/async-triggers`` (the same rule as ``async_triggers.config``)."""
    return Path(os.environ.get("ASYNC_TRIGGERS_HOME", Path.home() / ".cache" / "async-triggers")).expanduser()


def jar_dir(home: Path, version: str = CONNECTOR_VERSION, pom: Path = POM) -> Path:
    """Where the jars ``pom`` resolves are kept: named after the connector's version and the pom's content, so a
    dependency added to the pom is resolved again instead of missing from an older cache."""
    key = hashlib.sha256(pom.read_bytes()).hexdigest()[:8] if pom.is_file() else "packaged"
    return Path(home) / "spark-jars" / f"{version}-{key}"


def connector_jars(home: Path | None = None, version: str = CONNECTOR_VERSION, pom: Path = POM,
                   mvn: str = "mvn") -> list[Path]:
    """The connector jars and their runtime dependencies (without Spark and Scala), resolving them on first use.

    Maven copies the jars into a temporary sibling directory that is renamed into place only when Maven
    succeeded, so an interrupted run never leaves a half-filled cache, and two concurrent first runs both end
    with the same complete directory.
    """
    target = jar_dir(home or default_home(), version, pom)
    if target.is_dir():
        jars = sorted(target.glob("*.jar"))
        if jars:
            return jars
    if not pom.is_file():
        raise SparkSetupError(f"cannot resolve the Spark Cassandra Connector: {pom} not found "
                              "(async_triggers.spark_jobs must run from a checkout of the repository)")
    if shutil.which(mvn) is None:
        raise SparkSetupError(f"cannot resolve the Spark Cassandra Connector {version}: '{mvn}' is not on PATH "
                              f"(Maven is needed once, to fill {target})")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=target.parent))
    try:
        cmd = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-Dconnector.version={version}", f"-DoutputDirectory={staging}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise SparkSetupError(f"Maven could not resolve the Spark Cassandra Connector {version} "
                                  f"(exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
        if not any(staging.glob("spark-cassandra-connector_*.jar")):
            raise SparkSetupError(f"Maven ran but copied no connector jar into {staging}: check {pom}")
        try:
            staging.rename(target)
        except OSError:
            if not any(target.glob("*.jar")):  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(target.glob("*.jar"))


def connector_options(contact_points: Iterable[str] = ("127.0.0.1",), port: int = 9042,
                      read_consistency: str = "LOCAL_QUORUM",
                      write_consistency: str = "LOCAL_QUORUM") -> dict[str, str]:
    """Every Cassandra connector setting the jobs use, in one place.

    Reads default to LOCAL_QUORUM rather than the connector's LOCAL_ONE: verification must not report a row
    missing because it asked a replica that has not received it yet.
    """
    return {
        "spark.cassandra.connection.host": ",".join(contact_points),
        "spark.cassandra.connection.port": str(port),
        "spark.cassandra.input.consistency.level": read_consistency,
        "spark.cassandra.output.consistency.level": write_consistency,
        # a laptop cluster shares two cores with Spark: keep the number of in-flight writes modest
        "spark.cassandra.output.concurrent.writes": "4",
        "spark.cassandra.connection.timeoutMS": "10000",
        "spark.cassandra.read.timeoutMS": "120000",
    }


LOG4J2 = """\
# written by async_triggers.spark_jobs.session: Spark's default prints INFO lines and banners a job's output drowns in
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.driver.name = com.datastax.oss.driver
logger.driver.level = error
"""


def log_config(home: Path | None = None) -> Path:
    """A quiet log4j2 configuration file under the cache dir (written when absent or changed)."""
    path = Path(home or default_home()) / "spark-jars" / "log4j2.properties"
    if not path.is_file() or path.read_text() != LOG4J2:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2)
        tmp.replace(path)
    return path


# The driver retries a request that timed out only when it is idempotent (the connector's retry policy, up to
# spark.cassandra.query.retry.count times). The connector marks its one-row statements so, but not the batches it
# groups them in (BatchStatement.newInstance leaves it unset: the driver's default, false), so a timed-out batch would
# fail its Spark task, and a local master retries no task. Every write the jobs send is idempotent (each row at its own
# timestamp, whole values, no counter, no list append): the driver's default says so. A system property overrides the
# driver's programmatic configuration, which the connector builds (its loader reads ConfigFactory.defaultOverrides()).
IDEMPOTENT_WRITES = "-Ddatastax-java-driver.basic.request.default-idempotence=true"


def spark_options(master: str, app_name: str, jars: Iterable[Path], log_file: Path | None = None,
                  idempotent: bool = True) -> dict[str, str]:
    """Spark settings sized for a 2-core machine that also runs the Cassandra nodes. ``idempotent``: the driver
    takes a request without its own idempotence as idempotent (:data:`IDEMPOTENT_WRITES`)."""
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        # the local executors live in the driver: a verification of a few million rows caches blocks of 100+ MB each
        # per task, which 1g did not hold (a 600-s lag run's 3 million timeline rows ended in an OutOfMemoryError)
        "spark.driver.memory": "3g",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        # the connector prefers the Cassandra replica hosts (127.0.0.x) for each split; no Spark executor runs
        # there, and delay scheduling then left a task of a union of two scans unscheduled forever (seen here)
        "spark.locality.wait": "0s",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
    }
    java_options = [f"-Dlog4j2.configurationFile=file:{log_file}"] if log_file is not None else []
    if idempotent:
        java_options.append(IDEMPOTENT_WRITES)
        conf["spark.executor.extraJavaOptions"] = IDEMPOTENT_WRITES
    if java_options:
        conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
    jar_list = ",".join(str(j) for j in jars)
    if jar_list:
        conf["spark.jars"] = jar_list
    return conf


EXTENSIONS = "spark.sql.extensions"


def build_session(master: str = "local[*]", contact_points: Iterable[str] | None = None, port: int | None = None,
                  app_name: str = "async-triggers", home: Path | None = None,
                  jars: Iterable[Path] | None = None, conf: Mapping[str, str] | None = None, connection=None,
                  load_sender: bool = False):
    """Start (or return the running) Spark session with the connector.

    ``connection`` (async_triggers.connection.Connection) says how to reach Cassandra; without it, the
    ASYNC_TRIGGERS_* environment and the cqlshrc file do, ``contact_points``/``port`` taking the place of flags.
    Secret settings (the password, the key stores' passwords) are set on the running session only: PySpark puts
    every launch setting into the JVM's command line.

    ``jars=None`` resolves the connector (see :func:`connector_jars`); ``load_sender=True`` adds the load
    generator's JVM sender (:func:`jvm_sender.build_jar`, compiled with javac from the checkout's Java sources on
    first use: the benchmarks' sessions, not verify's or backfill's); ``jars=()`` starts Spark without them,
    for pure transforms. ``conf`` overrides any setting. Only the first session of a process fixes the JVM's
    class path and memory: later calls reuse it.
    """
    from pyspark.sql import SparkSession

    from async_triggers import connection as connection_mod, connection_clients

    if connection is None:
        connection = connection_mod.resolve({"hosts": ",".join(contact_points) if contact_points else None,
                                             "port": port})
    connection = connection_mod.with_password(connection)
    public, secret = connection_clients.spark_conf(connection)
    if jars is None:
        jar_paths = connector_jars(home)
        if load_sender:
            from .jvm_sender import build_jar
            jar_paths = [*jar_paths, build_jar(home or default_home(), jar_paths)]
    else:
        jar_paths = list(jars)
    # the launcher reads this before any conf: without it Spark warns about the host's loopback name
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers must run this interpreter: the jobs' functions are pickled by reference to spark_jobs
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from .standalone import executor_conf
    # the load generator's requests keep the driver's default: its sender decides what to retry
    settings = {**spark_options(master, app_name, jar_paths, log_config(home), idempotent=not load_sender),
                **executor_conf(master),
                **connector_options(connection.hosts, connection.port), **public, **(conf or {})}
    active = SparkSession.getActiveSession()
    wanted = settings.get(EXTENSIONS)
    if active is not None and wanted and active.sparkContext.getConf().get(EXTENSIONS) != wanted:
        # SQL extensions are fixed when a session starts: one started without them (the graph loader's, in the
        # same process) would give this caller a session without writetime() and ttl()
        active.stop()
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # py4j / JVM launch errors come in many types
        raise SparkSetupError(f"the Spark session did not start ({master}): {e}") from e
    spark.sparkContext.setLogLevel("WARN")
    for key, value in secret.items():
        spark.conf.set(key, value)
    return spark


def connector_loaded(spark) -> bool:
    """True when the connector's classes load and Spark resolves the ``org.apache.spark.sql.cassandra`` format
    (both without contacting Cassandra)."""
    jvm = spark._jvm
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(CONNECTOR_CLASS, True, loader)
        source = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            CASSANDRA_FORMAT, spark._jsparkSession.sessionState().conf())
        return source.getName().startswith("org.apache.spark.sql.cassandra")
    except Exception:
        return False


def read_table(spark, keyspace: str, table: str, columns: Iterable[str] | None = None,
               options: Mapping[str, str] | None = None):
    """A Cassandra table as a DataFrame, selecting only ``columns`` (the connector prunes the rest). ``options``: more
    reader options (any connector setting, e.g. ``spark.cassandra.input.consistency.level`` for this read).

    Columns are picked by position, so any column name works (dots, spaces, names that differ only in case, which
    Spark would otherwise resolve case-insensitively); a name the table lacks is Spark's error as before."""
    df = spark.read.format(CASSANDRA_FORMAT).options(keyspace=keyspace, table=table, **(options or {})).load()
    if columns is None:
        return df
    columns, names = list(columns), list(df.columns)
    if any(c not in names for c in columns):
        return df.select(*columns)
    from pyspark.sql import functions as F
    positional = df.toDF(*[f"_{i}" for i in range(len(names))])
    return positional.select(*[F.col(f"_{names.index(c)}").alias(c) for c in columns])


def write_table(df, keyspace: str, table: str) -> None:
    """Append ``df`` to a Cassandra table (upserts: Cassandra has no other kind of write)."""
    df.write.format(CASSANDRA_FORMAT).options(keyspace=keyspace, table=table).mode("append").save()
