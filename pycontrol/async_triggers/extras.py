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


def require(extra: str) -> None:
    """MissingExtra naming the extra unless each module it installs imports: a command checks it before it
    connects or starts anything (``ctl verify`` without pyspark fails at once, not after it found the flows)."""
    import importlib

    from .errors import MissingExtra
    for module, of in PROVIDED_BY.items():
        if of != extra:
            continue
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            raise MissingExtra(missing(e) or str(e)) from None
