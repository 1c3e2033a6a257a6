"""The load generator's JVM sender: the same schedule sent through the Java driver inside Spark's JVM.

The Python driver, one Spark task per core, offered 889-2,000 requests/s against an idle cluster on this machine:
less than the three times the highest rate an experiment offers that the benchmarks need to measure the approaches
rather than the generator. The Java driver the Spark Cassandra Connector already ships sends the same requests for a
fraction of the CPU. This module computes everything a request is in Python (the schedule of
:func:`schedule.schedule`, the tweet of :class:`~async_triggers.benchmarks.apps.tweets.TweetSource`, the connection
settings of the session), hands it to ``org.asynctriggers.loadgen.JvmLoad`` (``spark-jobs/jvm``), which runs one
barrier task per partition with the rules of ``sending.py`` (never early, ``in_flight`` outstanding, late, waited,
dropped, transient errors retried), and turns the tasks' answers back into :class:`sending.Record` s.

The Java sources are compiled on first use against the jars the session runs with (pyspark's and the connector's)
into ``$ASYNC_TRIGGERS_HOME/spark-jars/loadgen-<hash>.jar``, which :func:`session.build_session` puts on Spark's
class path: no other build step, and a changed source gets a new jar.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from .errors import LoadGenError, SparkSetupError
from .schedule import Phase, check_options, schedule
from .slots import check_cores
from .sending import DROPPED, ERROR, LATE_AFTER_S, OK, Record

SOURCES = Path(__file__).resolve().parents[2] / "jvm"   # spark-jobs/jvm
TWEET, QUERY, FANOUT, PUBLISH = 1, 2, 3, 4   # JvmLoad's request kinds
# the options each kind needs (JvmLoad's RequestOptions)
OPTIONS = {FANOUT: ("followers", "timeline", "read_consistency", "concurrency"), PUBLISH: ("url", "queue")}
_STATUS = {0: OK, 1: ERROR, 2: DROPPED}
_RECORD = struct.Struct(">idddbbbi")


@dataclasses.dataclass(frozen=True)
class JvmRequests:
    """What a JVM sender sends: a statement (``kind`` TWEET: bound to each request's tweet; QUERY: no values; FANOUT:
    the tweet, then its author's and every follower's timeline row, answered when all are written; PUBLISH: the tweet
    and its message to a queue, answered when the broker confirmed it), at
    ``consistency``, failed transient writes retried for ``retry_s``; ``contact_points``/``port`` where to.
    ``tweets(seed, task)`` gives a task's tweets: an object whose ``parts(seq)`` is a TWEET request's (author, body,
    node, clock_seq), as :meth:`~async_triggers.benchmarks.apps.tweets.TweetSource.parts`. ``options``: what FANOUT
    and PUBLISH need (``OPTIONS``: the followers' query, the timeline row's insert, the read consistency and the rows
    in flight per tweet; the broker's URL and the queue). ``blocking``: the application serves a request per thread
    (the synchronous and external-queue ones), so a task keeps the load generator's ``concurrency`` requests
    outstanding, as its Python threads did, not ``in_flight``."""
    kind: int
    cql: str
    consistency: str
    contact_points: tuple[str, ...]
    port: int
    retry_s: float = 60.0
    tweets: Callable[[int, int], Any] | None = None
    options: tuple[tuple[str, str], ...] = ()
    blocking: bool = False


def jvm_requests(sender_factory) -> JvmRequests | None:
    """What ``sender_factory`` sends, when it can be sent from the JVM (a factory with ``jvm_requests()``)."""
    describe = getattr(sender_factory, "jvm_requests", None)
    return describe() if callable(describe) else None


# -- the jar -------------------------------------------------------------------------------------------------------
def _sources() -> list[Path]:
    found = sorted(SOURCES.rglob("*.java"))
    if not found:
        raise SparkSetupError(f"the JVM load generator's sources are missing: no .java file under {SOURCES}")
    return found


def jar_path(home: Path) -> Path:
    digest = hashlib.sha256()
    for source in _sources():
        digest.update(source.relative_to(SOURCES).as_posix().encode() + b"\0" + source.read_bytes())
    return Path(home) / "spark-jars" / f"loadgen-{digest.hexdigest()[:12]}.jar"


def build_jar(home: Path, class_path: Sequence[Path]) -> Path:
    """The JVM sender's jar, compiled (``javac --release 11``) against ``class_path`` and pyspark's jars when it is
    not there yet. A failed compile says why and leaves no jar."""
    target = jar_path(home)
    if target.is_file():
        return target
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise SparkSetupError("the JVM load generator needs a JDK's javac and jar on PATH (OpenJDK 17 has both)")
    import pyspark
    spark_jars = Path(pyspark.__file__).resolve().parent / "jars"
    cp = os.pathsep.join([str(spark_jars / "*"), *(str(p) for p in class_path)])
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".loadgen-", dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        compile_cmd = [javac, "--release", "11", "-nowarn", "-cp", cp, "-d", str(classes), *map(str, _sources())]
        proc = subprocess.run(compile_cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SparkSetupError(f"the JVM load generator did not compile (javac exit {proc.returncode}):\n"
                                  + "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:]))
        staged = Path(tmp) / target.name
        proc = subprocess.run([jar, "cf", str(staged), "-C", str(classes), "."], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SparkSetupError(f"the JVM load generator's jar was not made: {proc.stderr.strip()}")
        staged.replace(target)
    for stale in target.parent.glob("loadgen-*.jar"):    # built from sources since changed
        if stale != target:
            stale.unlink(missing_ok=True)
    return target


def check_requests(requests: JvmRequests) -> None:
    """A kind the JVM sender knows, with what it needs: tweets for all but QUERY, the options of FANOUT and PUBLISH."""
    if requests.kind not in (TWEET, QUERY, FANOUT, PUBLISH):
        raise LoadGenError(f"a JVM sender sends tweets (kind {TWEET}), a query (kind {QUERY}), tweets with their "
                           f"fan-out (kind {FANOUT}) or tweets with their message to a queue (kind {PUBLISH}), found "
                           f"kind {requests.kind!r}")
    if requests.kind != QUERY and requests.tweets is None:
        raise LoadGenError(f"a JVM sender of kind {requests.kind} needs its tweets, found none")
    options = dict(requests.options)
    missing = [k for k in OPTIONS.get(requests.kind, ()) if not str(options.get(k) or "").strip()]
    if missing:
        raise LoadGenError(f"a JVM sender of kind {requests.kind} needs the option(s) {', '.join(missing)}")
    if requests.kind == FANOUT:
        if not str(options["concurrency"]).isdigit() or int(options["concurrency"]) < 1:
            raise LoadGenError(f"a JVM fan-out's 'concurrency' must be a positive integer, found: "
                               f"{options['concurrency']!r}")


# -- a run ---------------------------------------------------------------------------------------------------------
def encode_plan(offsets: Sequence[float], seed: int, task: int, requests: JvmRequests) -> bytes:
    """One task's requests as ``JvmLoad.Plan`` reads them."""
    parts = [struct.pack(">i", len(offsets))]
    tweets = requests.tweets(seed, task) if requests.kind != QUERY else None
    for seq, offset in enumerate(offsets):
        parts.append(struct.pack(">d", offset))
        if tweets is not None:
            author, body, node, clock_seq = tweets.parts(seq)
            encoded = body.encode()
            parts.append(struct.pack(">iqii", author, node, clock_seq, len(encoded)))
            parts.append(encoded)
    return b"".join(parts)


def decode_records(task: int, data: bytes) -> list[Record]:
    """A task's answer (``JvmLoad.encode``) as the records the Python dispatcher would have made."""
    (n,), at = struct.unpack_from(">i", data, 0), 4
    records = []
    for _ in range(n):
        seq, scheduled, sent, acked, status, late, waited, length = _RECORD.unpack_from(data, at)
        at += _RECORD.size
        error = data[at:at + length].decode() if length else None
        at += length
        records.append(Record(task, seq, scheduled, None if math.isnan(sent) else sent,
                              None if math.isnan(acked) else acked, _STATUS[status], bool(late), error, bool(waited)))
    if at != len(data):
        raise LoadGenError(f"task {task}: the JVM sender's answer has {len(data) - at} bytes too many")
    return records


def run(spark, phases: Sequence[Phase], partitions: int, seed: int, requests: JvmRequests,
        arrivals: str = "uniform", drop_after_s: float | None = None, start_delay_s: float = 2.0,
        in_flight: int = 256, concurrency: int = 16) -> list[Record]:
    """The load of :func:`loadgen.run`, sent from the JVM; every request's record, ordered by scheduled time.
    A task keeps ``in_flight`` requests outstanding, or ``concurrency`` for a blocking application."""
    check_options(phases, partitions, 1, arrivals, drop_after_s)
    outstanding = concurrency if requests.blocking else in_flight
    if not isinstance(outstanding, int) or outstanding < 1:
        name = "concurrency" if requests.blocking else "in_flight"
        raise LoadGenError(f"'{name}' must be strictly positive, found: {outstanding}")
    check_requests(requests)
    sc = spark.sparkContext
    check_cores(sc, partitions)
    plans = [encode_plan(schedule(phases, partitions, task, seed, arrivals), seed, task, requests)
             for task in range(partitions)]
    settings = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith("spark.cassandra.")}
    # and those set on the running session only (secrets: build_session keeps them off the JVM's command line)
    session_conf = spark._jvm.scala.collection.JavaConverters.mapAsJavaMap(spark._jsparkSession.conf().getAll())
    settings.update({k: v for k, v in session_conf.items() if k.startswith("spark.cassandra.")})
    settings["spark.cassandra.connection.host"] = ",".join(requests.contact_points)
    settings["spark.cassandra.connection.port"] = str(requests.port)
    jvm = spark._jvm
    try:
        answers = jvm.org.asynctriggers.loadgen.JvmLoad.run(
            sc._jsc, settings, [bytearray(p) for p in plans], requests.kind, requests.cql, requests.consistency,
            outstanding, LATE_AFTER_S, -1.0 if drop_after_s is None else float(drop_after_s),
            float(requests.retry_s), float(start_delay_s), dict(requests.options))
    except Exception as e:
        from .errors import describe_error
        raise LoadGenError(f"the JVM load generator's Spark job failed: {describe_error(e)}") from e
    records = [r for task, answer in enumerate(answers) for r in decode_records(task, bytes(answer))]
    return sorted(records, key=lambda r: (r.scheduled, r.task, r.seq))
