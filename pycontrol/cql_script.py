"""Running a CQL schema file (examples/*.cql) through the driver, waiting for schema agreement."""
from __future__ import annotations

import re
from pathlib import Path

from .errors import DeployError


def statements(path: Path) -> list[str]:
    text = re.sub(r"--[^\n]*", "", Path(path).read_text())
    return [s.strip() for s in text.split(";") if s.strip()]


def run_file(session, path: Path) -> int:
    stmts = statements(path)
    for st in stmts:
        try:
            session.execute(st)
        except Exception as e:
            raise DeployError(f"{path}: statement failed ({st.splitlines()[0]}): {e}") from e
    if not session.cluster.control_connection.wait_for_schema_agreement(wait_time=30):
        raise DeployError(f"{path}: the nodes did not agree on the schema within 30 s")
    return len(stmts)
