"""The house rule for test names: every test says the behaviour it checks, as ``test_should_<behaviour>``. This reads
every tests/**/test_*.py with ``ast`` (nothing is imported) and names each test function or test method that breaks
it."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def _misnamed(path: Path) -> list[str]:
    """The module-level test functions and the test methods of its classes whose name does not start with
    test_should_, as 'path:line name'."""
    found = []

    def walk(body, prefix=""):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("test") and not node.name.startswith("test_should_"):
                    found.append(f"{path.relative_to(TESTS.parent)}:{node.lineno} {prefix}{node.name}")
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(ast.parse(path.read_text(), str(path)).body)
    return found


def test_should_name_every_test_function_and_method_test_should_behaviour():
    files = sorted(TESTS.rglob("test_*.py"))
    assert len(files) > 50 and Path(__file__) in files, "the check reads every test module"
    misnamed = [name for path in files for name in _misnamed(path)]
    assert misnamed == [], "tests not named test_should_<behaviour>:\n" + "\n".join(misnamed)
