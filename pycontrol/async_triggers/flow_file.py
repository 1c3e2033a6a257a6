"""Loading a flow file: a Python script defining ``FLOWS``, run as Python runs a script (its folder first on the
path, the module known by its name while it runs), then checked for the shapes of its values (flow_types.py) and for
unique names. Every problem is a ConfigError naming the file."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from .errors import ConfigError
from .flow_types import FlowProblems, check
from .flows import Flow


def load_flow_file(path: str | Path) -> list[Flow]:
    """Import a flow file and return its ``FLOWS``; a missing file or a bad module is a ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"flow file not found: {path}")
    module_name = f"_async_triggers_flows_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"not a Python flow file: {path}")
    module = importlib.util.module_from_spec(spec)
    # as Python runs a script: its folder first on the path (a module beside it imports), and the module known by
    # its name while it runs (a dataclass defined in it looks itself up there)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    known = set(sys.modules)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e
    except Exception as e:  # the user's module: report where it broke
        raise ConfigError(f"{path}: could not load the flow file: {type(e).__name__}: {e}") from e
    finally:
        sys.modules.pop(module_name, None)
        if folder in sys.path:
            sys.path.remove(folder)
        for name in set(sys.modules) - known:   # its neighbours too: another flow file may have its own of that name
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(folder + os.sep):
                sys.modules.pop(name, None)
    flows = getattr(module, "FLOWS", None)
    if not isinstance(flows, (list, tuple)) or not flows or not all(isinstance(f, Flow) for f in flows):
        raise ConfigError(f"{path}: must define FLOWS, a non-empty list of async_triggers.flows.Flow")
    try:
        check(flows, options=False)
    except FlowProblems as e:
        raise ConfigError(f"{path}: {e}") from e
    names = [f.name for f in flows]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{path}: flow names must be unique, repeated: {', '.join(dupes)}")
    return list(flows)
