"""CQL scripts: split into statements the way cqlsh reads them, and run through the driver.

The splitter knows CQL's lexical rules that can hide a ``;`` or a ``?``: string literals (``'it''s'``,
``$$...$$``), quoted identifiers (``"a;b"``) and comments (``--`` and ``//`` to the end of the line, ``/* */``).
Comments are dropped; an unterminated string or comment is an error that names its line.
"""
from __future__ import annotations

from pathlib import Path

from .errors import ConfigError, DeployError

_QUOTES = {"'": "'", '"': '"', "$$": "$$"}


def statements(text: str, where: str = "CQL script") -> list[str]:
    """The statements of ``text``, without comments, blank lines or the closing ``;``."""
    out, current, i, n = [], [], 0, len(text)
    while i < n:
        two = text[i:i + 2]
        if two in ("--", "//"):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif two == "/*":
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConfigError(f"{where}: line {text.count(chr(10), 0, i) + 1}: a /* comment is never closed")
            i = end + 2
        elif two == "$$" or text[i] in "'\"":
            opener = "$$" if two == "$$" else text[i]
            end = _closing(text, i + len(opener), opener)
            if end < 0:
                raise ConfigError(f"{where}: line {text.count(chr(10), 0, i) + 1}: a {opener} quote is never closed")
            current.append(text[i:end])
            i = end
        elif text[i] == ";":
            out.append(_tidy("".join(current)))
            current, i = [], i + 1
        else:
            current.append(text[i])
            i += 1
    out.append(_tidy("".join(current)))
    return [s for s in out if s]


def bind_markers(statement: str) -> int:
    """The ``?`` markers of one statement (comments already gone): those outside strings and quoted names."""
    count, i, n = 0, 0, len(statement)
    while i < n:
        two = statement[i:i + 2]
        if two == "$$" or statement[i] in "'\"":
            opener = "$$" if two == "$$" else statement[i]
            end = _closing(statement, i + len(opener), opener)
            i = n if end < 0 else end
        else:
            count += statement[i] == "?"
            i += 1
    return count


def _closing(text: str, start: int, opener: str) -> int:
    """The index just after the quote that closes one opened before ``start`` (a doubled quote is an escape)."""
    close = _QUOTES[opener]
    i = start
    while True:
        end = text.find(close, i)
        if end < 0:
            return -1
        if close != "$$" and text.startswith(close * 2, end):
            i = end + 2
            continue
        return end + len(close)


def _tidy(statement: str) -> str:
    return "\n".join(line.rstrip() for line in statement.splitlines() if line.strip()).strip()


def run_text(session, text: str, where: str = "CQL script") -> int:
    """Run every statement of a script, then wait until the nodes agree on the schema."""
    stmts = statements(text, where)
    for st in stmts:
        try:
            session.execute(st)
        except Exception as e:
            raise DeployError(f"{where}: statement failed ({st.splitlines()[0]}): {e}") from e
    if not session.cluster.control_connection.wait_for_schema_agreement(wait_time=30):
        raise DeployError(f"{where}: the nodes did not agree on the schema within 30 s")
    return len(stmts)


def run_file(session, path: Path) -> int:
    return run_text(session, Path(path).read_text(), where=str(path))
