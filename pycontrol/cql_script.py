"""Running CQL schema scripts (examples/*/schema.cql) through the driver, waiting for schema agreement."""
from __future__ import annotations

import re
from pathlib import Path

from .errors import DeployError


def statements(text: str) -> list[str]:
    text = re.sub(r"--[^\n]*", "", text)
    return [s.strip() for s in text.split(";") if s.strip()]


def run_text(session, text: str, where: str = "CQL script") -> int:
    """Run every statement of a script, then wait until the nodes agree on the schema."""
    stmts = statements(text)
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
