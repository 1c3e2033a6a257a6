"""The extended suite's table (tests/extended.py) names tests that exist, each with the default test that keeps its
guarantee in `make test`."""
from __future__ import annotations

import ast
from pathlib import Path

from extended import EXTENDED

CLUSTER_TESTS = Path(__file__).resolve().parent.parent / "cluster"


def _tests_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_should_name_only_cluster_tests_that_exist():
    unknown = []
    for entry in EXTENDED:
        file_name, _, test_name = entry.partition("::")
        path = CLUSTER_TESTS / file_name
        if not path.is_file() or (test_name != "*" and test_name not in _tests_of(path)):
            unknown.append(entry)
    assert not unknown, f"tests/extended.py names tests that do not exist: {unknown}"


def test_should_say_which_default_test_keeps_each_guarantee():
    assert all(reason.strip() for reason in EXTENDED.values())


def test_should_leave_every_cluster_module_a_test_in_the_default_suite_unless_it_moved_whole():
    for path in sorted(CLUSTER_TESTS.glob("test_*.py")):
        if f"{path.name}::*" in EXTENDED:
            continue
        left = {t for t in _tests_of(path) if f"{path.name}::{t}" not in EXTENDED}
        assert left, f"{path.name}: every test moved to the extended suite one by one (move the module whole, or keep one)"


def test_should_name_every_test_module_once():
    """pytest imports test modules by basename (no packages under tests/): two with one name stop the collection."""
    from collections import Counter
    from pathlib import Path
    names = Counter(p.name for p in Path(__file__).resolve().parents[1].rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
