"""Where a node's CPU goes during a benchmark: a JDK Flight Recorder recording on every node (``jcmd``), sampled
every millisecond, and a breakdown of its execution samples that says what share of the write path is the plugin's.

    with Recording(pids, out_dir) as rec:
        ...                                   # the measured writes
    print(breakdown(rec.files).text())

A sample is the plugin's *capture* when a frame of its write-path hooks is on its stack (the capture index and its
indexer, ``capture``, the trigger): what a client's write pays for. A sample with another frame of ours is its
*background work* (the flows' workers and their derived writes, scans, the control loop). A sample is on the *write
path* when its stack holds a frame of Cassandra's handling of a write (the coordinator's statement,
``ModificationStatement.execute``, its ``StorageProxy.mutate``, or a replica's ``Keyspace.apply``) and it is not
background work. The capture is named by its outermost frame (the hook Cassandra called) and its innermost frame of
ours (where the time is spent). A sample of the capture off the write path is its *capture after the write*: the
node's capture stage, which makes the tasks, writes their backup entries and hands them on once the write is done.
JFR samples threads running Java code; time blocked (locks, I/O, the network) is not in it.
"""
from __future__ import annotations

import collections
import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

WRITE_PATH = ("org.apache.cassandra.cql3.statements.ModificationStatement.execute",
              "org.apache.cassandra.service.StorageProxy.mutate",
              "org.apache.cassandra.db.Keyspace.apply")
PLUGIN = "org.asynctriggers."
CAPTURE = ("org.asynctriggers.CaptureIndex", "org.asynctriggers.capture.", "org.asynctriggers.AsyncTrigger")
SAMPLE_PERIOD = "1 ms"
_FRAME = re.compile(r"^\s+([\w$.<>]+)\(")


def _settings_file(out_dir: Path) -> Path:
    """The JDK's "profile" settings with execution samples every millisecond (its default is 10 ms)."""
    java_home = Path(subprocess.run(["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True)
                     .stderr.split("java.home = ", 1)[1].split("\n", 1)[0].strip())
    text = (java_home / "lib" / "jfr" / "profile.jfc").read_text()
    text = re.sub(r'(<event name="jdk.ExecutionSample">.*?<setting name="period"[^>]*>)[^<]*', rf"\g<1>{SAMPLE_PERIOD}",
                  text, flags=re.DOTALL)
    path = out_dir / "sample-every-ms.jfc"
    path.write_text(text)
    return path


class Recording:
    """A recording on each of ``pids`` (Cassandra nodes) from ``__enter__`` to ``__exit__``, dumped into ``out_dir``."""

    def __init__(self, pids: Sequence[int], out_dir: Path, name: str = "async-triggers"):
        self.pids, self.out_dir, self.name = list(pids), out_dir, name
        self.files: list[Path] = []

    def _jcmd(self, pid: int, *args: str) -> None:
        done = subprocess.run(["jcmd", str(pid), *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0 or "Could not" in done.stdout:
            raise RuntimeError(f"jcmd {pid} {' '.join(args)}: {done.stdout.strip() or done.stderr.strip()}")

    def __enter__(self) -> "Recording":
        self.out_dir.mkdir(parents=True, exist_ok=True)
        settings = _settings_file(self.out_dir)
        for pid in self.pids:
            self._jcmd(pid, "JFR.start", f"name={self.name}", f"settings={settings}")
        return self

    def __exit__(self, *exc) -> None:
        for pid in self.pids:
            path = self.out_dir / f"node-{pid}.jfr"
            self._jcmd(pid, "JFR.stop", f"name={self.name}", f"filename={path}")
            self.files.append(path)


def stacks(jfr_file: Path, depth: int = 96) -> Iterable[list[str]]:
    """Each execution sample's frames (method names, innermost first)."""
    proc = subprocess.Popen(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", str(depth),
                             str(jfr_file)], stdout=subprocess.PIPE, text=True)
    frames: list[str] | None = None
    for line in proc.stdout:
        if line.startswith("jdk.ExecutionSample"):
            frames = []
        elif frames is not None and line.strip() == "]":
            yield frames
            frames = None
        elif frames is not None:
            m = _FRAME.match(line)
            if m:
                frames.append(m.group(1))
    proc.wait()


@dataclasses.dataclass
class Breakdown:
    samples: int = 0
    write_path: int = 0
    plugin_in_write_path: int = 0
    plugin_background: int = 0
    capture_after_write: int = 0
    by_hook: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    by_leaf: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    background_by_leaf: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    after_write_by_leaf: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def add(self, frames: list[str]) -> None:
        self.samples += 1
        ours = [f for f in frames if f.startswith(PLUGIN)]
        capture = any(f.startswith(CAPTURE) for f in ours)
        if ours and not capture:
            self.plugin_background += 1
            self.background_by_leaf[ours[0]] += 1
        elif any(f.startswith(WRITE_PATH) for f in frames):
            self.write_path += 1
            if capture:
                self.plugin_in_write_path += 1
                self.by_hook[ours[-1]] += 1
                self.by_leaf[ours[0]] += 1
        elif capture:
            self.capture_after_write += 1
            self.after_write_by_leaf[ours[0]] += 1

    def share(self) -> float:
        return self.plugin_in_write_path / self.write_path if self.write_path else 0.0

    def text(self, top: int = 8) -> str:
        lines = [f"execution samples: {self.samples}; on the write path: {self.write_path}, of which the plugin's: "
                 f"{self.plugin_in_write_path} ({self.share():.1%}); the plugin's background work: "
                 f"{self.plugin_background}; its capture after the write (the capture stage): {self.capture_after_write}"]
        for title, counter in (("the plugin on the write path, by the hook Cassandra called", self.by_hook),
                               ("the plugin on the write path, by its innermost frame", self.by_leaf),
                               ("the plugin's capture after the write, by its innermost frame", self.after_write_by_leaf),
                               ("the plugin's background work, by its innermost frame", self.background_by_leaf)):
            if counter:
                lines.append(f"  {title}:")
                lines += [f"    {n:6d}  {frame}" for frame, n in counter.most_common(top)]
        return "\n".join(lines)

    def as_dict(self, top: int = 20) -> dict:
        return {"samples": self.samples, "write_path": self.write_path, "plugin_in_write_path": self.plugin_in_write_path,
                "plugin_share_of_write_path": self.share(), "plugin_background": self.plugin_background,
                "capture_after_write": self.capture_after_write,
                "after_write_by_leaf": dict(self.after_write_by_leaf.most_common(top)),
                "by_hook": dict(self.by_hook.most_common(top)), "by_leaf": dict(self.by_leaf.most_common(top)),
                "background_by_leaf": dict(self.background_by_leaf.most_common(top))}


def breakdown(files: Iterable[Path]) -> Breakdown:
    out = Breakdown()
    for path in files:
        for frames in stacks(path):
            out.add(frames)
    return out
