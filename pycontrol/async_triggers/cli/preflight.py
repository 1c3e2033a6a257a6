"""What a Spark command (`ctl verify`, `ctl trigger backfill`) checks before it starts Spark, which takes 20-30 s: the
cluster answers and the flows it names are deployed, so a wrong host or flow name fails in about a second with its
own message (a host DNS does not know, a refused connection, an unknown flow with the deployed ones listed)."""
from __future__ import annotations

from typing import Sequence


def deployed(conn, names: Sequence[str], acting: str | None = None) -> dict[str, dict]:
    """The deployed flows, read through the driver; ConnectionFailed or UnknownFlowError before any Spark. A
    command that changes the cluster names itself in ``acting``: the cluster it acts on is said on stderr."""
    from async_triggers import deploy
    from async_triggers.cql import connect
    from .options import acting_on
    with (acting_on(conn, acting) if acting else connect(conn)) as session:
        return deploy.require_deployed(session, names)
