"""Errors of the Spark jobs. They derive from the control plane's tree so ``ctl`` reports them like its own."""
from async_triggers.errors import AsyncTriggersError, BackfillError, DeriveError, VerifyError

__all__ = ["BackfillError", "DeriveError", "LoadError", "LoadGenError", "SparkSetupError", "VerifyError"]


class SparkSetupError(AsyncTriggersError):
    """The connector jars could not be resolved or the Spark session could not start."""


class LoadError(AsyncTriggersError):
    """Generated data could not be written to Cassandra (no such keyspace or table, cluster unreachable)."""


class LoadGenError(AsyncTriggersError):
    """The load generator was given a bad option, or its senders could not be made or failed outside a request."""
