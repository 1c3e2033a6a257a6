"""A schema read from a CQL file (CREATE KEYSPACE/TABLE statements), to render flows without a cluster.

Only what validation needs is parsed: keyspaces, tables, columns with their types, the primary key.
"""
from __future__ import annotations

import re
from pathlib import Path

from . import cql_script
from .errors import ConfigError
from .schema import Schema, TableSchema

_TABLE_RE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w\"]+)\.([\w\"]+)\s*\(",
                       re.IGNORECASE)
_KEYSPACE_RE = re.compile(r"CREATE\s+KEYSPACE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w\"]+)", re.IGNORECASE)


def _split_top(text: str) -> list[str]:
    """Split on commas outside <> and ()."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _balanced(text: str, open_at: int) -> str:
    """The text inside the parenthesis that opens at ``open_at``."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_at + 1:i]
    raise ConfigError(f"unbalanced parentheses in: {text[:80]}...")


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _table(statement: str, path: Path) -> TableSchema:
    m = _TABLE_RE.match(statement)
    if not m:
        raise ConfigError(f"{path}: cannot parse table definition: {statement[:80]}...")
    ks, name = _unquote(m.group(1)), _unquote(m.group(2))
    body = _balanced(statement, m.end() - 1)
    columns, pk_parts, static = {}, None, set()
    for item in _split_top(body):
        pk = re.match(r"PRIMARY\s+KEY\s*\((.*)\)$", item, re.IGNORECASE | re.DOTALL)
        if pk:
            pk_parts = _split_top(pk.group(1))
            continue
        words = item.split(None, 1)
        if len(words) != 2:
            raise ConfigError(f"{path}: cannot parse column definition '{item}' of table {ks}.{name}")
        col, ctype = _unquote(words[0]), words[1]
        inline_pk = re.search(r"\s+PRIMARY\s+KEY\s*$", ctype, re.IGNORECASE)
        if inline_pk:
            ctype = ctype[:inline_pk.start()]
            pk_parts = [col]
        is_static = re.search(r"\s+STATIC\s*$", ctype, re.IGNORECASE)
        if is_static:
            ctype = ctype[:is_static.start()]
            static.add(col)
        columns[col] = re.sub(r"\s+", "", ctype.strip().lower())
    if not pk_parts:
        raise ConfigError(f"{path}: table {ks}.{name} has no primary key")
    first = pk_parts[0]
    partition = [_unquote(c.strip()) for c in _split_top(first[1:-1])] if first.startswith("(") else [_unquote(first)]
    clustering = [_unquote(c.strip()) for c in pk_parts[1:]]
    return TableSchema(ks, name, tuple(partition), tuple(clustering), columns, frozenset(static))


def schema_file_of(flow_file: Path) -> Path:
    """The CQL schema of a flow file, for rendering without --live: ``<stem>.cql`` beside it, else ``schema.cql`` in
    its folder (an example's package: examples/twitter/flows.py and schema.cql)."""
    beside, folder = flow_file.with_suffix(".cql"), flow_file.parent / "schema.cql"
    return folder if not beside.is_file() and folder.is_file() else beside


def parse_cql_file(path: Path) -> Schema:
    if not path.is_file():
        raise ConfigError(f"no live schema asked for (--live) and no schema file {path} beside the flow file")
    tables, keyspaces = {}, set()
    for statement in cql_script.statements(path.read_text(), str(path)):
        if _KEYSPACE_RE.match(statement):
            keyspaces.add(_unquote(_KEYSPACE_RE.match(statement).group(1)))
        elif re.match(r"CREATE\s+TABLE", statement, re.IGNORECASE):
            t = _table(statement, path)
            tables[(t.keyspace, t.name)] = t
            keyspaces.add(t.keyspace)
    return Schema(tables=tables, keyspaces=frozenset(keyspaces))
