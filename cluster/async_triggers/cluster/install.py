"""The Cassandra install dir: assembled from Maven artifacts and our templates, or an official distribution.

Assembled layout (cached under `<home>/cassandra/<version>/`, built in a temp dir then renamed):

    0.version.txt        the version, read by ccm
    .ctl-install.json    what built it (version, fingerprint of templates + pom)
    bin/                 cassandra, cassandra.in.sh, nodetool, cqlsh
    conf/                cassandra.yaml, cassandra-env.sh, jvm*-{server,clients}.options,
                         logback.xml, logback-tools.xml, triggers/
    lib/                 cassandra-all and its runtime dependencies (cluster/pom.xml)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from async_triggers.config import Settings
from async_triggers.errors import ClusterError
from . import templates

Progress = Callable[[str], None]

POM = Path(__file__).resolve().parent / "pom.xml"
MARKER = ".ctl-install.json"
VERSION_FILE = "0.version.txt"
DEFAULT_HEAP = "1G"

# cassandra.yaml settings for several nodes on one laptop (2 cores, a 1G heap each). Cassandra 5.0 names only.
# Rendered into our cassandra.yaml and also applied by ccm on top of an official distribution's yaml.
LAPTOP_TUNING: dict[str, object] = {
    "concurrent_reads": 8,
    "concurrent_writes": 8,
    "concurrent_counter_writes": 4,
    "concurrent_materialized_view_writes": 4,
    "concurrent_compactors": 1,
    "memtable_flush_writers": 1,
    "memtable_allocation_type": "heap_buffers",
    "memtable_heap_space": "128MiB",
    "memtable_offheap_space": "128MiB",
    "commitlog_total_space": "512MiB",
    "compaction_throughput": "64MiB/s",
    "native_transport_max_threads": 32,
    "key_cache_size": "16MiB",
    "file_cache_size": "64MiB",
    "networking_cache_size": "32MiB",
    "auto_snapshot": False,
}


# commitlog_sync of a new cluster. periodic (Cassandra's default): a write is acknowledged before its commit log
# record is on disk, and a node killed -9 forgets its last ~100 ms of acknowledged writes (the commit log's chained
# markers; up to commitlog_sync_period on a crash of the machine). batch: acknowledged once synced, nothing forgotten.
COMMITLOG_SYNC: dict[str, dict[str, object]] = {
    "periodic": {"commitlog_sync": "periodic", "commitlog_sync_period": "10000ms"},
    "batch": {"commitlog_sync": "batch", "commitlog_sync_period": "0ms"},
}


def _noop(_: str) -> None:
    pass


def install_context(version: str, home: Path) -> dict:
    """The variables of the cluster templates."""
    return {
        "version": version,
        "min_java": 11,
        "default_heap": DEFAULT_HEAP,
        "max_direct_memory": "1G",
        "tool_heap": "256m",
        "gc_threads": 2,
        "conc_gc_threads": 1,
        "jit_threads": 2,
        "data_dir": str(home / "data"),
        "tuning": {k: _yaml_scalar(v) for k, v in LAPTOP_TUNING.items()},
    }


def _yaml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_files(target: Path, version: str, home: Path) -> list[Path]:
    """Render every cluster template into `target` (bin/ scripts made executable); `home` is the final install
    dir (paths in the default cassandra.yaml point there). Returns the written files."""
    env = templates.environment()
    context = install_context(version, home)
    written = []
    for name in templates.template_names(env):
        out = target / templates.output_name(name)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(templates.render(name, context, env))
        if out.parent.name == "bin":
            out.chmod(out.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        written.append(out)
    (target / "conf" / "triggers").mkdir(parents=True, exist_ok=True)
    (target / VERSION_FILE).write_text(version + "\n")
    return written


def fingerprint(version: str) -> str:
    """Changes when the version, a template or the pom changes: a cached install with another one is rebuilt."""
    h = hashlib.sha256(version.encode())
    for path in sorted(templates.TEMPLATE_ROOT.rglob("*.jinja")):
        h.update(str(path.relative_to(templates.TEMPLATE_ROOT)).encode())
        h.update(path.read_bytes())
    h.update(repr(sorted(LAPTOP_TUNING.items())).encode())
    if POM.exists():
        h.update(POM.read_bytes())
    return h.hexdigest()[:16]


def cache_dir(settings: Settings) -> Path:
    return settings.home / "cassandra" / settings.cassandra_version


def ensure_install(settings: Settings, progress: Progress | None = None) -> Path:
    """The install dir to give ccm: Settings.install_dir (an official distribution, validated) if set, else
    the assembled dir of Settings.cassandra_version, built on first use (Maven resolves the jars)."""
    progress = progress or _noop
    if settings.install_dir is not None:
        return validate_distribution(settings.install_dir, settings.cassandra_version)
    final = cache_dir(settings)
    wanted = fingerprint(settings.cassandra_version)
    if _is_complete(final, wanted):
        return final
    progress(f"assembling Cassandra {settings.cassandra_version} in {final} (Maven resolves cassandra-all and its dependencies)")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        _resolve_jars(settings.cassandra_version, tmp / "lib", progress)
        render_files(tmp, settings.cassandra_version, final)
        (tmp / MARKER).write_text(json.dumps({
            "version": settings.cassandra_version, "fingerprint": wanted,
            "built": time.strftime("%Y-%m-%dT%H:%M:%S"), "jars": len(list((tmp / "lib").glob("*.jar"))),
        }, indent=2) + "\n")
        _swap_in(tmp, final, wanted)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    progress(f"Cassandra {settings.cassandra_version} ready in {final}")
    return final


def _is_complete(path: Path, wanted: str) -> bool:
    try:
        marker = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("fingerprint") == wanted and any((path / "lib").glob("cassandra-all-*.jar"))


def _swap_in(tmp: Path, final: Path, wanted: str) -> None:
    """Rename tmp to final; an existing outdated final is moved aside first (running nodes keep their open jars)."""
    old = None
    if final.exists():
        if _is_complete(final, wanted):   # another process finished first
            return
        old = final.with_name(f".{final.name}.old-{os.getpid()}-{int(time.time())}")
        final.rename(old)
    try:
        tmp.rename(final)
    except OSError:
        if not _is_complete(final, wanted):
            raise ClusterError(f"could not move the assembled install {tmp} to {final}")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _resolve_jars(version: str, lib: Path, progress: Progress) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError("Maven (mvn) is not on the PATH: it is needed to resolve Cassandra's jars")
    if not POM.exists():
        raise ClusterError(f"{POM} is missing: run ctl from a checkout of the project")
    lib.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
           f"-DoutputDirectory={lib}", f"-Dcassandra.version={version}", "-DincludeScope=runtime"]
    progress("running: " + " ".join(cmd[1:]))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-20:])
        raise ClusterError(f"Maven could not resolve org.apache.cassandra:cassandra-all:{version} "
                           f"(exit {proc.returncode}):\n{tail}")
    if not any(lib.glob(f"cassandra-all-{version}.jar")):
        raise ClusterError(f"Maven ran but {lib} holds no cassandra-all-{version}.jar")
    progress(f"resolved {len(list(lib.glob('*.jar')))} jars")


_DIST_JAR = re.compile(r"^(?:apache-cassandra|cassandra-all)-(\d+\.\d+\.\d+)\.jar$")


def distribution_version(path: Path) -> str | None:
    """The version of an install dir: 0.version.txt, else the name of its Cassandra jar in lib/."""
    vf = path / VERSION_FILE
    if vf.is_file():
        return vf.read_text().strip()
    for jar in sorted((path / "lib").glob("*.jar")):
        m = _DIST_JAR.match(jar.name)
        if m:
            return m.group(1)
    return None


def validate_distribution(path: Path, expected_version: str) -> Path:
    """Check that `path` looks like a Cassandra binary distribution of the expected major.minor version, and
    give it the 0.version.txt ccm reads. Raises ClusterError naming the path and what is missing."""
    path = Path(path).expanduser().resolve()
    if not path.is_dir():
        raise ClusterError(f"install dir {path} does not exist (ASYNC_TRIGGERS_INSTALL_DIR / install_dir)")
    missing = [p for p in ("bin/cassandra", "bin/nodetool", "conf/cassandra.yaml", "conf/cassandra-env.sh",
                           "conf/logback.xml", "lib") if not (path / p).exists()]
    version = distribution_version(path)
    if version is None:
        missing.append("lib/apache-cassandra-<version>.jar")
    if missing:
        raise ClusterError(f"{path} does not look like a Cassandra binary distribution: missing "
                           + ", ".join(missing))
    if version.split(".")[:2] != expected_version.split(".")[:2]:
        raise ClusterError(f"{path} holds Cassandra {version}, expected {expected_version} "
                           f"(same major.minor: the plugin is built against it)")
    vf = path / VERSION_FILE
    if not vf.exists():
        try:
            vf.write_text(version + "\n")
        except OSError as e:
            raise ClusterError(f"ccm needs {vf} (containing '{version}') and it cannot be written: {e}")
    return path
