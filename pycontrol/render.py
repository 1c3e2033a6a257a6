"""Rendering of the plugin's configuration (flow specifications, JSON) and of the CQL that deploys it.

One Jinja2 environment, built here. The same template gives the script a person reads (values as CQL
literals) and the statements ``deploy`` runs (values bound as ``?`` markers, never formatted into CQL).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Sequence

import jinja2
from cassandra.encoder import Encoder

from .errors import ConfigError

KEYSPACE = "async_triggers"
TRIGGER_NAME = "async_triggers"
TRIGGER_CLASS = "org.asynctriggers.AsyncTrigger"

_encoder = Encoder()


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("pycontrol", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def ident(name: str) -> str:
    """A quoted CQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
    """A CQL literal (for the human-readable script and for the class name of CREATE TRIGGER)."""
    return _encoder.cql_encode_all_types(value)


def spec_json(spec: dict) -> str:
    """The flow specification as the plugin reads it (stable key order, so re-deploys compare equal)."""
    return json.dumps(spec, indent=2, sort_keys=True)


@dataclasses.dataclass(frozen=True)
class Statement:
    cql: str
    values: tuple


def _render(template: str, bound: bool, **context) -> tuple[str, list]:
    values: list = []

    def bind(value: Any) -> str:
        if bound:
            values.append(value)
            return "?"
        return literal(value)

    try:
        text = environment().get_template(template).render(ident=ident, literal=literal, bind=bind, **context)
    except jinja2.UndefinedError as e:
        raise ConfigError(f"template {template}: {e.message}") from e
    return text, values


def _deploy_context(specs: Sequence[dict], replication_factor: int, version: int) -> dict:
    flows = [{"spec": s, "json": spec_json(s),
              "targets": sorted({f"{t['keyspace']}.{t['table']}" for t in s["targets"]}) or ["handler " + str(s["handler"])]}
             for s in specs]
    return dict(keyspace=KEYSPACE, replication_factor=replication_factor, version=version, flows=flows,
                trigger_name=TRIGGER_NAME, trigger_class=TRIGGER_CLASS)


def deploy_script(specs: Sequence[dict], replication_factor: int, version: int) -> str:
    """The deploy CQL as a script a person can read or feed to cqlsh."""
    text, _ = _render("cql/deploy.cql.jinja", bound=False, **_deploy_context(specs, replication_factor, version))
    return text


def deploy_statements(specs: Sequence[dict], replication_factor: int, version: int) -> list[Statement]:
    """The deploy CQL as statements with bound values, in order."""
    text, values = _render("cql/deploy.cql.jinja", bound=True, **_deploy_context(specs, replication_factor, version))
    return split_statements(text, values)


def split_statements(text: str, values: list) -> list[Statement]:
    """Split a rendered script into statements and give each its bound values (counted by ``?`` markers:
    identifiers are quoted names without ``?`` and every value is bound, so a ``?`` is always a marker)."""
    out = []
    chunks = [c for c in text.split(";\n")]
    pos = 0
    for chunk in chunks:
        lines = [ln for ln in chunk.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        if not lines:
            continue
        cql = "\n".join(lines).strip().rstrip(";")
        n = cql.count("?")
        out.append(Statement(cql, tuple(values[pos:pos + n])))
        pos += n
    if pos != len(values):
        raise ConfigError(f"rendered CQL has {pos} bind markers for {len(values)} values")
    return out
