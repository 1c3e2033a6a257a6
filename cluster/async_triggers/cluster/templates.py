"""The cluster templates (cluster/async_triggers/cluster/templates/), rendered with the project's one Jinja2 environment
(async_triggers.render.environment: StrictUndefined, keep_trailing_newline, trim/lstrip blocks, no autoescape).

Template names mirror the install dir: `conf/cassandra.yaml.jinja` renders to `conf/cassandra.yaml`.
Names starting with `_` are partials (included by others), never rendered on their own.
"""
from __future__ import annotations

from pathlib import Path

import jinja2

from async_triggers import render as jinja

TEMPLATE_ROOT = Path(__file__).resolve().parent / "templates"
SUFFIX = ".jinja"

__all__ = ["environment", "template_names", "output_name", "render", "TEMPLATE_ROOT"]


def environment() -> jinja2.Environment:
    return jinja.environment(jinja2.PackageLoader("async_triggers.cluster", "templates"))


def template_names(env: jinja2.Environment | None = None) -> list[str]:
    """The cluster templates that render to a file (partials left out), e.g. `bin/cassandra.jinja`."""
    env = env or environment()
    return sorted(n for n in env.list_templates(extensions=["jinja"]) if not Path(n).name.startswith("_"))


def output_name(template_name: str) -> str:
    """`conf/cassandra.yaml.jinja` -> `conf/cassandra.yaml` (the path inside the install dir)."""
    return template_name[: -len(SUFFIX)] if template_name.endswith(SUFFIX) else template_name


def render(name: str, context: dict, env: jinja2.Environment | None = None) -> str:
    """Render one template, e.g. `conf/cassandra.yaml.jinja`."""
    return (env or environment()).get_template(name).render(**context)
