"""The deployed flows' specifications, as the Spark jobs read them: through the connector, from
``async_triggers.flows``, each parsed into its typed form (``async_triggers.spec.FlowSpec``). Below every job that
needs one (verify, backfill, the fault campaign's check)."""
from __future__ import annotations

import json
import re
from typing import Sequence

from async_triggers.spec import FlowSpec, SpecError

from .errors import VerifyError


def load_specs(spark, flows: Sequence[str] | None, keyspace: str = "async_triggers") -> dict[str, FlowSpec]:
    """The deployed specifications of ``flows`` (all deployed flows for None, by name) from ``async_triggers.flows``,
    read through the connector and parsed; an UnknownFlowError naming every flow not deployed, a VerifyError naming
    the flow whose stored document is not valid JSON or not a specification."""
    from async_triggers.errors import UnknownFlowError

    from .errors import describe_error
    from .session import read_table
    try:
        rows = {r["name"]: r["spec"] for r in read_table(spark, keyspace, "flows", ["name", "spec"]).collect()}
    except Exception as e:
        if f"Couldn't find {keyspace}" not in describe_error(e):
            raise
        rows = {}     # nothing was ever deployed on this cluster
    wanted = sorted(rows) if flows is None else list(dict.fromkeys(flows))
    unknown = [f for f in wanted if f not in rows]
    if unknown:
        raise UnknownFlowError(unknown, rows)
    out = {}
    for name in wanted:
        try:
            doc = json.loads(rows[name])
        except (TypeError, ValueError) as e:
            raise VerifyError(f"flow '{name}': the stored specification is not valid JSON: {e}") from e
        try:
            out[name] = FlowSpec.parse(doc)
        except SpecError as e:   # it names the flow as its document does: named once here, as the row does
            detail = re.sub(r"^flow '.*?': ", "", str(e), count=1)
            raise VerifyError(f"flow '{name}': the stored specification is malformed: {detail}") from e
    return out


def load_spec(spark, flow: str, keyspace: str = "async_triggers") -> FlowSpec:
    """The deployed specification of ``flow``."""
    return load_specs(spark, [flow], keyspace)[flow]
