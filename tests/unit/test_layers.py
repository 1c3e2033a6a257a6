"""The house's layers, checked on every module of the installed package (pyproject's package-dir: each top-level
folder holds one part of async_triggers at the path its name gives, pycontrol/async_triggers/,
cluster/async_triggers/cluster/ and so on), from the top down:

    4  cli (and the package's __main__)          the commands: parse, call, print, exit
    3  chaos, fuzz, benchmarks, examples         campaigns and applications built on the layers below
    2  spark_jobs, cluster                       Spark jobs; local clusters
    1  the core (async_triggers.*: flows, deploy, status, dlq, errors, connection, ...)

A module imports its own layer or lower ones, never a higher one: a Spark job that needed an exit code imported the
CLI (and with it Typer and every command) inside each executor; the codes now live with the errors. Read from the
source with ``ast`` (imports inside functions too), so a planted upward import fails this test."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"async_triggers": ROOT / "pycontrol" / "async_triggers",
            "async_triggers.cluster": ROOT / "cluster" / "async_triggers" / "cluster",
            "async_triggers.spark_jobs": ROOT / "spark-jobs" / "async_triggers" / "spark_jobs",
            "async_triggers.benchmarks": ROOT / "benchmarks" / "async_triggers" / "benchmarks",
            "async_triggers.examples": ROOT / "examples"}
LAYERS = {"__main__": 4, "cli": 4, "chaos": 3, "fuzz": 3, "benchmarks": 3, "examples": 3, "spark_jobs": 2,
          "cluster": 2}
NAMES = {4: "cli", 3: "campaigns and applications", 2: "Spark jobs and clusters", 1: "core"}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], 1) if len(parts) > 1 else 1


def modules(packages: dict[str, Path]) -> dict[str, Path]:
    """Module name -> file, for every .py under each package's folder (a nested package's folder counted once)."""
    out = {}
    for package, folder in packages.items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            name = ".".join([package, *parts])
            out.setdefault(name, path)
    return out


def imported(name: str, path: Path) -> list[tuple[str, int]]:
    """(module or name imported, line) for every import of the file, relative ones resolved."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            out += [(base, node.lineno)] + [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return out


def upward_imports(packages: dict[str, Path]) -> list[str]:
    found = []
    for name, path in sorted(modules(packages).items()):
        for target, line in imported(name, path):
            if target.startswith("async_triggers.") and layer(target) > layer(name):
                found.append(f"{path}:{line}: {name} ({NAMES[layer(name)]}) imports {target} ({NAMES[layer(target)]})")
    return sorted(set(found))


def test_should_import_no_layer_above_a_module_own_layer():
    assert upward_imports(PACKAGES) == []


def test_should_place_every_module_in_a_known_layer_and_read_them_all():
    found = modules(PACKAGES)
    assert len(found) > 100
    assert {"async_triggers.cli.trigger", "async_triggers.spark_jobs.verify", "async_triggers.cluster.network",
            "async_triggers.chaos.nemesis", "async_triggers.errors"} <= set(found)
    assert layer("async_triggers.spark_jobs.verify") == 2 and layer("async_triggers.errors") == 1


def test_should_keep_every_module_at_the_path_its_name_gives():
    """An import names the file it reads (``async_triggers.cluster.network`` is ``.../async_triggers/cluster/
    network.py`` in whichever folder), so a reader or a tool finds it without pyproject's mapping; the examples keep
    the paths their readers open."""
    misplaced = []
    for name, path in modules(PACKAGES).items():
        if name.startswith("async_triggers.examples"):
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if ".".join(parts[-len(name.split(".")):]) != name:
            misplaced.append(f"{name}: {path.relative_to(ROOT)}")
    assert misplaced == []


def test_should_find_a_planted_upward_import(tmp_path):
    core, jobs = tmp_path / "pycontrol", tmp_path / "spark_jobs"
    for folder in (core, core / "cli", jobs):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    (core / "errors.py").write_text("X = 1\n")
    (core / "cli" / "exit_codes.py").write_text("from ..errors import X\n")          # downward: fine
    (jobs / "verify.py").write_text("def main():\n    from async_triggers.cli.exit_codes import X\n")
    (core / "status.py").write_text("from .cli import exit_codes\n")                   # relative, upward
    found = upward_imports({"async_triggers": core, "async_triggers.spark_jobs": jobs})
    assert [f.split(": ", 1)[1] for f in found if "verify" in f] == [
        "async_triggers.spark_jobs.verify (Spark jobs and clusters) imports async_triggers.cli.exit_codes (cli)",
        "async_triggers.spark_jobs.verify (Spark jobs and clusters) imports async_triggers.cli.exit_codes.X (cli)"]
    assert any("async_triggers.status (core) imports async_triggers.cli.exit_codes (cli)" in f for f in found)
    assert not any("exit_codes (cli) imports" in f for f in found)


def test_should_print_nothing_from_library_code():
    """The core and the clusters say things through logging, callbacks or return values; printing is for command
    lines (the CLI, a Spark job's or a benchmark's main)."""
    printing = []
    for name, path in sorted(modules(PACKAGES).items()):
        if layer(name) != 1 and not name.startswith("async_triggers.cluster"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                printing.append(f"{path}:{node.lineno}")
    assert printing == []


def module_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` imports (inside functions too): ``from pkg import mod`` counts mod,
    not pkg; ``from mod import f`` counts mod."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    out.add(f"{base}.{alias.name}")
                elif base in known:
                    out.add(base)
    return out - {name}


def import_cycles(packages: dict[str, Path]) -> list[list[str]]:
    """Every set of modules that import each other round a circle (strongly connected components of more than one
    module), each sorted."""
    found = modules(packages)
    graph = {name: module_imports(name, path, set(found)) for name, path in found.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:      # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def test_should_find_no_import_cycle():
    """A module can be read, tested and moved with what it imports below it: no two modules need each other."""
    assert import_cycles(PACKAGES) == []


def test_should_find_a_planted_import_cycle(tmp_path):
    core = tmp_path / "pycontrol"
    core.mkdir()
    (core / "__init__.py").write_text("")
    (core / "flows.py").write_text("def load():\n    from .flow_types import check\n")
    (core / "flow_types.py").write_text("from .flows import load\n")
    (core / "errors.py").write_text("from . import flows\n")     # one way only: no cycle
    assert import_cycles({"async_triggers": core}) == [["async_triggers.flow_types", "async_triggers.flows"]]


def depths(packages: dict[str, Path]) -> dict[str, int]:
    """Each module's height: 0 for one that imports none of ours, else one more than the highest it imports (the
    graph has no cycle, test above)."""
    found = modules(packages)
    graph = {name: module_imports(name, path, set(found)) for name, path in found.items()}
    memo: dict[str, int] = {}

    def height(v: str) -> int:
        if v not in memo:
            memo[v] = 1 + max((height(w) for w in graph[v]), default=-1)
        return memo[v]

    return {v: height(v) for v in sorted(graph)}


if __name__ == "__main__":   # the tree as this test sees it: per layer, the modules by height
    heights = depths(PACKAGES)
    for number in sorted(NAMES, reverse=True):
        print(f"layer {number}: {NAMES[number]}")
        mods = [m for m in heights if layer(m) == number]
        for h in sorted({heights[m] for m in mods}, reverse=True):
            names = sorted(m.removeprefix("async_triggers.") or "async_triggers" for m in mods if heights[m] == h)
            print(f"  {h:>2}  {', '.join(names)}")
