"""The optional parts of the install: `pip install async-triggers` gives `ctl` for an existing cluster; the extras
add Spark (`[spark]`: verify, backfill, the jobs), local clusters (`[cluster]`: ccm, cqlsh, node health) and the
benchmarks (`[bench]`). A command that needs a part not installed says which extra brings it, instead of a
traceback."""
from __future__ import annotations

# the top-level module each extra installs -> the extra
PROVIDED_BY = {"pyspark": "spark", "py4j": "spark",
               "ccmlib": "cluster", "cqlshlib": "cluster", "psutil": "cluster", "yaml": "cluster",
               "pika": "bench", "matplotlib": "bench"}


def missing(error: ModuleNotFoundError) -> str | None:
    """The message for a module an extra installs (None for any other missing module: a bug, kept as it is)."""
    module = (error.name or "").split(".")[0]
    extra = PROVIDED_BY.get(module)
    if extra is None:
        return None
    return (f"this command needs the '{extra}' extra ({module} is not installed): "
            f"pip install 'async-triggers[{extra}]'")
