"""The bundle an operator installs on an existing cluster: the plugin jar, the script that installs it on a node,
the install guide, and the monitoring files (trigger-plugin/dist/). One folder and its .tar.gz, named by version."""
from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tarfile
import zipfile
from pathlib import Path

import jinja2

from .config import REPO_ROOT
from .errors import ConfigError

DIST_SOURCES = REPO_ROOT / "trigger-plugin" / "dist"
JAR_NAME = "async-triggers-plugin.jar"


@dataclasses.dataclass(frozen=True)
class Bundle:
    version: str
    sha256: str
    folder: Path
    archive: Path
    files: list[str]


def jar_version(jar: Path) -> str:
    """The Implementation-Version of the jar's manifest (what the agent announces on a node)."""
    try:
        with zipfile.ZipFile(jar) as z:
            manifest = z.read("META-INF/MANIFEST.MF").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise ConfigError(f"{jar} is not a readable plugin jar: {e}") from e
    for line in manifest.splitlines():
        if line.startswith("Implementation-Version:"):
            return line.split(":", 1)[1].strip()
    raise ConfigError(f"{jar} has no Implementation-Version in its manifest: rebuild it with `make plugin`")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def build(jar: Path, out: Path, sources: Path = DIST_SOURCES, extra_jars: dict[str, Path] | None = None) -> Bundle:
    """Assemble out/async-triggers-<version>/ and out/async-triggers-<version>.tar.gz (replacing older ones of that
    version). extra_jars: more files for metrics/ by name (the Prometheus exporter agent, when resolved)."""
    if not jar.is_file():
        raise ConfigError(f"the plugin jar {jar} does not exist: build it with `make plugin`")
    version, digest = jar_version(jar), sha256(jar)
    name = f"async-triggers-{version}"
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copyfile(jar, folder / JAR_NAME)
    shutil.copy2(sources / "install-on-node.sh", folder / "install-on-node.sh")
    guide = jinja2.Template((sources / "INSTALL.md").read_text(), keep_trailing_newline=True)
    (folder / "INSTALL.md").write_text(guide.render(version=version, sha256=digest))
    (folder / "VERSION").write_text(f"{version}\nsha256 {digest}\n")
    metrics = sources / "metrics"
    if metrics.is_dir() or extra_jars:
        (folder / "metrics").mkdir()
        for f in sorted(metrics.glob("*")) if metrics.is_dir() else []:
            shutil.copyfile(f, folder / "metrics" / f.name)
        for target, path in (extra_jars or {}).items():
            shutil.copyfile(path, folder / "metrics" / target)
    archive = out / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=name)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return Bundle(version=version, sha256=digest, folder=folder, archive=archive, files=files)
