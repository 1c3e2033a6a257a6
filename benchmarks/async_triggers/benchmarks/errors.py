"""Errors of the benchmarks. They derive from the control plane's tree so ``ctl`` reports them like its own."""
from async_triggers.errors import AsyncTriggersError

__all__ = ["BenchError", "BrokerError", "DocsError", "ResultsError"]


class BenchError(AsyncTriggersError):
    """A benchmark could not run."""


class BrokerError(BenchError):
    """The private RabbitMQ node could not be installed, started, reached or stopped."""


class ResultsError(BenchError):
    """A results file is missing, unreadable or does not follow the results schema (benchmarks/README.md)."""


class DocsError(BenchError):
    """A document's generated block could not be rewritten: the file or its marker comments are missing."""
