"""The cluster templates (pycontrol/templates/cluster/), rendered with the project's one Jinja2 environment
(pycontrol.render.environment: StrictUndefined, keep_trailing_newline, trim/lstrip blocks, no autoescape).

Template names mirror the install dir: `cluster/conf/cassandra.yaml.jinja` renders to `conf/cassandra.yaml`.
Names starting with `_` are partials (included by others), never rendered on their own.
"""
from __future__ import annotations

from pathlib import Path

import jinja2

from ..render import environment

TEMPLATE_ROOT = Path(__file__).resolve().parent.parent / "templates"
PREFIX = "cluster/"
SUFFIX = ".jinja"

__all__ = ["environment", "template_names", "output_name", "render", "TEMPLATE_ROOT"]


def template_names(env: jinja2.Environment | None = None) -> list[str]:
    """The cluster templates that render to a file (partials left out), e.g. `cluster/bin/cassandra.jinja`."""
    env = env or environment()
    return sorted(n for n in env.list_templates(extensions=["jinja"])
                  if n.startswith(PREFIX) and not Path(n).name.startswith("_"))


def output_name(template_name: str) -> str:
    """`cluster/conf/cassandra.yaml.jinja` -> `conf/cassandra.yaml` (the path inside the install dir)."""
    name = template_name[len(PREFIX):] if template_name.startswith(PREFIX) else template_name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name


def render(name: str, context: dict, env: jinja2.Environment | None = None) -> str:
    """Render one template; `name` with or without the `cluster/` prefix."""
    if not name.startswith(PREFIX):
        name = PREFIX + name
    return (env or environment()).get_template(name).render(**context)
