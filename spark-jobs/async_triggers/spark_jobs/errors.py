"""Errors of the Spark jobs. They derive from the control plane's tree so ``ctl`` reports them like its own."""
from async_triggers.errors import AsyncTriggersError, BackfillError, DeriveError, VerifyError

__all__ = ["BackfillError", "DeriveError", "LoadError", "LoadGenError", "SparkSetupError", "VerifyError"]


class SparkSetupError(AsyncTriggersError):
    """The connector jars could not be resolved or the Spark session could not start."""


class LoadError(AsyncTriggersError):
    """Generated data could not be written to Cassandra (no such keyspace or table, cluster unreachable)."""


class LoadGenError(AsyncTriggersError):
    """The load generator was given a bad option, or its senders could not be made or failed outside a request."""


def describe_error(e: BaseException, limit: int = 300) -> str:
    """A one-line account of a Spark/connector failure: Py4J's own message ("An error occurred while calling
    o63.load") says nothing, the Java exception and its root cause do."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            top, root = java.toString(), java
            while root.getCause() is not None and root.getCause() != root:
                root = root.getCause()
            cause = root.toString()
            text = top if root == java or (root.getMessage() or cause) in top else f"{top} (cause: {cause})"
        except Exception:
            text = str(e)
    else:
        text = getattr(e, "desc", None) or str(e)
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    line = lines[0] if lines else type(e).__name__
    return line if len(line) <= limit else line[:limit - 1] + "…"
